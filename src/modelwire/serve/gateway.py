"""The gateway's shared state and the checks every request passes before its upstream call.

`Gateway` holds the runtime, the log, the database driver of the keys and limits, the parsed
`[gateway]` config, the metrics and the injected clock. `authenticate` finds the caller's key
(`Authorization: Bearer mwk_…`, or `x-api-key` where the endpoint allows it; the admin key of
`$MODELWIRE_ADMIN_KEY` is a key without limits): missing → 401, unknown, revoked or expired →
401. `targets` turns the client's `model` (an alias or `route:model`) into the chain of targets
the key may use: an unknown alias or route is a 404, a route the key may not use a 403.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field

from ..errors import LlmError
from ..retry.fallback_chain import FallbackTarget
from ..runtime import LlmRuntime
from ..session.log import SessionLog
from ..vocab import ResolvedModelInfo
from .config import GatewayConfig
from .database import KeyDatabase
from .keystore import KeyRecord, find_key, hash_key
from .ledger import Ledger
from .metrics import GatewayMetrics
from .problems import GatewayError, failure_error

__all__ = ["ADMIN", "Caller", "Gateway", "authenticate", "targets"]

ADMIN = "admin"
"""The key name the admin key's requests are logged under."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the key's record (None for the admin key) and its name."""

    name: str
    record: KeyRecord | None


class _SessionTurn:
    """The lock of one session in this process and how many requests hold or want it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class Gateway:
    """Everything the handlers share (module docstring)."""

    runtime: LlmRuntime
    log: SessionLog
    driver: KeyDatabase | None
    config: GatewayConfig
    routes: tuple[str, ...]
    admin_key: str | None = None
    clock: Callable[[], int] = _now_ms
    metrics: GatewayMetrics = field(default_factory=GatewayMetrics)
    draining: bool = False
    declared: tuple[str, ...] = ()
    """The routes the config file declares (what `GET /v1/models` lists)."""
    _infos: dict[FallbackTarget, ResolvedModelInfo] = field(default_factory=dict)
    _ending: set[asyncio.Task[None]] = field(default_factory=set)
    _keys: dict[str, KeyRecord] = field(default_factory=dict)  # by hash
    _sessions: dict[str, _SessionTurn] = field(default_factory=dict)
    ledger: Ledger | None = None
    """The keys' admissions and settlements, group-committed (None without a keys' database)."""

    def __post_init__(self) -> None:
        if self.driver is not None and self.ledger is None:
            self.ledger = Ledger(self.driver)

    async def enter_session(self, session_id: str) -> None:
        """Wait until no other request of this process runs in `session_id`, then take it: a
        session takes one request at a time, so its turns are numbered in order."""
        entry = self._sessions.get(session_id)
        if entry is None:
            entry = self._sessions[session_id] = _SessionTurn()
        entry.users += 1
        try:
            await entry.lock.acquire()
        except BaseException:
            self._release(session_id, entry, held=False)
            raise

    def leave_session(self, session_id: str) -> None:
        """Hand `session_id` to its next waiting request."""
        entry = self._sessions.get(session_id)
        if entry is not None:
            self._release(session_id, entry, held=True)

    def _release(self, session_id: str, entry: _SessionTurn, *, held: bool) -> None:
        if held:
            entry.lock.release()
        entry.users -= 1
        if entry.users == 0:
            del self._sessions[session_id]

    async def identify(self, key: str) -> KeyRecord | None:
        """The record of `key` (None: no such key). Known keys are cached: a key's limits never
        change, and revocation and expiry are checked again in the admission transaction."""
        if self.driver is None:
            return None
        digest = hash_key(key)
        record = self._keys.get(digest)
        if record is None:
            record = await find_key(self.driver, key)
            if record is not None:
                if len(self._keys) >= 10_000:
                    self._keys.clear()
                self._keys[digest] = record
        return record

    def track(self, work: Coroutine[object, object, None]) -> asyncio.Task[None]:
        """Run `work` (a request's end) as a task that shutdown waits for (`drain`)."""
        task = asyncio.ensure_future(work)
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)
        return task

    async def drain(self) -> None:
        """Wait for every request's end still running."""
        while self._ending:
            await asyncio.gather(*self._ending, return_exceptions=True)

    async def model_info(self, target: FallbackTarget) -> ResolvedModelInfo:
        """The target's model info (cached per process); unknown → the error of its code."""
        info = self._infos.get(target)
        if info is None:
            try:
                info = await self.runtime.resolve_model_info(target.route, target.model)
            except LlmError as exc:
                raise failure_error(exc.failure, str(target)) from None
            self._infos[target] = info
        return info

    async def model_info_or_none(self, target: FallbackTarget) -> ResolvedModelInfo | None:
        """`model_info`, or None when the lookup fails (the call then fails on its own)."""
        try:
            return await self.model_info(target)
        except GatewayError:
            return None


def _bearer(headers: Mapping[str, str], x_api_key: bool) -> str | None:
    auth = headers.get("Authorization")
    if auth is not None:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    if x_api_key:
        given = headers.get("x-api-key")
        if given:
            return given.strip()
    return None


async def authenticate(gateway: Gateway, headers: Mapping[str, str], *, x_api_key: bool) -> Caller:
    """The caller of a request (module docstring)."""
    key = _bearer(headers, x_api_key)
    where = "Authorization: Bearer mwk_…" + (" or x-api-key" if x_api_key else "")
    if key is None:
        raise GatewayError(401, "AUTH", f"no gateway key: send {where}")
    admin = gateway.admin_key
    if admin and hmac.compare_digest(key.encode(), admin.encode()):
        return Caller(ADMIN, None)
    record = await gateway.identify(key)
    if record is None:
        raise GatewayError(401, "AUTH", "the gateway key is not valid")
    if not record.live(gateway.clock()):
        state = "revoked" if record.revoked_ms is not None else "expired"
        raise GatewayError(401, "AUTH", f"the gateway key {record.name!r} is {state}")
    return Caller(record.name, record)


def _split(gateway: Gateway, model: str) -> FallbackTarget:
    alias = gateway.config.aliases.get(model)
    if alias is not None:
        return alias
    route, sep, name = model.partition(":")
    if not sep or not route or not name:
        known = ", ".join(sorted(gateway.config.aliases)) or "none"
        raise GatewayError(
            404,
            "UNKNOWN_MODEL",
            f'model {model!r} is neither "route:model" nor an alias of [gateway.models] '
            f"(aliases: {known})",
        )
    if route not in gateway.routes:
        raise GatewayError(
            404,
            "NO_ADAPTER",
            f"model {model!r}: no route {route!r} (routes: {', '.join(gateway.routes)})",
        )
    return FallbackTarget(route, name)


def targets(gateway: Gateway, model: str, caller: Caller) -> tuple[FallbackTarget, ...]:
    """The chain of targets `caller` may use for `model` (module docstring)."""
    first = _split(gateway, model)
    record = caller.record
    if record is not None and not record.may_use(first.route):
        allowed = ", ".join(record.routes or ())
        raise GatewayError(
            403,
            "AUTH",
            f"the key {record.name!r} may not use route {first.route!r} (allowed: {allowed})",
        )
    chain = (first, *gateway.config.fallbacks.get(first, ()))
    if record is None:
        return chain
    return tuple(t for t in chain if record.may_use(t.route))
