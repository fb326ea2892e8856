"""Keep-alive pools of `h1.Connection`s, one per event loop: connect (TCP or TLS), reuse, close.

A connection goes back to its pool only after its response was read to the end with keep-alive
(`release`); an idle connection the server closed is dropped when it is next looked for. There is
no limit on connections per host (as with the aiohttp session it replaced on the streaming path),
no proxy from the environment, and TLS verifies against the default trust store
(`ssl.create_default_context()`, so `SSL_CERT_FILE` / `SSL_CERT_DIR` apply), offering ALPN
``http/1.1``.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import socket
import ssl
import weakref
from collections.abc import AsyncGenerator
from typing import Final

from .h1 import Connection, WireError

__all__ = ["Pool", "close_pool", "get_pool", "new_pool", "tls_context"]

_HAPPY_EYEBALLS_S: Final = 0.25
_tls: ssl.SSLContext | None = None
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pool] = weakref.WeakKeyDictionary()

Key = tuple[bool, str, int]
"""(TLS, host, port)."""


def tls_context() -> ssl.SSLContext:
    """The process's client TLS context (default trust store, ALPN http/1.1), made once."""
    global _tls
    if _tls is None:
        context = ssl.create_default_context()
        context.set_alpn_protocols(["http/1.1"])
        _tls = context
    return _tls


def _connect_reason(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return "could not resolve the host"
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return "TLS handshake failed"
    if isinstance(exc, ConnectionRefusedError) or (
        # every address refused (asyncio joins them into one OSError without an errno)
        exc.errno is None and f"[Errno {errno.ECONNREFUSED}]" in str(exc)
    ):
        return "connection refused"
    return "could not connect"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Pool:
    """The connections of one event loop: idle keep-alive ones by (TLS, host, port), and the
    ones lent to a request (closed with the pool, like those idle)."""

    # No reference to the loop itself: the per-loop table is keyed weakly by it.
    __slots__ = ("_busy", "_closed", "_idle", "closer")

    def __init__(self) -> None:
        self._idle: dict[Key, list[Connection]] = {}
        self._busy: set[Connection] = set()
        self._closed = False
        self.closer: AsyncGenerator[None, None] | None = None  # closes the pool at loop shutdown

    async def acquire(self, key: Key) -> Connection:
        """An open connection to `key` (an idle one, else a new one), lent until `release` or
        `drop`; a failed connect raises `WireError` with its reason."""
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.closed and not conn.take():
                self._busy.add(conn)
                return conn
            conn.close()  # closed by the server while idle, or it sent bytes nobody asked for
        tls, host, port = key
        try:
            loop = asyncio.get_running_loop()
            _, conn = await loop.create_connection(
                lambda: Connection(loop),
                host,
                port,
                ssl=tls_context() if tls else None,
                server_hostname=host if tls else None,
                # racing addresses only helps a name with several (an IP literal has one)
                happy_eyeballs_delay=None if _is_ip(host) else _HAPPY_EYEBALLS_S,
            )
        except OSError as exc:
            raise WireError(_connect_reason(exc)) from exc
        if self._closed:
            conn.close()
            raise WireError("the connection pool was closed")
        self._busy.add(conn)
        return conn

    def release(self, key: Key, conn: Connection) -> None:
        """Keep `conn` for the next request to `key` (its response was read whole)."""
        self._busy.discard(conn)
        if self._closed or conn.closed:
            conn.close()
            return
        self._idle.setdefault(key, []).append(conn)

    def drop(self, conn: Connection) -> None:
        """Close `conn` (its response was not read whole, or it may not be reused)."""
        self._busy.discard(conn)
        conn.close()

    def close(self) -> None:
        """Close every connection, idle or lent; a connection released later is closed too."""
        self._closed = True
        idle, self._idle = self._idle, {}
        busy, self._busy = self._busy, set()
        for conns in (*idle.values(), busy):
            for conn in conns:
                conn.close()


def get_pool(loop: asyncio.AbstractEventLoop) -> Pool | None:
    """The pool of `loop`, if one was made."""
    return _pools.get(loop)


def new_pool(loop: asyncio.AbstractEventLoop) -> Pool:
    """A fresh pool for `loop` (replacing, not closing, any earlier one)."""
    pool = _pools[loop] = Pool()
    return pool


def close_pool(loop: asyncio.AbstractEventLoop) -> None:
    """Close the pool of `loop` and forget it (a later request makes a fresh one)."""
    pool = _pools.pop(loop, None)
    if pool is not None:
        pool.close()
