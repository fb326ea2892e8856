"""Budgets and rate limits of virtual keys, shared by every process on the log database.

Reserve, then settle. Before the upstream call, one transaction admits the request (and checks the key is still
live: revocation and expiry hold from the next request in every process):

- a key with a budget is admitted while its settled spend plus the reservations of the requests
  in flight stays below the budget, and reserves this request's estimated cost (its estimated
  input plus `max_tokens` of output at the route's list prices);
- a key with `rpm` / `tpm` counts the request and its estimated tokens in the current minute's
  window, admitted while that window is below the limit.

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

from .database import KeyDatabase
from .keystore import NANO, KeyRecord
from .problems import GatewayError

__all__ = ["Admission", "admit", "nano_usd", "settle"]

_NO_LIMIT: Final = 2**62
_MINUTE_MS: Final = 60_000


@dataclass(frozen=True, slots=True)
class Admission:
    """What `admit` booked for one request, to be settled once."""

    key: str
    minute: int
    reserved_nusd: int
    reserved_tokens: int
    windowed: bool


def nano_usd(amount: Decimal) -> int:
    """An amount in integer nano-USD, rounded up."""
    scaled = amount * NANO
    whole = int(scaled)
    return whole + (1 if scaled > whole else 0)


async def admit(
    driver: KeyDatabase, key: KeyRecord, now_ms: int, cost_nusd: int, tokens: int
) -> Admission:
    """Admit one request of `key` (module docstring), or raise the 429 that refuses it."""
    minute = now_ms // _MINUTE_MS
    windowed = key.rpm is not None or key.tpm is not None
    async with driver.transaction() as q:
        state = await q(
            "SELECT revoked_ms, expires_ms FROM modelwire_gateway_keys WHERE name = %s",
            (key.name,),
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
        if windowed:
            rows = await q(
                "INSERT INTO modelwire_gateway_windows (key_name, minute, requests, tokens) "
                "VALUES (%s, %s, 1, %s) ON CONFLICT (key_name, minute) DO UPDATE SET "
                "requests = modelwire_gateway_windows.requests + 1, "
                "tokens = modelwire_gateway_windows.tokens + excluded.tokens "
                "WHERE modelwire_gateway_windows.requests < %s "
                "AND modelwire_gateway_windows.tokens < %s RETURNING requests",
                (key.name, minute, tokens, key.rpm or _NO_LIMIT, key.tpm or _NO_LIMIT),
            )
            if not rows:
                wait_s = -(-((minute + 1) * _MINUTE_MS - now_ms) // 1000)
                limits = ", ".join(
                    f"{n} {v}/min" for n, v in (("rpm", key.rpm), ("tpm", key.tpm)) if v
                )
                raise GatewayError(
                    429,
                    "RATE_LIMIT",
                    f"key {key.name!r} is over its rate limit ({limits}) this minute",
                    retry_after_s=int(wait_s),
                )
    return Admission(key.name, minute, cost_nusd if key.budget_usd else 0, tokens, windowed)


async def settle(driver: KeyDatabase, admission: Admission, cost_nusd: int, tokens: int) -> None:
    """Replace `admission`'s reservation by what the request cost and used."""
    async with driver.transaction() as q:
        await q(
            "UPDATE modelwire_gateway_keys SET reserved_nusd = reserved_nusd - %s, "
            "spent_nusd = spent_nusd + %s WHERE name = %s",
            (admission.reserved_nusd, cost_nusd, admission.key),
        )
        if admission.windowed:
            await q(
                "UPDATE modelwire_gateway_windows SET tokens = tokens + %s "
                "WHERE key_name = %s AND minute = %s",
                (tokens - admission.reserved_tokens, admission.key, admission.minute),
            )
            await q(
                "DELETE FROM modelwire_gateway_windows WHERE key_name = %s AND minute < %s",
                (admission.key, admission.minute - 2),
            )
