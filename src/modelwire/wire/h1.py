"""HTTP/1.1 on one connection: the request's bytes, the response head, and the body decoders.

The streaming path's own transport (`wire.pool` pools these connections; `wire.http` drives one
request over them). Written here rather than taken from aiohttp because the per-chunk cost of a
general client is the largest share of a streamed chunk: aiohttp spends ~1.7 µs of CPU per HTTP
chunk in Python callbacks (`feed_data`, `end_http_chunk_receiving`, `readany`, `resume_reading`)
on a loopback SSE stream, where this protocol hands the consumer every read as it arrived and the
chunked coding is undone once per read.

`Connection` is an `asyncio.Protocol` that only buffers: `take()` returns everything received
since the last call (b"" when nothing is buffered), `wait()` a future that resolves when more
arrives or the peer is gone. Reading pauses above `HIGH_WATER` buffered bytes until the consumer
takes them. `request_bytes` writes one request, `parse_head` reads one response head; the body
framings are `wire.h1body`.

Failures are `WireError` (an `OSError`) carrying a library-neutral `reason`.
"""

from __future__ import annotations

import asyncio
from typing import Final

from multidict import CIMultiDict, CIMultiDictProxy

__all__ = [
    "HIGH_WATER",
    "MAX_HEAD_BYTES",
    "Connection",
    "Head",
    "WireError",
    "parse_head",
    "request_bytes",
]

HIGH_WATER: Final = 1 << 18
"""Reading pauses while more than this many received bytes wait for the consumer (256 KiB)."""

MAX_HEAD_BYTES: Final = 1 << 16
"""A response head (status line and headers) longer than this is refused (64 KiB)."""

_CRLF: Final = b"\r\n"


class WireError(ConnectionError):
    """A transport failure of this client; `reason` is the short text put in `LlmError`s."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Connection(asyncio.Protocol):
    """One TCP (or TLS) connection's receiving side: reads buffered until `take()`."""

    __slots__ = ("_loop", "_paused", "_reads", "_size", "_waiter", "closed", "transport")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
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
    method: str, target: str, host: str, headers: dict[str, str], body: bytes
) -> bytes:
    """One request's bytes: request line, Host (unless `headers` name one), the headers,
    Content-Length, the body. A header with a line break or NUL raises `WireError`."""
    lines = [f"{method} {target} HTTP/1.1"]
    if not any(name.lower() == "host" for name in headers):
        lines.append(f"Host: {host}")
    for name, value in headers.items():
        _check_header(name, value)
        if name.lower() != "content-length":
            lines.append(f"{name}: {value}")
    lines.append(f"Content-Length: {len(body)}\r\n\r\n")
    try:
        return "\r\n".join(lines).encode("latin-1") + body
    except UnicodeEncodeError:
        raise WireError("a request header holds a character outside Latin-1") from None


class Head:
    """A parsed response head: status, headers, keep-alive, and the bytes read past it."""

    __slots__ = ("headers", "keep_alive", "rest", "status", "version")

    def __init__(
        self,
        status: int,
        version: int,
        headers: CIMultiDictProxy[str],
        keep_alive: bool,
        rest: bytes,
    ) -> None:
        self.status = status
        self.version = version
        self.headers = headers
        self.keep_alive = keep_alive
        self.rest = rest


def parse_head(data: bytes) -> Head | None:
    """The first final response head in `data` (interim 1xx heads skipped), or None when
    `data` does not hold a whole one yet. A malformed or oversized head raises `WireError`."""
    while True:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            if len(data) > MAX_HEAD_BYTES:
                raise WireError("the response head is too large")
            return None
        lines = data[:end].split(_CRLF)
        data = data[end + 4 :]
        status_line = lines[0].split(b" ", 2)
        if (
            len(status_line) < 2
            or status_line[0] not in (b"HTTP/1.1", b"HTTP/1.0")
            or len(status_line[1]) != 3
            or not status_line[1].isdigit()
        ):
            raise WireError("the response is not HTTP/1.1")
        status = int(status_line[1])
        if 100 <= status < 200 and status != 101:
            continue  # an interim response: the final one follows
        headers: CIMultiDict[str] = CIMultiDict()
        previous: str | None = None
        for raw in lines[1:]:
            if raw[:1] in (b" ", b"\t") and previous is not None:  # obsolete line folding
                values = headers.popall(previous)
                values[-1] = values[-1] + " " + raw.strip().decode("latin-1")
                headers.extend((previous, v) for v in values)
                continue
            name, colon, value = raw.partition(b":")
            if not colon or not name or name != name.strip():
                raise WireError("the response head holds a malformed header")
            previous = name.decode("latin-1")
            headers.add(previous, value.strip().decode("latin-1"))
        version = 1 if status_line[0] == b"HTTP/1.1" else 0
        tokens = {t.strip().lower() for t in headers.get("Connection", "").split(",")}
        keep_alive = "close" not in tokens if version else "keep-alive" in tokens
        return Head(status, version, CIMultiDictProxy(headers), keep_alive, data)
