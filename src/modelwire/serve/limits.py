"""Budgets and rate limits of virtual keys, shared by every process on the log database.

Reserve, then settle. Before the upstream call, one transaction admits the request (and checks the key is still
live: revocation and expiry hold from the next request in every process):

- a key with a budget is admitted while its settled spend plus the reservations of the requests
  in flight stays below the budget, and reserves this request's estimated cost (its estimated
  input plus `max_tokens` of output at the route's list prices);
- a key with `rpm` / `tpm` counts the request and its estimated tokens in the current minute's
  window, admitted while that window is below the limit; a route with its own limits
  (`[gateway.limits.ROUTE]`) has a window of its own, counted for every key and the admin key.

The conditions are checked inside the `UPDATE` / `INSERT … ON CONFLICT` that books the
reservation, so two processes can never both take the last unit: a budget is overspent by at
most what the requests already in flight cost beyond their estimates, and a window never admits
more than its limit. After the call, `settle` replaces the reservation by the cost and tokens
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

__all__ = ["Admission", "RouteLimit", "admit", "nano_usd", "route_window", "settle"]

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


async def _check_key(q: Query, key: KeyRecord, now_ms: int, cost_nusd: int) -> None:
    state = await q(
        "SELECT revoked_ms, expires_ms FROM modelwire_gateway_keys WHERE name = %s", (key.name,)
    )
    revoked, expires = state[0] if state else (now_ms, None)
    if revoked is not None or (expires is not None and now_ms >= int(expires)):
        what = "revoked" if revoked is not None else "expired"
        raise GatewayError(401, "AUTH", f"the gateway key {key.name!r} is {what}")
    if key.budget_usd is not None:
        rows = await q(
            "UPDATE modelwire_gateway_keys SET reserved_nusd = reserved_nusd + %s "
            "WHERE name = %s AND spent_nusd + reserved_nusd < budget_nusd RETURNING name",
            (cost_nusd, key.name),
        )
        if not rows:
            raise GatewayError(
                429,
                "BUDGET_EXCEEDED",
                f"key {key.name!r} has spent its budget of ${key.budget_usd} USD",
            )


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
    """Admit one request of `key` (None: the admin key) on `route` (module docstring), or raise
    the 401 or 429 that refuses it."""
    minute = now_ms // _MINUTE_MS
    windows: list[str] = []
    async with driver.transaction() as q:
        if key is not None:
            await _check_key(q, key, now_ms, cost_nusd)
            if key.rpm is not None or key.tpm is not None:
                await _count(
                    q, key.name, f"key {key.name!r}", minute, now_ms, tokens, key.rpm, key.tpm
                )
                windows.append(key.name)
        if route is not None and route_limit is not None:
            name = route_window(route)
            await _count(
                q,
                name,
                f"route {route!r}",
                minute,
                now_ms,
                tokens,
                route_limit.rpm,
                route_limit.tpm,
            )
            windows.append(name)
    budgeted = key is not None and key.budget_usd is not None
    return Admission(
        None if key is None else key.name,
        minute,
        cost_nusd if budgeted else 0,
        tokens,
        tuple(windows),
    )


async def settle(driver: KeyDatabase, admission: Admission, cost_nusd: int, tokens: int) -> None:
    """Replace `admission`'s reservation by what the request cost and used."""
    async with driver.transaction() as q:
        if admission.key is not None:
            await q(
                "UPDATE modelwire_gateway_keys SET reserved_nusd = reserved_nusd - %s, "
                "spent_nusd = spent_nusd + %s WHERE name = %s",
                (admission.reserved_nusd, cost_nusd, admission.key),
            )
        for name in admission.windows:
            await q(
                "UPDATE modelwire_gateway_windows SET tokens = tokens + %s "
                "WHERE key_name = %s AND minute = %s",
                (tokens - admission.reserved_tokens, name, admission.minute),
            )
            await q(
                "DELETE FROM modelwire_gateway_windows WHERE key_name = %s AND minute < %s",
                (name, admission.minute - 2),
            )
