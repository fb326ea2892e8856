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
import contextvars
import time
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Final

from .connect import NO_FDS, ConnectTimeout, Target, open_connection
from .dns import Resolver
from .h1 import Connection, WireError

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
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pool] = weakref.WeakKeyDictionary()


class _Host:
    """The connections of one key: the idle ones (newest last), how many are open (lent, idle
    or connecting), and the requests waiting for one."""

    __slots__ = ("count", "idle", "waiters")

    def __init__(self) -> None:
        self.idle: list[Connection] = []
        self.count = 0
        self.waiters: deque[asyncio.Future[None]] = deque()


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
        # sweep finds the connection expired rather than a hair short of it. An empty context:
        # the caller's (a turn's context variables, and what they reach, a session log among
        # them) must not live on in the timer for `keepalive_s`
        loop.call_later(delay + 0.1, self.sweep, context=contextvars.Context())

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
                # in a task of its own with an empty context: a cancelled timer stays in the
                # loop's heap until its time (30 s) with the context it was made in, and the
                # caller's (a turn's variables, and a session log through them) must not
                # live on there; cancelling the caller cancels this task too
                task = asyncio.get_running_loop().create_task(
                    _bounded(open_connection(self.dns, target), ms / 1000),
                    context=contextvars.Context(),
                )
                try:
                    return await task
                except asyncio.CancelledError:
                    # the caller was cancelled: a connection the task made anyway (it finished
                    # in the same loop turn as the cancel, or finishes later) is closed, not left
                    # open outside the pool
                    task.add_done_callback(_close_unclaimed)
                    raise
            except TimeoutError:
                where = "the proxy " + target.proxy.shown if target.proxy is not None else ""
                raise ConnectTimeout(
                    f"connect timed out after {ms}ms" + (f" (through {where})" if where else "")
                ) from None
            except OSError as exc:
                if exc.errno not in NO_FDS:
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


def _close_unclaimed(task: asyncio.Task[Connection]) -> None:
    """Close the connection of a connect task whose caller stopped waiting for it."""
    if not task.cancelled() and task.exception() is None:
        task.result().close()


async def _bounded(connect: Awaitable[Connection], seconds: float) -> Connection:
    async with asyncio.timeout(seconds):
        return await connect


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
