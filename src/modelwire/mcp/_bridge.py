"""The MCP SDK's HTTP requests, sent through modelwire's transport (`wire.transport`).

The official `mcp` SDK speaks HTTP through an `httpx2.AsyncClient`; `WireTransport` is that
client's transport seam (httpx's `AsyncBaseTransport`) over the library's own `Transport`, so an
MCP server over HTTP is reached the way every provider route is (DESIGN §9): the proxy setting or
the environment's `HTTPS_PROXY` / `NO_PROXY`, the TLS files, the pool's limits and keep-alive,
the connect timeout.

What the bridge translates, and nothing else: httpx's request (method, URL as sent, headers,
body) into a `wire.transport.Request` with the client's timeouts (connect: the settings' connect
timeout; read: every wait for the head or a body read, as httpx's read timeout), and the answer
back into an `httpx2.Response` whose body streams read by read (the SDK reads SSE streams
incrementally). The transport inflates gzip and deflate itself, so the response handed to httpx
carries no `Content-Encoding` (nor the compressed `Content-Length`). Transport failures become
the httpx exceptions the SDK and `_problems` expect (`ConnectTimeout`, `ProxyError`,
`ConnectError`, `ReadTimeout`, `ReadError`), with the transport's own reason and no cause chain
(a proxy's password never rides along in one).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Final, TypeVar

import httpx2
import msgspec

from ..wire.h1 import WireError
from ..wire.h1transport import default_transport
from ..wire.settings import DEFAULT_SETTINGS, TransportSettings
from ..wire.transport import ConnectTimeout, ProxyError, Request, Response, Transport

__all__ = ["WireTransport"]

T = TypeVar("T")

_NOT_FORWARDED: Final = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "accept-encoding"}
)
"""Request headers the transport writes itself (Host, Content-Length, its Accept-Encoding: it
inflates what it asked for) or that do not apply to one HTTP/1.1 exchange."""
_BODY_CODING: Final = frozenset({"content-encoding", "content-length"})


class _ReadGuard:
    """Bounds each wait of one exchange by httpx's read timeout (None: unbounded)."""

    __slots__ = ("_seconds",)

    def __init__(self, seconds: float | None) -> None:
        self._seconds = seconds

    def __call__(self, awaitable: Awaitable[T], /) -> Awaitable[T]:
        if self._seconds is None:
            return awaitable
        return asyncio.wait_for(awaitable, self._seconds)


class _Body(httpx2.AsyncByteStream):
    """The response body, read by read from the transport; closing it closes the response."""

    __slots__ = ("_request", "_response")

    def __init__(self, response: Response, request: httpx2.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        reads = self._response.pieces()
        try:
            async for pieces in reads:
                for piece in pieces:
                    yield piece
        except TimeoutError:
            raise httpx2.ReadTimeout(
                "no data within the read timeout", request=self._request
            ) from None
        except WireError as exc:
            raise httpx2.ReadError(exc.reason, request=self._request) from None
        finally:
            await reads.aclose()

    async def aclose(self) -> None:
        await self._response.aclose()


class WireTransport(httpx2.AsyncBaseTransport):
    """An httpx transport that sends through modelwire's `Transport` with `settings` (the
    process's default transport unless one is given)."""

    def __init__(
        self, settings: TransportSettings = DEFAULT_SETTINGS, transport: Transport | None = None
    ) -> None:
        self._settings = settings
        self._transport = transport

    def _request(self, request: httpx2.Request, body: bytes) -> Request:
        headers: dict[str, str] = {}
        for name, value in request.headers.multi_items():
            if name.lower() in _NOT_FORWARDED:
                continue
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        timeouts = request.extensions.get("timeout") or {}
        settings = self._settings
        connect = timeouts.get("connect")
        if connect is not None:  # the client's connect timeout, as httpx's own transport takes it
            connect_ms = max(1, min(round(connect * 1000), settings.connect_timeout_ms))
            settings = msgspec.structs.replace(settings, connect_timeout_ms=connect_ms)
        return Request(
            request.method,
            str(request.url),
            headers=headers,
            body=body,
            settings=settings,
            guard=_ReadGuard(timeouts.get("read")),
            encoded_url=True,
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        wire = self._request(request, await request.aread())
        transport = self._transport if self._transport is not None else default_transport()
        try:
            response = await wire.guard(transport.send(wire))
        except ConnectTimeout as exc:
            raise httpx2.ConnectTimeout(exc.reason, request=request) from None
        except ProxyError as exc:
            raise httpx2.ProxyError(exc.reason, request=request) from None
        except TimeoutError:
            raise httpx2.ReadTimeout("no answer within the read timeout", request=request) from None
        except WireError as exc:
            raise httpx2.ConnectError(exc.reason, request=request) from None
        headers = response.headers
        coded = "content-encoding" in headers
        return httpx2.Response(
            response.status,
            headers=[
                (name, value)
                for name, value in headers.items()
                if not (coded and name.lower() in _BODY_CODING)
            ],
            stream=_Body(response, request),
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )
