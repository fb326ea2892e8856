"""Client-side rate limits per route: calls wait *before* a 429 rather than after it.

A `RateLimiter` keeps, per route, what its configured `RouteLimits` allow and what the provider
last published (`observe`, fed every response's headers, see `ratelimit_headers`):

- a concurrency limit (`max_concurrency` calls in flight at once);
- a request and a token bucket (`requests_per_minute`, `tokens_per_minute`: full at start,
  refilled continuously, a token estimate taken at `acquire` and corrected at `release`);
- the provider's remaining requests / tokens until their reset (counted down locally by every
  call granted since), and a pause a ``retry-after`` asked for.

`acquire(route, estimated_tokens)` returns a `Permit` at once when everything allows the call,
else waits — FIFO per route, so no call is overtaken — until the earliest moment it may go:
the reset of the spent budget, or the end of an earlier call. Waits longer than `max_wait_s`
that a provider published are cut to it (the call then goes and learns again). Waiting is
cancellable by cancelling the task: the waiter leaves the queue and holds nothing. Each wait is
announced before it starts (`runtime.ratewait`): once for a wait on earlier calls, and once per
reason of a timed wait. `release(permit, used_tokens)` is idempotent.

Time is injected: `clock()` is epoch seconds (provider resets may be wall-clock times) and
`sleep(seconds)` waits; a test passes fakes and never waits in real time.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, TypeAlias

import msgspec

from ..events_ratelimit import RateLimitNotice, WaitReason
from ..runtime.ratewait import notify_rate_limit_wait
from .ratelimit_headers import parse_rate_limit_headers

__all__ = [
    "DEFAULT_MAX_WAIT_S",
    "LIMIT_FIELDS",
    "Permit",
    "RateLimiter",
    "RouteLimits",
    "RouteState",
    "route_limits",
]

DEFAULT_MAX_WAIT_S: Final = 60.0
"""The longest a provider-published reset or retry-after holds a route back."""

_Block: TypeAlias = tuple[float | None, WaitReason, str]
"""Why a call may not go yet: seconds to wait (None: until an earlier call ends), reason, text."""


_EPSILON: Final = 1e-9
"""Bucket levels this close to the need are enough (a refill computed to the need itself lands
a rounding error short of it)."""
_QUEUED: Final[_Block] = (None, "queue", "behind earlier calls")


class RouteLimits(msgspec.Struct, frozen=True, kw_only=True):
    """A route's configured limits (None: no such limit)."""

    max_concurrency: int | None = None
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None


LIMIT_FIELDS: Final = ("max_concurrency", "requests_per_minute", "tokens_per_minute")
"""The config fields of `RouteLimits`, as a route's profile spells them."""


def route_limits(raw: Mapping[str, object], where: str) -> RouteLimits:
    """The `LIMIT_FIELDS` of a config mapping: `max_concurrency` a positive integer, the rates
    positive finite numbers, each absent one no limit. A bad value raises `ValueError` whose
    text names the field (``<where>.max_concurrency must be a positive integer``)."""
    found: list[float | None] = []
    for key in LIMIT_FIELDS:
        value = raw.get(key)
        whole = key == "max_concurrency"
        number = math.nan
        if value is None:
            found.append(None)
            continue
        usable = isinstance(value, int) or (isinstance(value, float) and not whole)
        if usable and isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        if not 0 < number < math.inf:
            kind = "integer" if whole else "finite number"
            raise ValueError(f"{where}.{key} must be a positive {kind}")
        found.append(number)
    most, rpm, tpm = found
    return RouteLimits(
        max_concurrency=None if most is None else int(most),
        requests_per_minute=rpm,
        tokens_per_minute=tpm,
    )


class RouteState(msgspec.Struct, frozen=True, kw_only=True):
    """A look at one route's state (`RateLimiter.state`): calls in flight and waiting, and what
    the provider published that still holds (None: nothing, or its reset passed)."""

    in_flight: int
    waiting: int
    remaining_requests: float | None
    remaining_tokens: float | None
    blocked_until: float | None


class Permit:
    """One granted call: hand it back with `RateLimiter.release` however the call ends."""

    __slots__ = ("released", "route", "tokens")

    def __init__(self, route: str, tokens: int) -> None:
        self.route = route
        self.tokens = tokens
        self.released = False


class _Bucket:
    """`per_minute` units, refilled continuously; the level may go below zero (a debt)."""

    __slots__ = ("at", "capacity", "level", "rate")

    def __init__(self, per_minute: float, now: float) -> None:
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.level = per_minute
        self.at = now

    def fill(self, now: float) -> None:
        if now > self.at:
            self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
            self.at = now

    def wait_for(self, need: float, now: float) -> float:
        """Seconds until `need` units (at most the capacity) are there."""
        self.fill(now)
        need = min(need, self.capacity)
        return 0.0 if self.level >= need - _EPSILON else (need - self.level) / self.rate

    def resize(self, per_minute: float, now: float) -> None:
        self.fill(now)
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.level = min(self.level, per_minute)


class _Waiter:
    __slots__ = ("wake",)

    def __init__(self, wake: asyncio.Future[None]) -> None:
        self.wake = wake


class _Route:
    __slots__ = (
        "blocked_until",
        "in_flight",
        "limits",
        "queue",
        "remaining_requests",
        "remaining_tokens",
        "requests",
        "requests_reset_at",
        "tokens",
        "tokens_reset_at",
    )

    def __init__(self) -> None:
        self.limits = RouteLimits()
        self.in_flight = 0
        self.queue: deque[_Waiter] = deque()
        self.requests: _Bucket | None = None
        self.tokens: _Bucket | None = None
        self.remaining_requests: float | None = None
        self.requests_reset_at = 0.0
        self.remaining_tokens: float | None = None
        self.tokens_reset_at = 0.0
        self.blocked_until = 0.0


def _bucket(bucket: _Bucket | None, per_minute: float | None, now: float) -> _Bucket | None:
    if per_minute is None:
        return None
    if bucket is None:
        return _Bucket(per_minute, now)
    bucket.resize(per_minute, now)
    return bucket


class RateLimiter:
    """The client-side rate limits of every route of one adapter (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._max_wait_s = max_wait_s
        self._routes: dict[str, _Route] = {}

    def _route(self, route: str) -> _Route:
        state = self._routes.get(route)
        if state is None:
            state = self._routes[route] = _Route()
        return state

    def state(self, route: str) -> RouteState:
        """What holds for `route` now."""
        st = self._route(route)
        now = self._clock()
        self._forget_stale(st, now)
        return RouteState(
            in_flight=st.in_flight,
            waiting=len(st.queue),
            remaining_requests=st.remaining_requests,
            remaining_tokens=st.remaining_tokens,
            blocked_until=st.blocked_until if st.blocked_until > now else None,
        )

    async def acquire(
        self, route: str, estimated_tokens: int = 0, *, limits: RouteLimits | None = None
    ) -> Permit:
        """Wait until a call of `route` needing about `estimated_tokens` may go; its permit.

        `limits` (the route's current configuration) replaces the previous one when given.
        """
        st = self._route(route)
        need = max(int(estimated_tokens), 0)
        now = self._clock()
        if limits is not None and limits is not st.limits and limits != st.limits:
            st.limits = limits
            st.requests = _bucket(st.requests, limits.requests_per_minute, now)
            st.tokens = _bucket(st.tokens, limits.tokens_per_minute, now)
        if not st.queue and self._blocked(st, need, now) is None:
            return self._grant(st, route, need)
        waiter = _Waiter(asyncio.get_running_loop().create_future())
        st.queue.append(waiter)
        told_untimed = False
        told_timed: WaitReason | None = None
        try:
            while True:
                now = self._clock()
                block = self._blocked(st, need, now) if st.queue[0] is waiter else _QUEUED
                if block is None:
                    st.queue.popleft()
                    self._kick(st)
                    return self._grant(st, route, need)
                delay, reason, detail = block
                if block is _QUEUED:
                    detail = f"behind {st.queue.index(waiter)} earlier call(s)"
                if delay is None and not told_untimed:
                    told_untimed = True
                elif delay is not None and reason != told_timed:
                    told_timed = reason
                else:
                    await self._pause(waiter, delay)
                    continue
                wait_ms = None if delay is None else delay * 1000.0
                notice = RateLimitNotice(route=route, reason=reason, wait_ms=wait_ms, detail=detail)
                await notify_rate_limit_wait(notice)
        except BaseException:
            if waiter in st.queue:
                st.queue.remove(waiter)
            self._kick(st)
            raise

    def release(self, permit: Permit, used_tokens: int | None = None) -> None:
        """The call of `permit` ended (its `used_tokens`, when known, correct the token
        estimate); a second release of the same permit does nothing."""
        if permit.released:
            return
        permit.released = True
        st = self._route(permit.route)
        st.in_flight -= 1
        if used_tokens is not None and st.tokens is not None:
            bucket = st.tokens
            bucket.fill(self._clock())
            bucket.level = min(bucket.capacity, bucket.level + permit.tokens - used_tokens)
        self._kick(st)

    def observe(self, route: str, headers: Mapping[str, str], now: float | None = None) -> None:
        """Take in what a response of `route` published (its `headers`, arrived at `now`)."""
        now = self._clock() if now is None else now
        facts = parse_rate_limit_headers(headers, now=now)
        if facts is None:
            return
        st = self._route(route)
        most = self._max_wait_s
        if facts.retry_after_s is not None:
            st.blocked_until = max(st.blocked_until, now + min(facts.retry_after_s, most))
        if facts.remaining_requests is not None and facts.requests_reset_s is not None:
            st.remaining_requests = facts.remaining_requests
            st.requests_reset_at = now + min(facts.requests_reset_s, most)
        if facts.remaining_tokens is not None and facts.tokens_reset_s is not None:
            st.remaining_tokens = facts.remaining_tokens
            st.tokens_reset_at = now + min(facts.tokens_reset_s, most)
        self._kick(st)

    # ---- internals ----------------------------------------------------------------------------

    @staticmethod
    def _forget_stale(st: _Route, now: float) -> None:
        if st.remaining_requests is not None and st.requests_reset_at <= now:
            st.remaining_requests = None
        if st.remaining_tokens is not None and st.tokens_reset_at <= now:
            st.remaining_tokens = None

    def _blocked(self, st: _Route, need: int, now: float) -> _Block | None:
        """The longest timed wait that holds, else a concurrency wait, else None (go)."""
        self._forget_stale(st, now)
        waits: list[_Block] = []
        if st.blocked_until > now:
            waits.append((st.blocked_until - now, "retry-after", "the provider asked for a pause"))
        if st.remaining_requests is not None and st.remaining_requests < 1:
            waits.append(
                (st.requests_reset_at - now, "requests", "0 requests remaining until the reset")
            )
        if st.remaining_tokens is not None and st.remaining_tokens < max(need, 1):
            left = max(int(st.remaining_tokens), 0)
            text = f"{left} tokens remaining until the reset, about {need} needed"
            waits.append((st.tokens_reset_at - now, "tokens", text))
        limits = st.limits
        if st.requests is not None and (delay := st.requests.wait_for(1, now)) > 0:
            waits.append((delay, "requests", f"requests_per_minute {limits.requests_per_minute:g}"))
        if st.tokens is not None and (delay := st.tokens.wait_for(need, now)) > 0:
            waits.append((delay, "tokens", f"tokens_per_minute {limits.tokens_per_minute:g}"))
        if waits:
            return max(waits, key=lambda w: w[0] or 0.0)
        most = limits.max_concurrency
        if most is not None and st.in_flight >= most:
            text = f"{st.in_flight} call(s) in flight, max_concurrency {most}"
            return (None, "concurrency", text)
        return None

    @staticmethod
    def _grant(st: _Route, route: str, need: int) -> Permit:
        st.in_flight += 1
        if st.requests is not None:
            st.requests.level -= 1
        if st.tokens is not None:
            st.tokens.level -= need
        if st.remaining_requests is not None:
            st.remaining_requests -= 1
        if st.remaining_tokens is not None:
            st.remaining_tokens -= need
        return Permit(route, need)

    @staticmethod
    def _kick(st: _Route) -> None:
        """Let the head of the queue look again (something changed)."""
        if st.queue:
            wake = st.queue[0].wake
            if not wake.done():
                wake.set_result(None)

    async def _pause(self, waiter: _Waiter, delay: float | None) -> None:
        """Wait `delay` seconds (None: no timer) or until kicked, whichever comes first."""
        wake = waiter.wake
        if not wake.done():
            if delay is None:
                await asyncio.wait((wake,))
            else:
                sleeper = asyncio.ensure_future(self._sleep(delay))
                try:
                    await asyncio.wait((sleeper, wake), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    sleeper.cancel()
                    await asyncio.gather(sleeper, return_exceptions=True)
                if not sleeper.cancelled():
                    sleeper.result()  # an injected sleep that failed raises here
        if wake.done():
            waiter.wake = asyncio.get_running_loop().create_future()
