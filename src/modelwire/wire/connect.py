"""How one connection of the pool is made: DNS (through the cache), TCP (addresses tried in turn,
each next one 250 ms after the previous started, families interleaved), the proxy's ``CONNECT``
tunnel when the target goes through one, and TLS with the route's context. The connect timeout
is the pool's (`Pool._connect` bounds this whole sequence).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import ssl
from typing import Final

from .dns import AddrInfo, Resolver
from .h1 import Connection, WireError
from .h1body import ResponseParser
from .proxy import Proxy, ProxyError, proxy_refused_credentials
from .settings import TransportSettings
from .tls import tls_reason

__all__ = ["NO_FDS", "ConnectTimeout", "Target", "connect_reason", "open_connection"]

_HAPPY_EYEBALLS_S: Final = 0.25
NO_FDS: Final = (errno.EMFILE, errno.ENFILE)
"""The errnos of a process (or system) out of file descriptors."""


class ConnectTimeout(WireError):
    """The connect (DNS, TCP, proxy, TLS) did not finish within `connect_timeout_ms`."""


class Target:
    """Where a connection goes. `key` tells pooled connections apart; `tunnel` is True when
    the connection is a CONNECT tunnel through `proxy` (an https upstream, or any WebSocket),
    False when it is to the proxy itself (an http upstream) or direct."""

    __slots__ = ("context", "host", "key", "port", "proxy", "settings", "tls", "tunnel")

    def __init__(
        self,
        tls: bool,
        host: str,
        port: int,
        proxy: Proxy | None,
        context: ssl.SSLContext | None,
        settings: TransportSettings,
        *,
        tunnel: bool = False,
    ) -> None:
        self.tls = tls
        self.host = host
        self.port = port
        self.proxy = proxy
        self.context = context
        self.settings = settings
        self.tunnel = proxy is not None and (tls or tunnel)
        if proxy is not None and not self.tunnel:  # forwarded by the proxy: one pool per proxy
            self.key: tuple[object, ...] = ("forward", proxy.key)
        else:
            self.key = (tls, host, port, None if proxy is None else proxy.key, id(context))


def connect_reason(exc: OSError) -> str:
    """The words for a failed connect (no exception type names)."""
    if isinstance(exc, socket.gaierror):
        return "could not resolve the host"
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return tls_reason(exc)
    if exc.errno in NO_FDS:
        return "too many open files"
    if isinstance(exc, ConnectionRefusedError) or exc.errno == errno.ECONNREFUSED:
        return "connection refused"
    return "could not connect"


async def _sock_connect(loop: asyncio.AbstractEventLoop, info: AddrInfo) -> socket.socket:
    family, kind, proto, _, address = info
    sock = socket.socket(family, kind, proto)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await loop.sock_connect(sock, address)
    except BaseException:
        sock.close()
        raise
    return sock


async def _staggered(loop: asyncio.AbstractEventLoop, infos: list[AddrInfo]) -> socket.socket:
    """A connected socket to the first address that answers; each next address is tried
    `_HAPPY_EYEBALLS_S` after the previous one started, or at once when it failed."""
    if len(infos) == 1:
        return await _sock_connect(loop, infos[0])
    pending: set[asyncio.Task[socket.socket]] = set()
    errors: list[OSError] = []
    queue = list(infos)
    try:
        while queue or pending:
            if queue:
                pending.add(asyncio.ensure_future(_sock_connect(loop, queue.pop(0))))
            done, _ = await asyncio.wait(
                pending,
                timeout=_HAPPY_EYEBALLS_S if queue else None,
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in done:
                pending.discard(task)
                exc = task.exception()
                if exc is None:
                    return task.result()
                errors.append(exc if isinstance(exc, OSError) else OSError(str(exc)))
    finally:
        for task in pending:
            task.cancel()
            with contextlib.suppress(BaseException):
                sock = await task
                sock.close()
    refused = [e for e in errors if isinstance(e, ConnectionRefusedError)]
    raise (refused or errors)[0]


async def open_connection(resolver: Resolver, target: Target) -> Connection:
    """A new connection to `target`: DNS (cached), TCP, the proxy's tunnel, TLS. Running out of
    descriptors raises the bare `OSError` (the pool frees some and tries again); any other
    failure is a `WireError` (`ProxyError` for the proxy's part) with its reason."""
    loop = asyncio.get_running_loop()
    proxy = target.proxy
    host, port = (target.host, target.port) if proxy is None else (proxy.host, proxy.port)
    try:
        infos = await resolver.resolve(host, port)
        sock = await _staggered(loop, infos)
    except OSError as exc:
        if exc.errno in NO_FDS:
            raise  # the caller frees descriptors and tries again
        if proxy is None:
            raise WireError(connect_reason(exc)) from exc
        raise ProxyError(f"the proxy {proxy.shown} failed: {connect_reason(exc)}") from exc
    direct_tls = target.tls and proxy is None
    try:
        _, conn = await loop.create_connection(
            lambda: Connection(loop),
            sock=sock,
            ssl=target.context if direct_tls else None,
            server_hostname=target.host if direct_tls else None,
        )
    except (OSError, ssl.SSLError) as exc:
        sock.close()
        raise WireError(connect_reason(exc)) from exc
    if proxy is not None and target.tunnel:
        try:
            await _tunnel(loop, conn, target, proxy)
        except BaseException:
            conn.close()
            raise
    return conn


async def _tunnel(
    loop: asyncio.AbstractEventLoop, conn: Connection, target: Target, proxy: Proxy
) -> None:
    """Ask `proxy` (which `conn` reaches) for a tunnel to the target, then start TLS in it."""
    authority = f"[{target.host}]" if ":" in target.host else target.host
    lines = [f"CONNECT {authority}:{target.port} HTTP/1.1", f"Host: {authority}:{target.port}"]
    if proxy.authorization is not None:
        lines.append(f"Proxy-Authorization: {proxy.authorization}")
    conn.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    parser = ResponseParser(head_only=True)
    while parser.head is None:
        data = conn.take()
        if data:
            try:
                parser.feed(data)
            except WireError as exc:
                raise ProxyError(f"the proxy {proxy.shown} failed: {exc.reason}") from exc
        elif conn.closed:
            raise ProxyError(f"the proxy {proxy.shown} closed the connection before its answer")
        else:
            await conn.wait()
    status = parser.head.status
    if status in (401, 407):
        raise proxy_refused_credentials(proxy, status)
    if not 200 <= status < 300:
        raise ProxyError(f"the proxy {proxy.shown} refused the tunnel to {authority} ({status})")
    if not target.tls:
        return  # a ws:// socket through the tunnel: plain bytes
    transport = conn.transport
    assert transport is not None
    try:
        assert target.context is not None
        tls = await loop.start_tls(transport, conn, target.context, server_hostname=target.host)
    except (OSError, ssl.SSLError) as exc:
        raise WireError(connect_reason(exc)) from exc
    assert isinstance(tls, asyncio.Transport)
    conn.transport = tls
