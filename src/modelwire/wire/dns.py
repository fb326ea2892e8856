"""A small DNS cache for new connections: a name is resolved once per `ttl_s` (300 s, as the
aiohttp path before it), for at most `max_names` names; concurrent look-ups of one name share a
single `getaddrinfo`. IP literals are never looked up. The clock is injected (tests advance it).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Callable
from typing import Final

__all__ = ["DEFAULT_DNS_TTL_S", "AddrInfo", "Resolver"]

DEFAULT_DNS_TTL_S: Final = 300.0
_MAX_NAMES: Final = 256

AddrInfo = tuple[
    int, int, int, str, tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]
]
"""One `socket.getaddrinfo` answer: family, type, proto, canonname, sockaddr."""


def _literal(host: str, port: int) -> list[AddrInfo] | None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if address.version == 6:
        return [(socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (host, port, 0, 0))]
    return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (host, port))]


def _interleaved(infos: list[AddrInfo]) -> list[AddrInfo]:
    """Addresses alternating between families, in the resolver's order (RFC 8305 §4)."""
    by_family: dict[int, list[AddrInfo]] = {}
    for info in infos:
        by_family.setdefault(info[0], []).append(info)
    if len(by_family) < 2:
        return infos
    out: list[AddrInfo] = []
    lists = list(by_family.values())
    for i in range(max(len(x) for x in lists)):
        out.extend(x[i] for x in lists if i < len(x))
    return out


class Resolver:
    """Cached name resolution (see the module docstring)."""

    __slots__ = ("_cache", "_clock", "_pending", "max_names", "ttl_s")

    def __init__(
        self,
        *,
        ttl_s: float = DEFAULT_DNS_TTL_S,
        max_names: int = _MAX_NAMES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_names = max_names
        self._clock = clock
        self._cache: dict[tuple[str, int], tuple[float, list[AddrInfo]]] = {}
        self._pending: dict[tuple[str, int], asyncio.Future[list[AddrInfo]]] = {}

    def cached(self, host: str, port: int) -> list[AddrInfo] | None:
        """The unexpired answer for `host`:`port`, if any."""
        entry = self._cache.get((host, port))
        if entry is None:
            return None
        if self._clock() >= entry[0]:
            del self._cache[(host, port)]
            return None
        return entry[1]

    async def resolve(self, host: str, port: int) -> list[AddrInfo]:
        """The addresses of `host`:`port` (a `socket.gaierror` when it does not resolve)."""
        literal = _literal(host, port)
        if literal is not None:
            return literal
        found = self.cached(host, port)
        if found is not None:
            return found
        key = (host, port)
        pending = self._pending.get(key)
        if pending is not None:
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this caller was cancelled
                return await self.resolve(host, port)  # the first asker was: ask again
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[AddrInfo]] = loop.create_future()
        self._pending[key] = future
        try:
            infos = await loop.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
            )
            answer = _interleaved(list(infos))
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            elif not future.done():
                future.set_exception(exc)
                future.exception()  # retrieved: nobody else may be waiting
            raise
        finally:
            del self._pending[key]
        if len(self._cache) >= self.max_names:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = (self._clock() + self.ttl_s, answer)
        future.set_result(answer)
        return answer
