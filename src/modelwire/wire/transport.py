"""The seam every outgoing request of the library goes through: `Transport` (as httpx's
`BaseTransport`); the default behind it is `wire.h1transport.H1Transport`, this package's own
HTTP/1.1 client.

A caller builds a `Request` (method, URL, headers, body bytes, the route's `TransportSettings`
and a `guard` that bounds each wait, the idle watchdog's), and

- `await transport.send(request)` returns a `Response` once its head arrived: `status`,
  `headers`, then the body either whole (`await response.read(max_bytes)`) or read by read
  (`async for pieces in response.pieces()`: each read's body pieces in order, one per HTTP chunk
  of a chunked body). `aclose()` ends it early; the connection goes back to the pool only when
  the body was read to its end with keep-alive.
- `await transport.websocket(request)` opens a WebSocket (RFC 6455) over a connection made the
  same way (proxy, TLS, connect timeout) and returns a `WebSocket`.

The streaming POST of every adapter (`wire.http.stream_post_pieces`), model discovery and the
OpenAI Responses WebSocket use it today; `wire.h1transport.fetch()` is the non-streaming call (status, headers,
capped body) that MCP over HTTP, embeddings, batches and the gateway's upstream calls take.

Failures are library-neutral `WireError`s whose `reason` is the text for users, in three
kinds the callers map to codes: `ConnectTimeout` (``TIMEOUT``: "connect timed out after
30000ms"), `ProxyError` (``PROXY``, naming the proxy without its password), any other
`WireError` (``TRANSPORT``: refused, DNS, TLS with OpenSSL's reason, reset, cut off, a malformed
response, too many open files). Caller cancellation stays `asyncio.CancelledError`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Mapping
from typing import Protocol, TypeVar

import msgspec
from multidict import CIMultiDictProxy

from .connect import ConnectTimeout
from .h1 import WireError
from .proxy import ProxyError
from .settings import DEFAULT_SETTINGS, TransportSettings

__all__ = [
    "ConnectTimeout",
    "Guard",
    "ProxyError",
    "Reply",
    "Request",
    "Response",
    "TooLarge",
    "Transport",
    "WebSocket",
]

T = TypeVar("T")


class TooLarge(WireError):
    """A body longer than `Response.read`'s `max_bytes`."""


class Guard(Protocol):
    """Bounds one wait (the idle watchdog's `guard`); the identity when nothing bounds it."""

    def __call__(self, awaitable: Awaitable[T], /) -> Awaitable[T]: ...


def _unguarded(awaitable: Awaitable[T], /) -> Awaitable[T]:
    return awaitable


class Request:
    """One outgoing request. The transport drops `body` once the bytes are built (a long
    prompt is not held for the whole stream)."""

    __slots__ = ("body", "encoded_url", "guard", "headers", "method", "settings", "url")

    def __init__(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
        settings: TransportSettings = DEFAULT_SETTINGS,
        guard: Guard = _unguarded,
        encoded_url: bool = False,
    ) -> None:
        self.method = method
        self.url = url
        self.headers = dict(headers) if headers is not None else {}
        self.body = body
        self.settings = settings
        self.guard = guard
        self.encoded_url = encoded_url  # send `url` exactly as given (already percent-encoded)


class Response(Protocol):
    """A response whose head arrived (see the module docstring)."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> CIMultiDictProxy[str]: ...

    def pieces(self) -> AsyncGenerator[list[bytes], None]:
        """The body read by read, each read's pieces in order (ends when the body does)."""
        ...

    async def read(self, max_bytes: int) -> bytes:
        """The whole body (at most `max_bytes`; more raises `WireError`)."""
        ...

    async def aclose(self) -> None:
        """Stop reading; the connection is closed unless the body already arrived whole."""
        ...


class WebSocket(Protocol):
    """An open WebSocket: text out, messages in."""

    async def send_text(self, text: str) -> None:
        """Send one text message."""
        ...

    async def receive(self) -> bytes | None:
        """The next text message's bytes; None once the server closed the socket. A binary
        message raises `TypeError`; a broken socket `WireError`."""
        ...

    async def aclose(self) -> None:
        """Close the socket (a close frame, then the connection)."""
        ...


class Transport(Protocol):
    """Sends requests (see the module docstring); plug another through the adapters'
    ``transport=`` argument."""

    async def send(self, request: Request) -> Response:
        """Send `request` and return its response once the head arrived."""
        ...

    async def websocket(self, request: Request, *, max_message_bytes: int = ...) -> WebSocket:
        """Open a WebSocket at `request.url` (``http(s)``/``ws(s)``) with its headers; a refused
        upgrade raises `wsclient.UpgradeRefused` (status, headers, body text), a message over
        `max_message_bytes` `wsclient.MessageTooLarge`."""
        ...


class Reply(msgspec.Struct, frozen=True, kw_only=True):
    """A whole response of `fetch`."""

    status: int
    headers: Mapping[str, str]
    body: bytes
