"""`SessionLog.read(..., chunks=False)`: the same events as a full read, minus every
`assistant/chunk` (stored one by one or as runs), on every backend."""

from __future__ import annotations

from session_helpers import Store

from modelwire.session import AssistantChunk, StepStart, TurnStart, UserMessage
from modelwire.vocab import BlockStart, Finish, Stop, TextDelta, user_message


async def test_read_without_chunks_is_the_full_read_minus_the_chunk_events(store: Store) -> None:
    log = await store.open()
    await log.append_many("s1", [TurnStart(1), StepStart(1, 1), UserMessage(user_message("hi"))])
    writer = log.chunk_writer("s1", 1, 1, 1)
    for chunk in (BlockStart(0, "text"), *(TextDelta(0, c) for c in "hello"), Finish(Stop())):
        if writer.push(chunk) == -1:
            await writer.append(chunk)
    await log.append("s1", AssistantChunk(1, 1, 2, TextDelta(0, "one by one")))
    await log.append("s1", UserMessage(user_message("after")))
    await log.flush()
    for reader in (log, await store.open()):  # this instance (its tail cache) and a fresh one
        full = await reader.read("s1")
        facts = await reader.read("s1", chunks=False)
        assert facts == [e for e in full if e.type != "assistant/chunk"]
        assert [e.type for e in facts] == [
            "turn/start",
            "step/start",
            "user/message",
            "user/message",
        ]
        assert await reader.read("s1", 2, chunks=False) == facts[2:]
