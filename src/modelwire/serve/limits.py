"""Budgets and rate limits of virtual keys, shared by every process on the log database.

Reserve, then settle. Before the upstream call, `admit_in` admits the request inside a transaction
(`ledger.py` runs many in one) and checks the key is still live: revocation and expiry hold from
the next request in every process:

- a key with a budget is admitted while its settled spend plus the reservations of the requests
  in flight stays below the budget, and reserves this request's estimated cost (its estimated
  input plus `max_tokens` of output at the route's list prices);
- a key with `rpm` / `tpm` counts the request and its estimated tokens in the current minute's
  window, admitted while that window is below the limit; a route with its own limits
  (`[gateway.limits.ROUTE]`) has a window of its own, counted for every key and the admin key.

The conditions are checked inside the `UPDATE` / `INSERT … ON CONFLICT` that books the
reservation, so two processes can never both take the last unit: a budget is overspent by at
most what the requests already in flight cost beyond their estimates, and a window never admits
more than its limit. A request refused by a later check undoes what the earlier ones booked, in
the same transaction. After the call, `settle` replaces the reservation by the cost and tokens
the meter measured. Refusals are 429s: `BUDGET_EXCEEDED` (sent with `x-should-retry: false`,
waiting does not refill a budget) or `RATE_LIMIT` with `Retry-After` up to the next minute.
Windows are fixed calendar minutes of the injected clock; rows older than two minutes are
deleted when a request of the key settles.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from ..workers.drivers import Query
from .database import KeyDatabase
from .keystore import NANO, KeyRecord
from .problems import GatewayError

__all__ = [
    "Admission",
    "RouteLimit",
    "admit",
    "admit_in",
    "nano_usd",
    "needs_booking",
    "route_window",
    "settle",
    "settle_in",
]

_NO_LIMIT: Final = 2**62
_MINUTE_MS: Final = 60_000


@dataclass(frozen=True, slots=True)
class RouteLimit:
    """A route's own requests and tokens per minute (`[gateway.limits.ROUTE]`), for every key."""

    rpm: int | None = None
    tpm: int | None = None


@dataclass(frozen=True, slots=True)
class Admission:
    """What `admit` booked for one request, to be settled once: the key (None: the admin key),
    the windows counted (the key's, the route's) and the reservations."""

    key: str | None
    minute: int
    reserved_nusd: int
    reserved_tokens: int
    windows: tuple[str, ...]


def route_window(route: str) -> str:
    """The window name of a route's own limits (key names never start with `@`)."""
    return f"@route/{route}"


def nano_usd(amount: Decimal) -> int:
    """An amount in integer nano-USD, rounded up."""
    scaled = amount * NANO
    whole = int(scaled)
    return whole + (1 if scaled > whole else 0)


async def _check_key(q: Query, key: KeyRecord, now_ms: int, cost_nusd: int) -> bool:
    """Whether the key is live (else the 401), reserving `cost_nusd` of its budget when it has
    one; False when the budget is spent."""
    if key.budget_usd is not None:  # one statement: reserve while live and within the budget
        rows = await q(
            "UPDATE modelwire_gateway_keys SET reserved_nusd = reserved_nusd + %s "
            "WHERE name = %s AND revoked_ms IS NULL AND (expires_ms IS NULL OR expires_ms > %s) "
            "AND spent_nusd + reserved_nusd < budget_nusd RETURNING name",
            (cost_nusd, key.name, now_ms),
        )
        if rows:
            return True
    state = await q(
        "SELECT revoked_ms, expires_ms FROM modelwire_gateway_keys WHERE name = %s", (key.name,)
    )
    revoked, expires = state[0] if state else (now_ms, None)
    if revoked is not None or (expires is not None and now_ms >= int(expires)):
        what = "revoked" if revoked is not None else "expired"
        raise GatewayError(401, "AUTH", f"the gateway key {key.name!r} is {what}")
    return key.budget_usd is None


async def _count(
    q: Query,
    name: str,
    what: str,
    minute: int,
    now_ms: int,
    tokens: int,
    rpm: int | None,
    tpm: int | None,
) -> None:
    rows = await q(
        "INSERT INTO modelwire_gateway_windows (key_name, minute, requests, tokens) "
        "VALUES (%s, %s, 1, %s) ON CONFLICT (key_name, minute) DO UPDATE SET "
        "requests = modelwire_gateway_windows.requests + 1, "
        "tokens = modelwire_gateway_windows.tokens + excluded.tokens "
        "WHERE modelwire_gateway_windows.requests < %s "
        "AND modelwire_gateway_windows.tokens < %s RETURNING requests",
        (name, minute, tokens, rpm or _NO_LIMIT, tpm or _NO_LIMIT),
    )
    if not rows:
        wait_s = -(-((minute + 1) * _MINUTE_MS - now_ms) // 1000)
        limits = ", ".join(f"{n} {v}/min" for n, v in (("rpm", rpm), ("tpm", tpm)) if v)
        raise GatewayError(
            429,
            "RATE_LIMIT",
            f"{what} is over its rate limit ({limits}) this minute",
            retry_after_s=int(wait_s),
        )


async def _undo(q: Query, booked: Admission) -> None:
    """Take back what a refused admission booked before its refusal (same transaction)."""
    if booked.key is not None and booked.reserved_nusd:
        await q(
            "UPDATE modelwire_gateway_keys SET reserved_nusd = reserved_nusd - %s WHERE name = %s",
            (booked.reserved_nusd, booked.key),
        )
    for name in booked.windows:
        await q(
            "UPDATE modelwire_gateway_windows SET requests = requests - 1, tokens = tokens - %s "
            "WHERE key_name = %s AND minute = %s",
            (booked.reserved_tokens, name, booked.minute),
        )


def needs_booking(key: KeyRecord | None, route_limit: RouteLimit | None) -> bool:
    """Whether a request of `key` has anything to book: a budget, a key window or a route's."""
    if route_limit is not None:
        return True
    return key is not None and (
        key.budget_usd is not None or key.rpm is not None or key.tpm is not None
    )


async def admit_in(
    q: Query,
    key: KeyRecord | None,
    now_ms: int,
    cost_nusd: int,
    tokens: int,
    route: str | None = None,
    route_limit: RouteLimit | None = None,
) -> Admission:
    """Admit one request of `key` (None: the admin key) on `route` inside the transaction `q`
    (module docstring), or raise the 401 or 429 that refuses it, having undone what it booked."""
    minute = now_ms // _MINUTE_MS
    budgeted = key is not None and key.budget_usd is not None
    name = None if key is None else key.name
    booked = Admission(name, minute, 0, tokens, ())
    try:
        if key is not None:
            if not await _check_key(q, key, now_ms, cost_nusd):
                raise GatewayError(
                    429,
                    "BUDGET_EXCEEDED",
                    f"key {key.name!r} has spent its budget of ${key.budget_usd} USD",
                )
            booked = Admission(name, minute, cost_nusd if budgeted else 0, tokens, ())
            if key.rpm is not None or key.tpm is not None:
                await _count(
                    q, key.name, f"key {key.name!r}", minute, now_ms, tokens, key.rpm, key.tpm
                )
                booked = Admission(name, minute, booked.reserved_nusd, tokens, (key.name,))
        if route is not None and route_limit is not None:
            window = route_window(route)
            what = f"route {route!r}"
            await _count(q, window, what, minute, now_ms, tokens, route_limit.rpm, route_limit.tpm)
            booked = Admission(
                name, minute, booked.reserved_nusd, tokens, (*booked.windows, window)
            )
    except GatewayError:
        await _undo(q, booked)
        raise
    return booked


async def admit(
    driver: KeyDatabase,
    key: KeyRecord | None,
    now_ms: int,
    cost_nusd: int,
    tokens: int,
    *,
    route: str | None = None,
    route_limit: RouteLimit | None = None,
) -> Admission:
    """`admit_in` in a transaction of its own."""
    async with driver.transaction() as q:
        return await admit_in(q, key, now_ms, cost_nusd, tokens, route, route_limit)


async def settle_in(
    q: Query, settlements: list[tuple[Admission, int, int]], swept: dict[str, int] | None = None
) -> None:
    """Replace the reservations of `settlements` (admission, cost, tokens) by what the requests
    cost and used, inside the transaction `q`: one statement per key and per window. Windows
    older than two minutes are deleted, once a minute per window when `swept` (window name →
    the minute last swept) is kept across calls."""
    keys: dict[str, tuple[int, int]] = {}
    windows: dict[tuple[str, int], int] = {}
    for admission, cost_nusd, tokens in settlements:
        if admission.key is not None and (admission.reserved_nusd or cost_nusd):
            reserved, spent = keys.get(admission.key, (0, 0))
            keys[admission.key] = (reserved + admission.reserved_nusd, spent + cost_nusd)
        for name in admission.windows:
            at = (name, admission.minute)
            windows[at] = windows.get(at, 0) + tokens - admission.reserved_tokens
    for name, (reserved, spent) in keys.items():
        await q(
            "UPDATE modelwire_gateway_keys SET reserved_nusd = reserved_nusd - %s, "
            "spent_nusd = spent_nusd + %s WHERE name = %s",
            (reserved, spent, name),
        )
    for (name, minute), delta in windows.items():
        if delta:
            await q(
                "UPDATE modelwire_gateway_windows SET tokens = tokens + %s "
                "WHERE key_name = %s AND minute = %s",
                (delta, name, minute),
            )
    for name in {name for name, _ in windows}:
        newest = max(minute for n, minute in windows if n == name)
        if swept is not None:
            if swept.get(name) == newest:
                continue
            if len(swept) >= 10_000:
                swept.clear()
            swept[name] = newest
        await q(
            "DELETE FROM modelwire_gateway_windows WHERE key_name = %s AND minute < %s",
            (name, newest - 2),
        )


async def settle(driver: KeyDatabase, admission: Admission, cost_nusd: int, tokens: int) -> None:
    """`settle_in` of one admission in a transaction of its own."""
    async with driver.transaction() as q:
        await settle_in(q, [(admission, cost_nusd, tokens)])
