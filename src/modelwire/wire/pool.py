"""Keep-alive pools of `h1.Connection`s, one per event loop: connect, limit, reuse, expire.

A `Target` says where a connection goes: TCP or TLS to a host, directly or through a forward
proxy (a ``CONNECT`` tunnel upgraded with TLS for an https upstream; for an http upstream the
connection is to the proxy itself, shared by every upstream behind it). Connections are pooled
by the target's `key`.

Pool hygiene:

- at most `max_connections` connections per key (lent, idle and connecting together); a request
  past the limit queues (FIFO) until one is released or dropped;
- an idle connection is closed once it has been idle `keepalive_s` (checked when the key is next
  used and by a sweep timer; the clock is injected), and at most `MAX_IDLE` are kept in all (the
  oldest go first);
- an idle connection is checked before reuse (`Connection.stale`: closed, unasked-for bytes, or a
  readable socket) and dropped if it fails;
- running out of file descriptors (EMFILE/ENFILE) first closes every idle connection and, when
  this key has connections that will come back, waits for one; only then is it a failure,
  worded "too many open files";
- the connect (DNS with a small cache, TCP with staggered attempts over the addresses, the
  proxy's CONNECT, TLS) is bounded by `connect_timeout_ms` (`ConnectTimeout`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import ssl
import time
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Callable
from typing import Final

from .dns import AddrInfo, Resolver
from .h1 import Connection, WireError
from .h1body import ResponseParser
from .proxy import Proxy, ProxyError, proxy_refused_credentials
from .settings import TransportSettings
from .tls import tls_reason

__all__ = [
    "MAX_IDLE",
    "ConnectTimeout",
    "Pool",
    "Target",
    "close_pool",
    "get_pool",
    "new_pool",
]

MAX_IDLE: Final = 256
"""Idle connections kept by one pool in all (the oldest are closed first)."""
_HAPPY_EYEBALLS_S: Final = 0.25
_NO_FDS: Final = (errno.EMFILE, errno.ENFILE)
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pool] = weakref.WeakKeyDictionary()


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


class _Host:
    """The connections of one key: the idle ones (newest last), how many are open (lent, idle
    or connecting), and the requests waiting for one."""

    __slots__ = ("count", "idle", "waiters")

    def __init__(self) -> None:
        self.idle: list[Connection] = []
        self.count = 0
        self.waiters: deque[asyncio.Future[None]] = deque()


def _connect_reason(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return "could not resolve the host"
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return tls_reason(exc)
    if exc.errno in _NO_FDS:
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


class Pool:
    """The connections of one event loop (see the module docstring). `clock` is monotonic
    seconds (injected by tests); `resolver` the DNS cache."""

    # No reference to the loop itself: the per-loop table is keyed weakly by it.
    __slots__ = ("_busy", "_closed", "_hosts", "_idle_total", "_sweeping", "clock", "closer", "dns")

    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, resolver: Resolver | None = None
    ) -> None:
        self._hosts: dict[object, _Host] = {}
        self._busy: set[Connection] = set()
        self._closed = False
        self._idle_total = 0
        self._sweeping = False
        self.clock = clock
        self.dns = resolver if resolver is not None else Resolver()
        self.closer: AsyncGenerator[None, None] | None = None  # closes the pool at loop shutdown

    # looking at it -----------------------------------------------------------------------

    def open_count(self, key: object | None = None) -> int:
        """Connections open (lent, idle or connecting), for `key` or in all."""
        if key is not None:
            host = self._hosts.get(key)
            return 0 if host is None else host.count
        return sum(h.count for h in self._hosts.values())

    def idle_count(self) -> int:
        """Idle connections kept in all."""
        return self._idle_total

    # lending -----------------------------------------------------------------------------

    async def acquire(self, target: Target) -> tuple[Connection, bool]:
        """An open connection to `target` (an idle one, else a new one once the key is under
        its limit) and whether it was reused; lent until `release` or `drop`. A failed connect
        raises `WireError` (`ConnectTimeout`, `ProxyError`) with its reason."""
        host = self._hosts.get(target.key)
        if host is None:
            host = self._hosts[target.key] = _Host()
        limit = target.settings.max_connections
        while True:
            conn = self._take_idle(host)
            if conn is not None:
                self._busy.add(conn)
                return conn, True
            if host.count < limit:
                break
            await self._wait(host)
        host.count += 1
        try:
            conn = await self._connect(target, host)
        except BaseException:
            host.count -= 1
            self._wake(host)
            raise
        if self._closed:
            host.count -= 1
            conn.close()
            raise WireError("the connection pool was closed")
        conn.key = target.key
        conn.keepalive = target.settings.keepalive_s
        self._busy.add(conn)
        return conn, False

    def _take_idle(self, host: _Host) -> Connection | None:
        now = self.clock()
        idle = host.idle
        while idle:
            conn = idle.pop()
            self._idle_total -= 1
            if now < conn.expires and not conn.stale():
                return conn
            host.count -= 1
            conn.close()  # expired, closed by the server, or readable while idle
        return None

    async def _wait(self, host: _Host) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        host.waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._wake(host)  # woken and cancelled at once: pass the turn on
            else:
                with contextlib.suppress(ValueError):
                    host.waiters.remove(waiter)
            raise

    def _wake(self, host: _Host) -> None:
        while host.waiters:
            waiter = host.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def release(self, conn: Connection) -> None:
        """Keep `conn` for the next request to its key (its response was read whole)."""
        self._busy.discard(conn)
        host = self._hosts.get(conn.key)
        if host is None:
            conn.close()
            return
        if self._closed or conn.closed or conn.keepalive <= 0:
            host.count -= 1
            conn.close()
        else:
            conn.expires = self.clock() + conn.keepalive
            host.idle.append(conn)
            self._idle_total += 1
            if self._idle_total > MAX_IDLE:
                self._close_oldest_idle()
            self._schedule_sweep(conn.keepalive)
        self._wake(host)

    def drop(self, conn: Connection) -> None:
        """Close `conn` (its response was not read whole, or it may not be reused)."""
        conn.close()
        if conn in self._busy:
            self._busy.discard(conn)
            host = self._hosts.get(conn.key)
            if host is not None:
                host.count -= 1
                self._wake(host)

    # expiry ------------------------------------------------------------------------------

    def _close_oldest_idle(self) -> None:
        oldest: tuple[float, _Host] | None = None
        for host in self._hosts.values():
            if host.idle and (oldest is None or host.idle[0].expires < oldest[0]):
                oldest = (host.idle[0].expires, host)
        if oldest is not None:
            host = oldest[1]
            conn = host.idle.pop(0)
            self._idle_total -= 1
            host.count -= 1
            conn.close()
            self._wake(host)

    def close_idle(self, *, expired_only: bool = False) -> int:
        """Close idle connections (every one, or those past their keep-alive); how many."""
        now = self.clock()
        closed = 0
        for key, host in list(self._hosts.items()):
            keep = [c for c in host.idle if expired_only and now < c.expires and not c.closed]
            for conn in host.idle:
                if conn not in keep:
                    conn.close()
                    closed += 1
            host.count -= len(host.idle) - len(keep)
            self._idle_total -= len(host.idle) - len(keep)
            host.idle = keep
            if host.count == 0 and not host.waiters:
                del self._hosts[key]
            elif len(keep) < host.count:
                self._wake(host)
        return closed

    def sweep(self) -> None:
        """Close the idle connections past their keep-alive (run by a timer while any idle
        connection is kept; a test calls it after advancing the clock)."""
        self._sweeping = False
        self.close_idle(expired_only=True)
        if self._idle_total:
            soonest = min(c.expires for h in self._hosts.values() for c in h.idle)
            self._schedule_sweep(max(soonest - self.clock(), 0.0))

    def _schedule_sweep(self, delay: float) -> None:
        if self._sweeping or self._closed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # released outside the loop (a finalizer): the next use sweeps
            return
        self._sweeping = True
        # the loop owns the handle (the pool keeps no reference to the loop); +0.1 s so that the
        # sweep finds the connection expired rather than a hair short of it
        loop.call_later(delay + 0.1, self.sweep)

    def close(self) -> None:
        """Close every connection, idle or lent; a connection released later is closed too."""
        self._closed = True
        hosts, self._hosts = self._hosts, {}
        busy, self._busy = self._busy, set()
        self._idle_total = 0
        for host in hosts.values():
            for conn in host.idle:
                conn.close()
            for waiter in host.waiters:
                if not waiter.done():
                    waiter.set_exception(WireError("the connection pool was closed"))
        for conn in busy:
            conn.close()

    # connecting --------------------------------------------------------------------------

    async def _connect(self, target: Target, host: _Host) -> Connection:
        """A new connection. Out of file descriptors, it closes the idle connections and tries
        again, or waits for another connection of this key to come back (as often as one
        does); with neither to free, it fails as "too many open files"."""
        ms = target.settings.connect_timeout_ms
        while True:
            try:
                async with asyncio.timeout(ms / 1000):
                    return await self._open(target)
            except TimeoutError:
                where = "the proxy " + target.proxy.shown if target.proxy is not None else ""
                raise ConnectTimeout(
                    f"connect timed out after {ms}ms" + (f" (through {where})" if where else "")
                ) from None
            except OSError as exc:
                if exc.errno not in _NO_FDS:
                    raise
                if self.close_idle():
                    continue
                if host.count <= 1:
                    raise WireError("too many open files") from exc
                host.count -= 1
                try:
                    await self._wait(host)  # a connection of this key will come back
                finally:
                    host.count += 1

    async def _open(self, target: Target) -> Connection:
        loop = asyncio.get_running_loop()
        proxy = target.proxy
        host, port = (target.host, target.port) if proxy is None else (proxy.host, proxy.port)
        try:
            infos = await self.dns.resolve(host, port)
            sock = await _staggered(loop, infos)
        except OSError as exc:
            if exc.errno in _NO_FDS:
                raise  # the caller frees descriptors and tries again
            if proxy is None:
                raise WireError(_connect_reason(exc)) from exc
            raise ProxyError(f"the proxy {proxy.shown} failed: {_connect_reason(exc)}") from exc
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
            raise WireError(_connect_reason(exc)) from exc
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
        raise WireError(_connect_reason(exc)) from exc
    assert isinstance(tls, asyncio.Transport)
    conn.transport = tls


def get_pool(loop: asyncio.AbstractEventLoop) -> Pool | None:
    """The pool of `loop`, if one was made."""
    return _pools.get(loop)


def new_pool(loop: asyncio.AbstractEventLoop, pool: Pool | None = None) -> Pool:
    """A fresh pool (or `pool`) for `loop` (replacing, not closing, any earlier one)."""
    made = _pools[loop] = pool if pool is not None else Pool()
    return made


def close_pool(loop: asyncio.AbstractEventLoop) -> None:
    """Close the pool of `loop` and forget it (a later request makes a fresh one)."""
    pool = _pools.pop(loop, None)
    if pool is not None:
        pool.close()
