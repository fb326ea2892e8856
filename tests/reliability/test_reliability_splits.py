"""The chunk sequence never depends on how TCP split the body (the one stream pump, `wire.pump`).

Every adapter (DeepSeek, and the providers adapter on each of its three protocols) is sent the
same bytes as one read and as many reads by a raw `asyncio.start_server` on 127.0.0.1, and must
yield the identical chunk sequence through `rt.stream()`: for a good answer, and for good events
followed by a malformed one, also when both arrive in one read (the good event's chunks must not
be dropped). The server sends the next piece only after the pump has fed the previous one to its
framer, so the reads the adapter sees are exactly the pieces (recorded and checked).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_counts import bump
from reliability_wire import ADAPTERS, good_events, make_runtime

import modelwire.wire.pump as pump_module
from modelwire.vocab import BlockStart, Error, Finish, StreamChunk, TextDelta
from modelwire.wire.sse import SseDecoder, SseEvent

HEAD: Final = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
BAD: Final = b"data: {not json\n\n"
GOOD_PREFIX: Final = {  # events up to and including the first text delta
    "deepseek": 2,
    "openai-completions": 2,
    "openai-responses": 3,
    "anthropic-messages": 3,
}


@dataclass
class SplitServer:
    """Writes a 200 SSE body in the given pieces, each only after the client fed the last one."""

    url: str = ""
    pieces: Sequence[bytes] = ()
    reads: list[bytes] = field(default_factory=list)  # what the pump's framer was fed
    fed: asyncio.Event = field(default_factory=asyncio.Event)
    handlers: set[asyncio.Task[object]] = field(default_factory=set)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            await reader.readexactly(length)
            writer.write(HEAD)
            hangup = asyncio.ensure_future(reader.read(1))  # b"" once the client hangs up
            for piece in self.pieces:
                self.fed.clear()
                writer.write(piece)
                await writer.drain()
                fed = asyncio.ensure_future(self.fed.wait())
                await asyncio.wait({fed, hangup}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
                fed.cancel()
                if hangup.done():
                    break
            hangup.cancel()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


class _RecordingDecoder(SseDecoder):
    """The pump's framer, noting each read it is fed, as bytes or as pieces (and telling the
    server)."""

    server: SplitServer
    inside = False  # within `feed_pieces`, whose read is already noted

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if not self.inside:
            self._note(chunk)
        return super().feed(chunk)

    def feed_pieces(self, pieces: list[bytes]) -> list[SseEvent]:
        self._note(b"".join(pieces))
        self.inside = True
        try:
            return super().feed_pieces(pieces)
        finally:
            self.inside = False

    def _note(self, read: bytes) -> None:
        self.server.reads.append(read)
        self.server.fed.set()


@contextlib.asynccontextmanager
async def split_server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SplitServer]:
    state = SplitServer()
    recording = type("Recording", (_RecordingDecoder,), {"server": state})
    monkeypatch.setattr(pump_module, "SseDecoder", recording)
    srv = await asyncio.start_server(state.serve, "127.0.0.1", 0)
    state.url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
    try:
        yield state
    finally:
        srv.close()
        await srv.wait_closed()
        if state.handlers:  # every connection ends by itself once its client hung up
            _, pending = await asyncio.wait(state.handlers, timeout=5)
            assert not pending, "a server connection outlived its client"


async def stream_pieces(
    server: SplitServer, kind: str, pieces: Sequence[bytes]
) -> list[StreamChunk]:
    """`rt.stream()` of adapter `kind` over a body sent in `pieces` (checks the reads seen)."""
    server.pieces = [p for p in pieces if p]
    server.reads = []
    target = make_runtime(kind, server.url, idle_ms=10_000)
    chunks: list[StreamChunk] = []
    async with asyncio.timeout(20):
        async for chunk in target.runtime.stream(target.options):
            chunks.append(chunk)
    assert server.reads == list(server.pieces[: len(server.reads)]), "reads are not the pieces"
    bump("split streams")
    return chunks


def cut(body: bytes, points: Sequence[int]) -> list[bytes]:
    """`body` cut at `points` (any integers; taken modulo the body length)."""
    edges = sorted({p % (len(body) + 1) for p in points} | {0, len(body)})
    return [body[a:b] for a, b in itertools.pairwise(edges)]


def good_then_bad(kind: str) -> tuple[list[bytes], bytes]:
    events = [*good_events(kind)[: GOOD_PREFIX[kind]], BAD]
    return events, b"".join(events)


def assert_good_kept(chunks: list[StreamChunk]) -> None:
    """The good events' chunks, then one malformed-response finish."""
    assert isinstance(chunks[0], BlockStart)
    assert isinstance(chunks[1], TextDelta) and chunks[1].text
    finish = chunks[-1]
    assert isinstance(finish, Finish) and isinstance(finish.reason, Error)
    assert finish.reason.failure.code == "MALFORMED_RESPONSE"
    assert [c for c in chunks if isinstance(c, Finish)] == [finish]


@pytest.mark.parametrize("kind", ADAPTERS)
async def test_good_then_malformed_in_one_read_keeps_the_good_chunks(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    events, body = good_then_bad(kind)
    async with split_server(monkeypatch) as server:
        one = await stream_pieces(server, kind, [body])
        assert server.reads == [body]
        per_event = await stream_pieces(server, kind, events)
        assert len(server.reads) == len(events)
        bad_apart = await stream_pieces(server, kind, [body[: -len(BAD)], BAD])
        assert len(server.reads) == 2
        bytewise = await stream_pieces(server, kind, cut(body, range(0, len(body), 3)))
    assert_good_kept(one)
    assert one == per_event == bad_apart == bytewise


@pytest.mark.parametrize("kind", ADAPTERS)
async def test_good_answer_is_the_same_in_one_read_and_many(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = good_events(kind)
    body = b"".join(events)
    async with split_server(monkeypatch) as server:
        one = await stream_pieces(server, kind, [body])
        per_event = await stream_pieces(server, kind, events)
        bytewise = await stream_pieces(server, kind, cut(body, range(0, len(body), 5)))
    finish = one[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "stop"
    assert one == per_event == bytewise


_REFERENCE: dict[tuple[str, bool], list[StreamChunk]] = {}


@pytest.mark.parametrize("kind", ADAPTERS)
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(points=st.lists(st.integers(0, 10_000), max_size=12), malformed=st.booleans())
async def test_any_split_gives_the_one_read_sequence(
    kind: str, monkeypatch: pytest.MonkeyPatch, points: list[int], malformed: bool
) -> None:
    if malformed:
        _, body = good_then_bad(kind)
    else:
        body = b"".join(good_events(kind))
    async with split_server(monkeypatch) as server:
        reference = _REFERENCE.get((kind, malformed))
        if reference is None:
            reference = _REFERENCE[(kind, malformed)] = await stream_pieces(server, kind, [body])
        assert await stream_pieces(server, kind, cut(body, points)) == reference
    if malformed:
        assert_good_kept(reference)
