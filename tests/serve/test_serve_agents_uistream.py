"""Issue 37: the UI message stream as a pure function of the log — a resume after any seq N
gives exactly the frames of the events after N (no gap, no duplicate), and the text the SDK
assembles does not depend on how the model chunked it (hypothesis)."""

from __future__ import annotations

import asyncio
import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire.events import (
    AssistantChunk,
    StepEnd,
    StepStart,
    TurnCompleted,
    TurnEnd,
    TurnStart,
)
from modelwire.serve.follow import Followers
from modelwire.serve.uistream import UiEncoder
from modelwire.session import MemoryLog
from modelwire.vocab import BlockEnd, BlockStart, Finish, Stop, TextBlock, TextDelta

SETTINGS = settings(max_examples=60, deadline=None)


async def _turn(log: MemoryLog, sid: str, pieces: list[str]) -> None:
    await log.append_many(sid, [TurnStart(turn=1), StepStart(turn=1, step=1)])
    chunks = [BlockStart(0, "text"), *(TextDelta(0, p) for p in pieces)]
    chunks += [BlockEnd(0, TextBlock("".join(pieces))), Finish(Stop())]
    await log.append_many(sid, [AssistantChunk(1, 1, 1, c) for c in chunks])
    await log.append_many(sid, [StepEnd(turn=1, step=1), TurnEnd(turn=1, reason=TurnCompleted())])


async def _frames(log: MemoryLog, sid: str, after: int | None) -> bytes:
    followers = Followers(log, poll_ms=1)
    tail = followers.tail(sid, "ui", 0, lambda: UiEncoder(sid))
    async with followers.follow(tail):
        out = b"".join([f async for f in tail.after(after)])
    await followers.close()
    return out


def _events(data: bytes) -> list[tuple[int | None, str]]:
    out: list[tuple[int | None, str]] = []
    for block in data.decode().split("\n\n"):
        if not block:
            continue
        seq: int | None = None
        text = ""
        for line in block.split("\n"):
            if line.startswith("id: "):
                seq = int(line[4:])
            elif line.startswith("data: "):
                text = line[6:]
        out.append((seq, text))
    return out


@SETTINGS
@given(
    pieces=st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=12),
    cut=st.integers(min_value=0, max_value=20),
)
def test_a_resume_after_any_seq_is_exactly_the_rest(pieces: list[str], cut: int) -> None:
    async def run() -> None:
        log = MemoryLog()
        await _turn(log, "p", pieces)
        whole = _events(await _frames(log, "p", None))
        rest = _events(await _frames(log, "p", cut))
        # `[DONE]` (no id of its own) is written with the `turn/end` event's frames
        owner = [s if s is not None else whole[i - 1][0] for i, (s, _) in enumerate(whole)]
        assert rest == [f for f, o in zip(whole, owner, strict=True) if (o or 0) > cut]
        assert whole[-1] == (None, "[DONE]")
        seqs = [s for s, _ in whole if s is not None]
        assert seqs == sorted(seqs)
        text = "".join(json.loads(d).get("delta", "") for _, d in whole if d != "[DONE]")
        assert text == "".join(pieces)

    asyncio.run(run())


@SETTINGS
@given(text=st.text(min_size=1, max_size=40), data=st.data())
def test_the_text_does_not_depend_on_the_chunking(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=10)))
    bounds = [0, *[c for c in cuts if c < len(text)], len(text)]
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds) if text[a:b]]

    async def run() -> str:
        log = MemoryLog()
        await _turn(log, "c", pieces)
        encoder = UiEncoder("c")
        events = await log.read("c")
        parts = [p for e in events for p in encoder.parts(e)]
        fast = UiEncoder("c")  # the encoded bytes (prebuilt delta frames) say the same
        sent = [d for _, d in _events(b"".join(fast.encode(e) for e in events))]
        assert [json.loads(d) for d in sent[:-1]] == parts
        assert [p["type"] for p in parts][:3] == ["start", "start-step", "text-start"]
        return "".join(str(p.get("delta", "")) for p in parts if p["type"] == "text-delta")

    assert asyncio.run(run()) == text
