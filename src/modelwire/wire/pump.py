"""The one stream pump every HTTP adapter uses: body reads → SSE events → `Translator` → chunks.

A read is framed into events (`SseDecoder`) and each event is fed to the protocol's translator;
the chunks a read produced are handed on *before* any failure raised while framing or
translating that read (a good event followed by a malformed one in the same read still delivers
the good event's chunks), so the chunk sequence never depends on how TCP split the body. Once
the translator is `done` (its protocol's end marker arrived) nothing more is read; at the end of
the body the framer is closed and `Translator.end` runs, appending the closing chunks or raising
the end-of-stream failure, again after the chunks it already produced. An event whose JSON nests
deeper than the decoder follows is `MALFORMED_RESPONSE`, never an unclassified `RecursionError`.

`pump_sse` returns the adapter's iterator, a `PumpStream` over one async generator of the
chunks read by read: it awaits `open_stream()` on the first `__anext__` (so every check an
adapter makes before I/O still raises from iteration, never from `stream()` itself), owns the
reads from then on and closes them, and the idle watchdog with them, however the stream ends.
The runtime's failure boundary pulls the per-read lists (`chunk_batches`), so a chunk costs no
generator step of its own on the way to the consumer. `translate_reads` is the same pump over
reads already in memory (no I/O).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from typing import NamedTuple, Protocol

from ..errors import ErrorCode, LlmError
from ..vocab import StreamChunk
from .sse import SseDecoder, SseEvent
from .watchdog import IdleWatchdog

__all__ = [
    "Framer",
    "PumpStream",
    "Read",
    "StreamSource",
    "Translator",
    "pump_sse",
    "translate_reads",
]


class Translator(Protocol):
    """A protocol's streaming translator: `feed` events until `done`, then `end` once.

    `done` turns True once the protocol's end marker arrived (``[DONE]``, ``message_stop``, a
    terminal ``response.*`` event, an in-band error that ends the stream): the response is
    complete and nothing after it is read. `end` is called exactly once, whether the body
    ended or `done` came first; it appends the closing chunks (block ends, usage, finish) still
    owed, or raises the protocol's end-of-stream failure.
    """

    @property
    def done(self) -> bool:
        """The response is complete: stop reading."""

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one event, appending its chunks to `out` (raises on a malformed event)."""

    def end(self, out: list[StreamChunk]) -> None:
        """The stream is over: append the closing chunks to `out`, or raise."""


class Framer(Protocol):
    """Turns body reads into events: `SseDecoder`, or a binary event-stream decoder that hands
    each message on as an `SseEvent`."""

    def feed(self, data: bytes) -> Iterable[SseEvent]:
        """The events completed by `data`."""

    def close(self) -> Iterable[SseEvent]:
        """The body ended: the events still pending (or raise on a truncated frame)."""


Read = bytes | list[bytes]
"""One read of a response body: its bytes, or its pieces in order (`stream_post_pieces`: one per
HTTP chunk), which an SSE body frames without joining them first."""


class StreamSource(NamedTuple):
    """What an adapter's opener hands the pump: the body reads, their translator, the idle
    watchdog guarding the reads (closed by the pump when the stream ends) and the body's framer
    (None = Server-Sent Events)."""

    reads: AsyncGenerator[Read, None]
    translator: Translator
    watchdog: IdleWatchdog | None = None
    framer: Framer | None = None


class PumpStream:
    """What `pump_sse` returns: an async iterator of the response's chunks, and
    `chunk_batches()`, the same chunks as one list per read (the runtime's failure boundary
    pulls those: one generator step per read instead of per chunk). Use one or the other."""

    __slots__ = ("_batches", "_chunks")

    def __init__(self, batches: AsyncGenerator[list[StreamChunk], None]) -> None:
        self._batches = batches
        self._chunks: AsyncGenerator[StreamChunk, None] | None = None

    def __aiter__(self) -> PumpStream:
        return self

    def __anext__(self) -> Awaitable[StreamChunk]:
        chunks = self._chunks
        if chunks is None:
            chunks = self._chunks = _each(self._batches)
        return chunks.__anext__()

    def chunk_batches(self) -> AsyncGenerator[list[StreamChunk], None]:
        """The chunks, one list per read (each list is the consumer's: the pump makes a new one)."""
        return self._batches

    async def aclose(self) -> None:
        """Stop: the reads (and the connection under them) and the idle watchdog are closed."""
        if self._chunks is not None:
            await self._chunks.aclose()
        await self._batches.aclose()


async def _each(
    batches: AsyncGenerator[list[StreamChunk], None],
) -> AsyncGenerator[StreamChunk, None]:
    try:
        async for batch in batches:
            for chunk in batch:
                yield chunk
    finally:
        await batches.aclose()


def pump_sse(
    open_stream: Callable[[], Awaitable[StreamSource]],
    *,
    map_error: Callable[[LlmError], LlmError] | None = None,
) -> PumpStream:
    """Stream the chunks of one response: `open_stream()` (checks, then the request's reads),
    then read by read through one `SseDecoder` and the source's translator.

    An `LlmError` raised once the reads began (transport, status, framing, translation, end of
    stream) passes through `map_error` when given (e.g. to reclassify an HTTP error by its
    text); a different error it returns is raised with the original as its cause.
    """
    return PumpStream(_batches(open_stream, map_error))


async def _batches(
    open_stream: Callable[[], Awaitable[StreamSource]],
    map_error: Callable[[LlmError], LlmError] | None,
) -> AsyncGenerator[list[StreamChunk], None]:
    reads, translator, watchdog, framer = await open_stream()
    decoder: Framer = SseDecoder() if framer is None else framer
    feed_pieces = decoder.feed_pieces if isinstance(decoder, SseDecoder) else None
    out: list[StreamChunk] = []
    failure: Exception | None = None
    try:
        async for data in reads:
            try:
                _translate(data, decoder, feed_pieces, translator, out)
            except RecursionError:
                failure = _too_deep()
            except Exception as exc:  # deliver this read's chunks first, then fail
                failure = exc
            del data  # this read is not held while the consumer works, nor during the next
            if out:
                yield out
                out = []
            if failure is not None:
                raise failure
            if translator.done:
                break  # complete: never wait on (or read) bytes after the end marker
        try:
            _finish(decoder, translator, out)
        except RecursionError:
            failure = _too_deep()
        except Exception as exc:
            failure = exc
        if out:
            yield out
        if failure is not None:
            raise failure
    except LlmError as exc:
        if map_error is None:
            raise
        mapped = map_error(exc)
        if mapped is exc:
            raise
        raise mapped from exc
    finally:
        if watchdog is not None:
            watchdog.close()
        await reads.aclose()


def _too_deep() -> LlmError:
    """The failure of an event whose JSON nests past what the decoder follows (the interpreter's
    recursion limit: msgspec recurses per level), instead of an unclassified RecursionError."""
    return LlmError(
        "a stream event nests JSON arrays and objects deeper than the decoder follows "
        f"(about {sys.getrecursionlimit()} levels)",
        ErrorCode.MALFORMED_RESPONSE,
    )


def _translate(
    data: Read,
    decoder: Framer,
    feed_pieces: Callable[[list[bytes]], list[SseEvent]] | None,
    translator: Translator,
    out: list[StreamChunk],
) -> None:
    """Frame one read and feed its events to `translator` (until it is done), chunks to `out`."""
    if not isinstance(data, list):
        events: Iterable[SseEvent] = decoder.feed(data)
    elif feed_pieces is not None:
        events = feed_pieces(data)
    else:
        events = decoder.feed(b"".join(data))
    feed = translator.feed
    for event in events:
        feed(event, out)
        if translator.done:
            break


def translate_reads(
    reads: Iterable[bytes],
    translator: Translator,
    out: list[StreamChunk],
    *,
    framer: Framer | None = None,
) -> None:
    """The pump over reads in memory: append every chunk to `out`; a failure is raised at once
    (`out` then holds every chunk produced before it, as `pump_sse` would have delivered).
    `framer` frames the body (None = Server-Sent Events)."""
    decoder: Framer = SseDecoder() if framer is None else framer
    feed = translator.feed
    try:
        for data in reads:
            for event in decoder.feed(data):
                feed(event, out)
                if translator.done:
                    break
            if translator.done:
                break
        _finish(decoder, translator, out)
    except RecursionError:
        raise _too_deep() from None


def _finish(decoder: Framer, translator: Translator, out: list[StreamChunk]) -> None:
    """The body ended or the translator is done: flush the framer (unless done), then `end`."""
    if not translator.done:
        for event in decoder.close():
            translator.feed(event, out)
            if translator.done:
                break
    translator.end(out)
