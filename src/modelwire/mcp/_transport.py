"""The SDK's client for one MCP server: its transport, its HTTP client, the watch on its end.

Everything here is the official `mcp` SDK's (`mcp.Client` over `stdio_client`,
`streamable_http_client` or `sse_client`); modelwire adds two things. `http_client` is the one
place an HTTP client for MCP is built: an httpx client whose transport is the library's own
(`_bridge.WireTransport`: the server's proxy, TLS and pool settings, as every route's).
`_Ended` wraps the transport's read stream to tell the connection when it ends: a stdio server's
stdout reaching EOF is how a server that exited is noticed between calls (the SDK's session just
stops reading).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TextIO

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.session import MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from ..wire.settings import DEFAULT_SETTINGS, TransportSettings
from ._bridge import WireTransport
from ._spec import Http, Spec, Stdio

if TYPE_CHECKING:
    from types import TracebackType

    from mcp.client import Transport
    from mcp.client._transport import ReadStream, TransportStreams
    from mcp.shared.message import SessionMessage

__all__ = ["client_for", "http_client"]

_CLIENT_INFO = Implementation(name="modelwire", version="0.1")
_STREAM_READ_S = 300.0
"""How long a held-open response stream (an SSE stream of events) may stay silent."""


def http_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
    *,
    settings: TransportSettings = DEFAULT_SETTINGS,
) -> httpx2.AsyncClient:
    """The HTTP client of an MCP connection, in the SDK's factory shape and with its defaults (30 s
    to connect, write or wait for a pooled connection; a held-open stream may stay silent 300 s;
    no redirects: the SDK follows same-origin ones itself), sending through the library's
    transport with `settings`. Every MCP request over HTTP goes through a client built here."""
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout if timeout is not None else httpx2.Timeout(30.0, read=_STREAM_READ_S),
        auth=auth,
        transport=WireTransport(settings),
        trust_env=False,  # the transport reads the proxy environment itself
    )


class _Ended:
    """A transport read stream that calls `on_end` once it ends (EOF, or closed under us)."""

    __slots__ = ("_inner", "_on_end")

    def __init__(self, inner: ReadStream[SessionMessage | Exception], on_end: Callable[[], None]):
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> object:
        """The sender's context snapshot of the last item (the SDK reads it when present)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Ended:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Ended:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _errlog() -> TextIO:
    """Where a stdio server's stderr goes: ours, or the interpreter's own when ours has no file
    descriptor (a notebook, a captured stream)."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None and stream.fileno() >= 0:
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w")  # lives as long as the process, as stderr


def _transport(spec: Spec, resolved: dict[str, str] | None, timeout_s: float) -> Transport:
    match spec:
        case Stdio():
            params = StdioServerParameters(
                command=spec.command, args=list(spec.args), env=resolved, cwd=spec.cwd
            )
            return stdio_client(params, errlog=_errlog())
        case Http(sse=True):
            return sse_client(
                spec.url,
                headers=resolved,
                timeout=timeout_s,
                sse_read_timeout=_STREAM_READ_S,
                httpx_client_factory=functools.partial(http_client, settings=spec.settings),
            )
        case Http():
            client = http_client(
                resolved, httpx2.Timeout(timeout_s, read=_STREAM_READ_S), settings=spec.settings
            )
            return _owning(client, streamable_http_client(spec.url, http_client=client))


@asynccontextmanager
async def _owning(
    client: httpx2.AsyncClient, transport: Transport
) -> AsyncIterator[TransportStreams]:
    """`transport` with `client` (which it was given, so does not close) closed after it."""
    async with client, transport as streams:
        yield streams


@asynccontextmanager
async def _watched(
    transport: Transport, on_end: Callable[[], None]
) -> AsyncIterator[TransportStreams]:
    async with transport as (read, write):
        yield _Ended(read, on_end), write


def client_for(
    spec: Spec,
    resolved: dict[str, str] | None,
    timeout_s: float,
    *,
    on_end: Callable[[], None],
    on_message: MessageHandlerFnT,
) -> Client:
    """An unentered SDK client for the server (protocol version negotiated: `server/discover`,
    else the `initialize` handshake); `resolved` is its env (stdio) or headers (HTTP), references
    resolved; `timeout_s` bounds each request it sends."""
    return Client(
        _watched(_transport(spec, resolved, timeout_s), on_end),
        read_timeout_seconds=timeout_s,
        message_handler=on_message,
        client_info=_CLIENT_INFO,
        cache=None,
    )
