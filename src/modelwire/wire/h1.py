"""HTTP/1.1 on one connection: its receiving side and the request's bytes.

The connections of the library's transport (`wire.pool` pools them; `wire.transport` drives one
request over them). Written here rather than taken from aiohttp because the per-chunk cost of a
general client is the largest share of a streamed chunk: aiohttp spends ~1.7 µs of CPU per HTTP
chunk in Python callbacks (`feed_data`, `end_http_chunk_receiving`, `readany`, `resume_reading`)
on a loopback SSE stream, where this protocol hands the consumer every read as it arrived and the
chunked coding is undone once per read.

`Connection` is an `asyncio.Protocol` that only buffers: `take()` returns everything received
since the last call (b"" when nothing is buffered), `wait()` a future that resolves when more
arrives or the peer is gone. Reading pauses above `HIGH_WATER` buffered bytes until the consumer
takes them. `stale()` tells whether an idle connection may not be reused (the peer closed, sent
bytes nobody asked for, or its socket is readable: a FIN already in the kernel that the loop has
not delivered yet). `request_bytes` writes one request; the response parser is `wire.h1body`.

Failures are `WireError` (an `OSError`) carrying a library-neutral `reason`.
"""

from __future__ import annotations

import asyncio
import select
from typing import Final

from multidict import CIMultiDictProxy

__all__ = [
    "HIGH_WATER",
    "MAX_HEAD_BYTES",
    "Connection",
    "Head",
    "WireError",
    "request_bytes",
]

HIGH_WATER: Final = 1 << 18
"""Reading pauses while more than this many received bytes wait for the consumer (256 KiB)."""

MAX_HEAD_BYTES: Final = 1 << 16
"""A response head (status line and headers) longer than this is refused (64 KiB)."""


class WireError(ConnectionError):
    """A transport failure of this client; `reason` is the short text put in `LlmError`s."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Connection(asyncio.Protocol):
    """One TCP (or TLS) connection's receiving side: reads buffered until `take()`."""

    __slots__ = (
        "_loop",
        "_paused",
        "_reads",
        "_size",
        "_waiter",
        "closed",
        "expires",
        "keepalive",
        "key",
        "transport",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.key: object = None  # the pool's key of this connection
        self.keepalive = 0.0  # seconds it may stay idle in the pool
        self.expires = 0.0  # while idle: when it is closed (the pool's clock)
        self._reads: list[bytes] = []
        self._size = 0
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self.closed = False  # the peer closed (EOF) or the connection was lost
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._reads.append(data)
        self._size += len(data)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)
        if self._size > HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def take(self) -> bytes:
        """Every byte received since the last call, as one bytes object (b"" if none)."""
        reads = self._reads
        if not reads:
            return b""
        data = reads[0] if len(reads) == 1 else b"".join(reads)
        reads.clear()
        self._size = 0
        if self._paused:
            self._paused = False
            if self.transport is not None:
                self.transport.resume_reading()
        return data

    def wait(self) -> asyncio.Future[None]:
        """A future resolved when bytes arrive or the connection closes (already resolved if
        either happened)."""
        waiter = self._loop.create_future()
        if self._reads or self.closed:
            waiter.set_result(None)
        else:
            self._waiter = waiter
        return waiter

    def stale(self) -> bool:
        """True when this idle connection must not carry another request: the peer closed it,
        it holds unasked-for bytes, or its socket is readable (EOF or data not yet delivered)."""
        if self.closed or self._reads or self.transport is None or self.transport.is_closing():
            return True
        sock = self.transport.get_extra_info("socket")
        if sock is None:
            return False
        poller = select.poll()  # not select(): descriptors past 1023 are common under load
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))

    def write(self, data: bytes) -> None:
        """Send `data` (buffered by the transport; a dead connection raises `WireError`)."""
        transport = self.transport
        if transport is None or transport.is_closing() or self.closed:
            raise WireError("the server closed the connection")
        transport.write(data)

    def close(self) -> None:
        """Close the connection (never to be reused)."""
        self.closed = True
        if self.transport is not None:
            self.transport.close()
        self._wake()


def _check_header(name: str, value: str) -> None:
    if not name or any(c in name for c in "\r\n\0: \t") or any(c in value for c in "\r\n\0"):
        raise WireError(f"the request header {name!r} is not valid (a line break or NUL)")


def request_bytes(
    method: str, target: str, host: str, headers: dict[str, str], body: bytes | None
) -> bytes:
    """One request's bytes: request line, Host (unless `headers` name one), the headers,
    Content-Length (none when `body` is None: an upgrade), the body. A header with a line break
    or NUL raises `WireError`."""
    lines = [f"{method} {target} HTTP/1.1"]
    if not any(name.lower() == "host" for name in headers):
        lines.append(f"Host: {host}")
    for name, value in headers.items():
        _check_header(name, value)
        if name.lower() != "content-length":
            lines.append(f"{name}: {value}")
    lines.append(f"Content-Length: {len(body)}\r\n\r\n" if body is not None else "\r\n")
    try:
        return "\r\n".join(lines).encode("latin-1") + (body or b"")
    except UnicodeEncodeError:
        raise WireError("a request header holds a character outside Latin-1") from None


class Head:
    """A parsed response head: status, version (1 for HTTP/1.1, 0 for 1.0), headers, and whether
    the connection may be kept for another request."""

    __slots__ = ("headers", "keep_alive", "status", "version")

    def __init__(
        self, status: int, version: int, headers: CIMultiDictProxy[str], keep_alive: bool
    ) -> None:
        self.status = status
        self.version = version
        self.headers = headers
        self.keep_alive = keep_alive
