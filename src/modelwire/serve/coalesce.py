"""Writing a streamed reply with one socket write per upstream read, not one per event.

An adapter yields every chunk of one network read without suspending; the gateway encodes each
into its event bytes. `CoalescingWriter.add` only buffers them and arranges, with
`loop.call_soon`, that the buffer is written when the handler next waits (for the upstream's
next read): the callback runs only once the handler's task yields to the loop, so every event
of one read leaves in one write, and nothing waits longer than that read took to arrive. Writes
are chained in order; a client slower than the upstream makes `add` wait once `high_water`
bytes are buffered (back-pressure), and a failed write (the client went away) raises from the
next `add` or from `close`.
"""

from __future__ import annotations

import asyncio
from typing import Final

from aiohttp import web

__all__ = ["CoalescingWriter"]

_HIGH_WATER: Final = 64 * 1024


class CoalescingWriter:
    """Buffers a response's bytes and writes them when the handler waits (module docstring)."""

    __slots__ = ("_buffer", "_flushing", "_loop", "_response", "_scheduled", "_size")

    def __init__(self, response: web.StreamResponse) -> None:
        self._response = response
        self._loop = asyncio.get_running_loop()
        self._buffer: list[bytes] = []
        self._size = 0
        self._scheduled: asyncio.Handle | None = None
        self._flushing: asyncio.Task[None] | None = None

    async def add(self, data: bytes) -> None:
        """Buffer `data`; it is written when the handler next waits."""
        flushing = self._flushing
        if flushing is not None and flushing.done():
            self._flushing = None
            flushing.result()  # a failed write raises here
        self._buffer.append(data)
        self._size += len(data)
        if self._scheduled is None:
            self._scheduled = self._loop.call_soon(self._flush)
        if self._size > _HIGH_WATER and self._flushing is not None:
            await self._flushing  # back-pressure: the client reads slower than the upstream

    def _flush(self) -> None:
        self._scheduled = None
        if not self._buffer:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        self._size = 0
        previous = self._flushing
        self._flushing = asyncio.ensure_future(self._write(previous, data))

    async def _write(self, previous: asyncio.Task[None] | None, data: bytes) -> None:
        if previous is not None:
            await previous
        await self._response.write(data)

    async def close(self) -> None:
        """Write what is buffered and wait for every write (a failed one raises)."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        self._flush()
        flushing, self._flushing = self._flushing, None
        if flushing is not None:
            await flushing

    def abort(self) -> None:
        """Drop what is buffered and stop the writes (the reply is abandoned)."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        self._buffer.clear()
        flushing, self._flushing = self._flushing, None
        if flushing is not None:
            if flushing.done() and not flushing.cancelled():
                flushing.exception()  # retrieved: the reply is abandoned anyway
            flushing.cancel()
