"""Chunk writers on every backend: pushed stream chunks are one event each, exactly as appended.

`SessionLog.chunk_writer(...)` takes one attempt's chunks without a wait where the backend can
(memory always, the group-commit backends while their transaction holds the session) and durable
backends store them as run rows. The reading side must not be able to tell: one
`assistant/chunk` event per chunk with its own contiguous seq and time, in any range, from this
instance or from another one, across commits, interleaved with ordinary appends; invalid chunks
are refused like `append` refuses them.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from session_helpers import Store, assert_contiguous

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import AssistantChunk, SessionLog, StepEnd, StepStart, TurnStart
from modelwire.session.log import ChunkWriter, StoredRun
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Finish,
    ReasoningDelta,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    UsageChunk,
)


def stream(n: int) -> list[StreamChunk]:
    """A stream of every chunk kind, `n` text deltas in the middle (some non-ASCII)."""
    texts = [f"t{i} café 中" if i % 7 == 3 else f"t{i} " for i in range(n)]
    return [
        BlockStart(0, "reasoning"),
        ReasoningDelta(0, "think"),
        BlockStart(1, "text"),
        *(TextDelta(1, t) for t in texts),
        BlockEnd(1, TextBlock("".join(texts))),
        BlockStart(2, "tool-call"),
        ToolCallDelta(2, "call_1", '{"a":', "get"),
        ToolCallDelta(2, None, "1}"),
        UsageChunk(TokenUsage(10, 20)),
        Finish(Stop()),
    ]


async def push_all(
    log: SessionLog, writer: ChunkWriter, chunks: Sequence[StreamChunk]
) -> list[int]:
    """Push every chunk (awaiting `append` where the writer cannot take it); their seqs."""
    seqs = []
    for c in chunks:
        seq = writer.push(c)
        if seq < 0:
            seq = (await writer.append(c)).seq
        seqs.append(seq)
    return seqs


def data(chunks: Sequence[StreamChunk], attempt: int = 1) -> list[AssistantChunk]:
    return [AssistantChunk(1, 1, attempt, c) for c in chunks]


async def test_pushed_chunks_read_back_one_event_per_chunk(store: Store) -> None:
    log = await store.open()
    await log.append("s", TurnStart(1))
    chunks = stream(300)
    seqs = await push_all(log, log.chunk_writer("s", 1, 1, 1), chunks)
    assert seqs == list(range(1, 1 + len(chunks)))
    events = await log.read("s")
    assert_contiguous(events)
    assert [e.type for e in events[1:]] == ["assistant/chunk"] * len(chunks)
    assert [e.data for e in events[1:]] == data(chunks)
    await log.flush()
    assert [e.data for e in await log.read("s", 1)] == data(chunks)


async def test_another_instance_reads_the_same_events_from_storage(durable_store: Store) -> None:
    ticks = iter(range(1_000, 100_000))
    log = await durable_store.open(commit_rows=16, clock=lambda: next(ticks))
    await log.append("s", TurnStart(1))
    chunks = stream(500)
    await push_all(log, log.chunk_writer("s", 1, 1, 1), chunks)
    mine = await log.read("s")
    await log.flush()
    other = await durable_store.open()
    theirs = await other.read("s")
    assert theirs == mine  # seqs, types, times and payloads
    assert len({e.time for e in theirs}) == len(theirs)  # every event kept its own time
    assert_contiguous(theirs)


async def test_any_range_of_a_run_reads_exactly_that_range(durable_store: Store) -> None:
    log = await durable_store.open(commit_interval_ms=60_000)
    await log.append("s", TurnStart(1))
    chunks = stream(200)
    await push_all(log, log.chunk_writer("s", 1, 1, 1), chunks)
    await log.flush()
    other = await durable_store.open()  # nothing cached: the rows are runs in storage
    rows = await other._load("s", 0, None)
    assert any(isinstance(r, StoredRun) for r in rows) and len(rows) < len(chunks)
    whole = await other.read("s")
    for lo, hi in ((0, 1), (5, 6), (3, 150), (100, None), (len(whole), None), (37, 37)):
        part = await other.read("s", lo, hi)
        assert part == whole[lo:hi], (lo, hi)
    latest = await other.latest("s", "assistant/chunk")
    assert latest == whole[-1]
    assert (await other.latest("s", "turn/start")) == whole[0]


async def test_pushes_interleaved_with_appends_keep_one_order(store: Store) -> None:
    log = await store.open()
    first, second = log.chunk_writer("s", 1, 1, 1), log.chunk_writer("s", 1, 1, 2)
    expected: list[object] = []
    for i in range(60):
        if i % 10 == 9:
            await log.append_many("s", [StepStart(1, i), StepEnd(1, i)])
            expected += [StepStart(1, i), StepEnd(1, i)]
        writer = first if i % 3 else second
        await push_all(log, writer, [TextDelta(0, f"c{i}")])
        expected.append(writer.data(TextDelta(0, f"c{i}")))
    events = await log.read("s")
    assert_contiguous(events)
    assert [e.data for e in events] == expected
    if store.durable:
        await log.flush()
        assert [e.data for e in await (await store.open()).read("s")] == expected


async def test_a_run_across_many_commits_stays_contiguous(durable_store: Store) -> None:
    log = await durable_store.open(commit_rows=3, commit_interval_ms=60_000)
    writers = [log.chunk_writer(s, 1, 1, 1) for s in ("a", "b")]
    for i in range(400):
        for w in writers:
            await push_all(log, w, [TextDelta(0, f"{w.session_id}{i}")])
    await log.flush()
    other = await durable_store.open()
    for w in writers:
        events = await other.read(w.session_id)
        assert_contiguous(events)
        assert [e.data.chunk.text for e in events] == [f"{w.session_id}{i}" for i in range(400)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "bad",
    [
        TextDelta(0, 5),  # type: ignore[arg-type]
        TextDelta("0", "x"),  # type: ignore[arg-type]
        TextDelta(True, "x"),  # type: ignore[arg-type]
        TextDelta(0, "lone \ud800 surrogate"),
        ToolCallDelta(0, 7, "{}"),  # type: ignore[arg-type]
        BlockEnd(0, "not a block"),  # type: ignore[arg-type]
    ],
    ids=["text-int", "index-str", "index-bool", "surrogate", "id-int", "block-str"],
)
async def test_a_chunk_that_would_not_decode_is_refused_and_nothing_is_stored(
    store: Store, bad: StreamChunk
) -> None:
    log = await store.open()
    await log.append("s", TurnStart(1))
    writer = log.chunk_writer("s", 1, 1, 1)
    await push_all(log, writer, [TextDelta(0, "ok")])  # the writer is on its fast path now
    with pytest.raises(HarnessError) as info:
        await push_all(log, writer, [bad])
    assert info.value.code == ErrorCode.INVALID_EVENT
    assert "'s'" in info.value.message and "assistant/chunk" in info.value.message
    assert [e.seq for e in await log.read("s")] == [0, 1]
    assert (await log.append("s", StepEnd(1, 1))).seq == 2


async def test_a_closed_log_refuses_pushes(store: Store) -> None:
    log = await store.open()
    await log.append("s", TurnStart(1))
    writer = log.chunk_writer("s", 1, 1, 1)
    await log.close()
    with pytest.raises(HarnessError) as info:
        writer.push(TextDelta(0, "late"))
    assert info.value.code == ErrorCode.LOG_UNAVAILABLE
    with pytest.raises(HarnessError):
        log.chunk_writer("s", 1, 1, 2)


async def test_a_durable_log_without_an_open_transaction_asks_the_caller_to_wait(
    durable_store: Store,
) -> None:
    log = await durable_store.open()
    await log.append("s", TurnStart(1), barrier=True)  # committed: no transaction is open
    writer = log.chunk_writer("s", 1, 1, 1)
    assert writer.push(TextDelta(0, "x")) == -1
    assert (await writer.append(TextDelta(0, "x"))).seq == 1
    assert writer.push(TextDelta(0, "y")) == 2  # the append opened one holding the session


async def test_the_memory_log_takes_every_push_at_once() -> None:
    from modelwire.session import MemoryLog

    log = MemoryLog(clock=lambda: 42)
    writer = log.chunk_writer("fresh", 2, 3, 4)
    assert [writer.push(c) for c in stream(3)] == list(range(len(stream(3))))
    events = await log.read("fresh")
    assert {e.time for e in events} == {42}
    assert events[0].data == AssistantChunk(2, 3, 4, BlockStart(0, "reasoning"))
    assert (await log.sessions())[0].events == len(events)
