"""The seam every outgoing request of the library goes through: `Transport` (as httpx's
`BaseTransport`), and `H1Transport`, this package's HTTP/1.1 client behind it.

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
OpenAI Responses WebSocket use it today; `fetch()` is the non-streaming call (status, headers,
capped body) that MCP over HTTP, embeddings, batches and the gateway's upstream calls take.

Failures are library-neutral `WireError`s whose `reason` is the text for users, in three
kinds the callers map to codes: `ConnectTimeout` (``TIMEOUT``: "connect timed out after
30000ms"), `ProxyError` (``PROXY``, naming the proxy without its password), any other
`WireError` (``TRANSPORT``: refused, DNS, TLS with OpenSSL's reason, reset, cut off, a malformed
response, too many open files). Caller cancellation stays `asyncio.CancelledError`.

What `H1Transport` adds on top of `wire.pool`: the route's proxy (`wire.proxy`: the setting, else
the environment), the route's TLS context (`wire.tls`), ``Accept-Encoding: gzip, deflate``
unless the caller set one (the response is inflated), absolute-form request targets and
``Proxy-Authorization`` for an http upstream behind a proxy, and one retry on a fresh connection
for a request that was provably never sent (a reused connection that failed before a byte of
it left; for idempotent methods, also one closed before any byte of its answer).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Final, Protocol, TypeVar

import msgspec
import yarl
from multidict import CIMultiDictProxy

from .h1 import Connection, WireError, request_bytes
from .h1body import ResponseParser
from .pool import ConnectTimeout, Pool, Target, close_pool, get_pool, new_pool
from .proxy import ProxyError, proxy_for, proxy_refused_credentials
from .settings import DEFAULT_SETTINGS, TransportSettings
from .tls import client_context
from .wsclient import DEFAULT_MAX_MESSAGE, open_websocket

__all__ = [
    "ConnectTimeout",
    "Guard",
    "H1Transport",
    "ProxyError",
    "Reply",
    "Request",
    "Response",
    "TooLarge",
    "Transport",
    "WebSocket",
    "close_at_loop_shutdown",
    "default_transport",
    "fetch",
    "loop_pool",
]

T = TypeVar("T")
_IDEMPOTENT: Final = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
_ACCEPT_ENCODING: Final = "gzip, deflate"


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


async def fetch(
    request: Request, *, transport: Transport | None = None, max_bytes: int = 1 << 26
) -> Reply:
    """Send `request` and read its whole answer (at most `max_bytes` of body)."""
    response = await (transport or default_transport()).send(request)
    try:
        body = await response.read(max_bytes)
    finally:
        await response.aclose()
    return Reply(status=response.status, headers=response.headers, body=body)


def close_at_loop_shutdown(
    close: Callable[[], Awaitable[None] | None],
) -> AsyncGenerator[None, None]:
    """An async generator parked at its first `yield`: the loop's `shutdown_asyncgens()` (run by
    `asyncio.run` on exit) finalises it, which runs `close` (the connection pool's), so programs
    that never call `close_sessions()` exit without an unclosed-transport warning. `close` also
    drops the loop's table entry: the generator refers to its loop, so a kept entry would keep
    the loop alive."""

    async def closer() -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            done = close()
            if done is not None:
                await done

    gen = closer()
    step = gen.__anext__()  # registers with the loop's asyncgen hooks, then runs to the yield
    with contextlib.suppress(StopIteration):
        step.send(None)
    return gen


def loop_pool() -> Pool:
    """The running event loop's connection pool, made on first use."""
    loop = asyncio.get_running_loop()
    pool = get_pool(loop)
    if pool is None:
        pool = new_pool(loop)
        pool.closer = close_at_loop_shutdown(lambda: close_pool(loop))
    return pool


def split_url(url: str, encoded: bool) -> tuple[bool, str, int, str, str]:
    """`(tls, host, port, request target, Host header)` of an ``http(s)``/``ws(s)`` URL."""
    try:
        parsed = yarl.URL(url, encoded=encoded)
        host, port = parsed.raw_host, parsed.port
        scheme = parsed.scheme
    except (ValueError, TypeError) as exc:
        raise WireError("the URL is not valid") from exc
    if scheme not in ("http", "https", "ws", "wss") or not host or port is None:
        raise WireError("the URL is not valid")
    target = parsed.raw_path_qs or "/"
    return scheme in ("https", "wss"), host, port, target, parsed.host_port_subcomponent or host


class H1Response:
    """`Response` over a pooled `Connection` (see the module docstring)."""

    __slots__ = ("_conn", "_first", "_guard", "_parser", "_pool", "headers", "status")

    def __init__(
        self, pool: Pool, conn: Connection, parser: ResponseParser, first: list[bytes], guard: Guard
    ) -> None:
        head = parser.head
        assert head is not None
        self.status = head.status
        self.headers = head.headers
        self._pool = pool
        self._conn: Connection | None = conn
        self._parser = parser
        self._first = first  # body pieces that came with the head
        self._guard = guard

    async def pieces(self) -> AsyncGenerator[list[bytes], None]:
        conn, parser = self._conn, self._parser
        if conn is None:
            return
        first, self._first = self._first, []
        feed, take, wait, guard = parser.feed, conn.take, conn.wait, self._guard
        try:
            if first:
                yield first
                del first
            if parser.error is not None:
                raise parser.error
            while not parser.done:
                data = take()
                if not data:
                    if conn.closed:
                        if parser.until_eof:
                            parser.done = True
                            break
                        raise WireError("the response body was cut off")
                    await guard(wait())
                    continue
                out = feed(data)
                del data  # this read is not held while the consumer works
                if out:
                    yield out
                    del out
                if parser.error is not None:
                    raise parser.error
        finally:
            self._finish()

    async def read(self, max_bytes: int) -> bytes:
        parts: list[bytes] = []
        size = 0
        async for pieces in self.pieces():
            for piece in pieces:
                size += len(piece)
                if size > max_bytes:
                    raise TooLarge(f"the response body is larger than {max_bytes} bytes")
                parts.append(piece)
        return b"".join(parts)

    async def aclose(self) -> None:
        self._finish()

    def _finish(self) -> None:
        """Give the connection back when the body is whole (reading what is already buffered,
        without waiting), else close it."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        parser = self._parser
        if not parser.done and parser.error is None and not conn.closed:
            data = conn.take()
            if data:
                with contextlib.suppress(WireError):
                    parser.feed(data)
        head = parser.head
        if (
            parser.done
            and parser.error is None
            and not parser.extra
            and not parser.until_eof
            and head is not None
            and head.keep_alive
            and not conn.closed
        ):
            self._pool.release(conn)
        else:
            self._pool.drop(conn)


class H1Transport:
    """This package's HTTP/1.1 transport over the running loop's `Pool` (the default)."""

    __slots__ = ("env",)

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = env  # where proxy variables are read (None: the process environment)

    def _target(
        self, request: Request, tunnel: bool = False
    ) -> tuple[Target, str, str, dict[str, str]]:
        """The connection target, request target, Host header and the headers to send
        (`tunnel`: through a proxy, always by CONNECT)."""
        tls, host, port, path, host_header = split_url(request.url, request.encoded_url)
        settings = request.settings
        proxy = proxy_for(tls, host, port, settings.proxy, self.env)
        context = client_context(settings) if tls else None
        headers = request.headers
        target = Target(tls, host, port, proxy, context, settings, tunnel=tunnel)
        if proxy is not None and not target.tunnel:  # absolute-form through the proxy
            path = f"http://{host_header}{path}"
            if proxy.authorization is not None:
                headers = {**headers, "Proxy-Authorization": proxy.authorization}
        return target, path, host_header, headers

    async def send(self, request: Request) -> H1Response:
        target, path, host_header, headers = self._target(request)
        if not any(name.lower() == "accept-encoding" for name in headers):
            headers = {**headers, "Accept-Encoding": _ACCEPT_ENCODING}
        method = request.method.upper()
        holder = [request_bytes(method, path, host_header, headers, request.body)]
        request.body = b""  # only the request bytes from here on, and not once sent
        del headers
        pool = loop_pool()
        for attempt in (0, 1):
            conn, reused = await pool.acquire(target)
            retry = reused and attempt == 0
            parser = ResponseParser(head_only=method == "HEAD")
            try:
                first = await _exchange(conn, holder, parser, retry and method in _IDEMPOTENT)
            except _NeverSent:
                pool.drop(conn)
                if retry:
                    continue  # the idle connection died under us: a fresh one
                raise WireError("the server closed the connection") from None
            except _NoAnswer:
                pool.drop(conn)
                if retry and holder:
                    continue
                raise WireError("the server closed the connection") from None
            except BaseException:
                pool.drop(conn)
                raise
            proxy, head = target.proxy, parser.head
            if proxy is not None and not target.tunnel and head is not None and head.status == 407:
                pool.drop(conn)  # the proxy's own answer, not the upstream's
                raise proxy_refused_credentials(proxy)
            return H1Response(pool, conn, parser, first, request.guard)
        raise WireError("the server closed the connection")  # pragma: no cover

    async def websocket(
        self, request: Request, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE
    ) -> WebSocket:
        target, path, host_header, headers = self._target(request, tunnel=True)
        return await open_websocket(
            loop_pool(), target, path, host_header, headers, max_message_bytes=max_message_bytes
        )


class _NeverSent(Exception):
    """The connection was gone before a byte of the request left."""


class _NoAnswer(Exception):
    """The connection closed after the request was written and before a byte of the answer."""


async def _exchange(
    conn: Connection, holder: list[bytes], parser: ResponseParser, keep: bool
) -> list[bytes]:
    """Write the request (`holder`'s bytes, dropped once written unless `keep`: a retry after
    no answer may need them) and read up to its final head: the body pieces that came with it."""
    transport = conn.transport
    if conn.closed or transport is None or transport.is_closing():
        raise _NeverSent
    conn.write(holder[0])
    if transport.is_closing():  # the first send failed: nothing of it left
        raise _NeverSent
    if not keep:
        holder.clear()
    received = False
    while True:
        data = conn.take()
        if data:
            received = True
            out = parser.feed(data)
            if parser.head is not None:
                return out
        elif conn.closed:
            if not received:
                raise _NoAnswer
            raise WireError("the server closed the connection before its answer")
        else:
            await conn.wait()


_default: H1Transport | None = None


def default_transport() -> H1Transport:
    """The process's `H1Transport` (proxies from the process environment)."""
    global _default
    if _default is None:
        _default = H1Transport()
    return _default
