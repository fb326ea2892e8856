"""The stream pump (`wire.pump`): reads → SSE events → `Translator` → chunks, the same for every
HTTP adapter (the adapters' own split tests run over a real server in tests/reliability)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncGenerator, Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire.errors import ErrorCode, LlmError
from modelwire.vocab import Finish, Stop, StreamChunk, TextDelta
from modelwire.wire.pump import StreamSource, Translator, pump_sse, translate_reads
from modelwire.wire.sse import SseEvent
from modelwire.wire.watchdog import IdleWatchdog


class Toy:
    """``t:<text>`` is a text delta, ``bad`` is malformed, ``end`` is the end marker."""

    def __init__(self) -> None:
        self.done = False
        self.ends = 0

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        assert not self.done, "fed after done"
        if event.data == "bad":
            raise LlmError("malformed toy event", ErrorCode.MALFORMED_RESPONSE)
        if event.data == "end":
            self.done = True
            return
        out.append(TextDelta(0, event.data.removeprefix("t:")))

    def end(self, out: list[StreamChunk]) -> None:
        self.ends += 1
        if not self.done:
            raise LlmError("toy stream ended early", ErrorCode.STREAM_CLOSED)
        out.append(Finish(Stop()))


class Watch(IdleWatchdog):
    closed = 0

    def close(self) -> None:
        self.closed += 1
        super().close()


class Reads:
    """An async generator of fixed reads that fails if read past `limit` reads."""

    def __init__(self, reads: Iterable[bytes], limit: int | None = None) -> None:
        self.reads = list(reads)
        self.limit = len(self.reads) if limit is None else limit
        self.taken = 0
        self.closed = False

    async def gen(self) -> AsyncGenerator[bytes, None]:
        try:
            for data in self.reads:
                assert self.taken < self.limit, "read past the end marker"
                self.taken += 1
                yield data
        finally:
            self.closed = True


async def run(
    reads: Reads, toy: Toy | None = None, watch: Watch | None = None, **kw: object
) -> tuple[list[StreamChunk], BaseException | None]:
    translator: Translator = toy or Toy()

    async def open_stream() -> StreamSource:
        return StreamSource(reads.gen(), translator, watch)

    out: list[StreamChunk] = []
    try:
        async for chunk in pump_sse(open_stream, **kw):  # type: ignore[arg-type]
            out.append(chunk)
    except LlmError as exc:
        return out, exc
    return out, None


def ev(*datas: str) -> bytes:
    return b"".join(f"data: {d}\n\n".encode() for d in datas)


async def test_chunks_of_a_read_come_before_its_failure() -> None:
    reads = Reads([ev("t:a", "bad", "t:never")])
    watch = Watch(60_000)
    chunks, exc = await run(reads, watch=watch)
    assert chunks == [TextDelta(0, "a")]
    assert isinstance(exc, LlmError) and exc.code == ErrorCode.MALFORMED_RESPONSE
    assert reads.closed and watch.closed == 1


async def test_split_does_not_change_the_sequence() -> None:
    body = ev("t:a", "t:b", "bad")
    whole = await run(Reads([body]))
    split = await run(Reads([body[:7], body[7:20], body[20:]]))
    assert whole[0] == split[0] == [TextDelta(0, "a"), TextDelta(0, "b")]
    assert str(whole[1]) == str(split[1])


async def test_nothing_is_read_after_done_and_end_runs_once() -> None:
    toy = Toy()
    reads = Reads([ev("t:a", "end", "bad"), ev("t:late")], limit=1)
    chunks, exc = await run(reads, toy)
    assert exc is None and chunks == [TextDelta(0, "a"), Finish(Stop())]
    assert toy.ends == 1 and reads.taken == 1 and reads.closed


async def test_end_of_body_failure_comes_after_the_flushed_chunks() -> None:
    toy = Toy()
    chunks, exc = await run(Reads([b"data: t:a\n\ndata: t:b\r\r"]), toy)  # a held CR ends at close
    assert chunks == [TextDelta(0, "a"), TextDelta(0, "b")]
    assert isinstance(exc, LlmError) and exc.code == ErrorCode.STREAM_CLOSED and toy.ends == 1


async def test_map_error_reclassifies_and_keeps_the_cause() -> None:
    def remap(exc: LlmError) -> LlmError:
        return LlmError("remapped", ErrorCode.SERVER, cause=exc)

    _, exc = await run(Reads([ev("bad")]), map_error=remap)
    assert isinstance(exc, LlmError) and exc.code == ErrorCode.SERVER
    assert isinstance(exc.__cause__, LlmError) and exc.__cause__.code == "MALFORMED_RESPONSE"
    _, same = await run(Reads([ev("bad")]), map_error=lambda e: e)
    assert isinstance(same, LlmError) and same.code == ErrorCode.MALFORMED_RESPONSE


async def test_opener_runs_on_first_iteration_only() -> None:
    opened: list[int] = []

    async def open_stream() -> StreamSource:
        opened.append(1)
        raise LlmError("no key", ErrorCode.MISSING_CREDENTIAL)

    stream = pump_sse(open_stream)
    assert opened == []
    with pytest.raises(LlmError) as info:
        await stream.__anext__()
    assert info.value.code == ErrorCode.MISSING_CREDENTIAL and opened == [1]


def test_translate_reads_keeps_what_came_before_a_failure() -> None:
    out: list[StreamChunk] = []
    with pytest.raises(LlmError):
        translate_reads([ev("t:a", "bad")], Toy(), out)
    assert out == [TextDelta(0, "a")]
    out = []
    translate_reads([ev("t:a"), ev("end"), ev("bad")], Toy(), out)
    assert out == [TextDelta(0, "a"), Finish(Stop())]


BODY = ev("t:x", "t:yy", "bad", "t:z") + ev("end")


@settings(max_examples=60, deadline=None)
@given(points=st.lists(st.integers(0, len(BODY)), max_size=10), bad=st.booleans())
async def test_any_split_matches_the_one_read_run(points: list[int], bad: bool) -> None:
    body = BODY if bad else BODY.replace(b"data: bad\n\n", b"")
    edges = sorted({0, len(body), *(p % (len(body) + 1) for p in points)})
    pieces = [body[a:b] for a, b in itertools.pairwise(edges)]
    one, one_exc = await run(Reads([body]))
    many, many_exc = await run(Reads(pieces))
    assert one == many and str(one_exc) == str(many_exc)
    memory: list[StreamChunk] = []
    with contextlib.suppress(LlmError):
        translate_reads(pieces, Toy(), memory)
    assert memory == one
