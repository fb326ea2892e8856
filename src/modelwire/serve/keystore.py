"""Virtual keys in the log database: created, listed, revoked, and found by their hash.

A key is `mwk_` + 43 url-safe characters (256 random bits); the database holds its SHA-256 (a
fast hash suffices for a key of that entropy: a leaked table does not give the keys back) and
its first 8 characters for people to tell keys apart. Each key has a name (unique), optional
limits — a budget in USD, requests and tokens per minute, the routes it may use — and an expiry.
Spend and the per-minute windows live beside it (`limits.py`), so every `modelwire serve`
process on the database enforces the same limits (on SQLite in the log's sibling file
`…-keys`, `database.py`).

Tables, created on first use (`ensure_tables`): `modelwire_gateway_keys` and
`modelwire_gateway_windows`. Money is stored in integer nano-USD, so budget arithmetic is exact
and happens inside one SQL statement.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from ..errors import ErrorCode, HarnessError
from ..workers.drivers import Query
from .database import KeyDatabase, open_database

__all__ = [
    "KEY_PREFIX",
    "NANO",
    "KeyRecord",
    "create_key",
    "ensure_tables",
    "find_key",
    "hash_key",
    "list_keys",
    "open_keys",
    "revoke_key",
]

KEY_PREFIX: Final = "mwk_"
NANO: Final = Decimal(1_000_000_000)
"""Nano-USD per USD: the unit spend and budgets are stored in."""

_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS modelwire_gateway_keys (
        name TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL UNIQUE,
        key_start TEXT NOT NULL,
        budget_nusd BIGINT,
        rpm BIGINT,
        tpm BIGINT,
        routes TEXT,
        expires_ms BIGINT,
        created_ms BIGINT NOT NULL,
        revoked_ms BIGINT,
        spent_nusd BIGINT NOT NULL DEFAULT 0,
        reserved_nusd BIGINT NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS modelwire_gateway_windows (
        key_name TEXT NOT NULL,
        minute BIGINT NOT NULL,
        requests BIGINT NOT NULL DEFAULT 0,
        tokens BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (key_name, minute)
    )""",
)
_COLUMNS: Final = (
    "name, key_start, budget_nusd, rpm, tpm, routes, expires_ms, created_ms, revoked_ms, "
    "spent_nusd, reserved_nusd"
)


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """One virtual key as stored (never the key itself)."""

    name: str
    key_start: str
    budget_usd: Decimal | None
    rpm: int | None
    tpm: int | None
    routes: tuple[str, ...] | None
    expires_ms: int | None
    created_ms: int
    revoked_ms: int | None
    spent_usd: Decimal
    reserved_usd: Decimal

    def may_use(self, route: str) -> bool:
        """Whether the key may call `route`."""
        return self.routes is None or route in self.routes

    def live(self, now_ms: int) -> bool:
        """Not revoked and not expired at `now_ms`."""
        return self.revoked_ms is None and (self.expires_ms is None or now_ms < self.expires_ms)


def hash_key(key: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _record(row: tuple[object, ...]) -> KeyRecord:
    name, start, budget, rpm, tpm, routes, expires, created, revoked, spent, reserved = row
    return KeyRecord(
        name=str(name),
        key_start=str(start),
        budget_usd=None if budget is None else Decimal(int(str(budget))) / NANO,
        rpm=None if rpm is None else int(str(rpm)),
        tpm=None if tpm is None else int(str(tpm)),
        routes=None if routes is None else tuple(r for r in str(routes).split(",") if r),
        expires_ms=None if expires is None else int(str(expires)),
        created_ms=int(str(created)),
        revoked_ms=None if revoked is None else int(str(revoked)),
        spent_usd=Decimal(int(str(spent))) / NANO,
        reserved_usd=Decimal(int(str(reserved))) / NANO,
    )


async def open_keys(url: str) -> KeyDatabase:
    """A driver on the log database `url` (SQLite or PostgreSQL), the log created or checked
    first: the gateway's tables live in a modelwire log, never in a foreign file."""
    from ..session import open_log

    await (await open_log(url)).close()
    driver = open_database(url)
    async with driver.transaction() as q:
        await ensure_tables(q)
    return driver


async def ensure_tables(q: Query) -> None:
    """Create the gateway's tables when absent (inside a transaction)."""
    for statement in _TABLES:
        await q(statement, ())


async def create_key(
    driver: KeyDatabase,
    name: str,
    now_ms: int,
    *,
    budget_usd: Decimal | None = None,
    rpm: int | None = None,
    tpm: int | None = None,
    routes: tuple[str, ...] | None = None,
    expires_ms: int | None = None,
) -> str:
    """Store a new key named `name` and return it (the only time it is seen)."""
    if not name or name.strip() != name or "," in name:
        raise HarnessError(
            f"key name {name!r} must be non-empty, without commas or surrounding spaces",
            ErrorCode.INVALID_ARGS,
        )
    if name.startswith("@"):
        raise HarnessError(f"key name {name!r} must not start with @", ErrorCode.INVALID_ARGS)
    if name == "admin":
        raise HarnessError(
            'the key name "admin" is the admin key\'s ($MODELWIRE_ADMIN_KEY)',
            ErrorCode.INVALID_ARGS,
        )
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    budget = None if budget_usd is None else int(budget_usd * NANO)
    async with driver.transaction() as q:
        await ensure_tables(q)
        if await q("SELECT 1 FROM modelwire_gateway_keys WHERE name = %s", (name,)):
            raise HarnessError(f"a key named {name!r} exists already", ErrorCode.INVALID_ARGS)
        await q(
            "INSERT INTO modelwire_gateway_keys (name, key_hash, key_start, budget_nusd, rpm, "
            "tpm, routes, expires_ms, created_ms) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                name,
                hash_key(key),
                key[:8],
                budget,
                rpm,
                tpm,
                None if routes is None else ",".join(routes),
                expires_ms,
                now_ms,
            ),
        )
    return key


async def find_key(driver: KeyDatabase, key: str) -> KeyRecord | None:
    """The record of `key`, or None when no key hashes to it."""
    async with driver.transaction() as q:
        await ensure_tables(q)
        rows = await q(
            f"SELECT {_COLUMNS} FROM modelwire_gateway_keys WHERE key_hash = %s", (hash_key(key),)
        )
    return _record(rows[0]) if rows else None


async def list_keys(driver: KeyDatabase) -> list[KeyRecord]:
    """Every key, by name."""
    async with driver.transaction() as q:
        await ensure_tables(q)
        rows = await q(f"SELECT {_COLUMNS} FROM modelwire_gateway_keys ORDER BY name", ())
    return [_record(row) for row in rows]


async def revoke_key(driver: KeyDatabase, name: str, now_ms: int) -> bool:
    """Revoke the key named `name`; False when there is none (or it was revoked already)."""
    async with driver.transaction() as q:
        await ensure_tables(q)
        rows = await q(
            "UPDATE modelwire_gateway_keys SET revoked_ms = %s WHERE name = %s AND "
            "revoked_ms IS NULL RETURNING name",
            (now_ms, name),
        )
    return bool(rows)
