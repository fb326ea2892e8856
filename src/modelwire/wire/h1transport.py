"""`H1Transport`: the package's `Transport` (`wire.transport`), HTTP/1.1 over the running loop's
`Pool` (`wire.pool`), and `fetch`, the non-streaming call through any transport.

What it adds on top of the pool: the route's proxy (`wire.proxy`: the setting, else the
environment), the route's TLS context (`wire.tls`), ``Accept-Encoding: gzip, deflate`` unless
the caller set one (the response is inflated), absolute-form request targets and
``Proxy-Authorization`` for an http upstream behind a proxy (whose own 407 is `ProxyError`), and
one retry on a fresh connection for a request that was provably never sent (a reused connection
that failed before a byte of it left; for idempotent methods, also one closed before any byte
of its answer).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Final

import yarl

from .h1 import Connection, WireError, request_bytes
from .h1body import ResponseParser
from .pool import Pool, Target, close_pool, get_pool, new_pool
from .proxy import proxy_for, proxy_refused_credentials
from .tls import client_context
from .transport import Guard, Reply, Request, TooLarge, Transport, WebSocket
from .wsclient import DEFAULT_MAX_MESSAGE, open_websocket

__all__ = [
    "H1Response",
    "H1Transport",
    "close_at_loop_shutdown",
    "default_transport",
    "fetch",
    "loop_pool",
    "split_url",
]

_IDEMPOTENT: Final = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
_ACCEPT_ENCODING: Final = "gzip, deflate"


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
        reads = self.pieces()
        try:
            async for pieces in reads:
                for piece in pieces:
                    size += len(piece)
                    if size > max_bytes:
                        raise TooLarge(f"the response body is larger than {max_bytes} bytes")
                    parts.append(piece)
        finally:
            await reads.aclose()
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
            headers["Accept-Encoding"] = _ACCEPT_ENCODING  # the request's own copy
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
