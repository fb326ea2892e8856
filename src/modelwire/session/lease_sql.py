"""The SQL of session leases, shared by the SQLite and PostgreSQL logs and the turn queue.

One table, `modelwire_leases`, one row per session ever leased. Statements are written once with
`{p}` for a parameter; `for_sqlite` / `for_postgres` give the driver's spelling.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from .lease import LeaseRow

__all__ = [
    "LEASE_TABLE",
    "SELECT_ALL",
    "SELECT_ONE",
    "UPSERT",
    "for_postgres",
    "for_sqlite",
    "lease_row",
    "select_many",
    "upsert_args",
]

LEASE_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS modelwire_leases (session_id text PRIMARY KEY, "
    "owner text NOT NULL, token bigint NOT NULL, expires_ms bigint NOT NULL)"
)
SELECT_ALL: Final = "SELECT session_id, owner, token, expires_ms FROM modelwire_leases"
SELECT_ONE: Final = SELECT_ALL + " WHERE session_id = {p}"
UPSERT: Final = (
    "INSERT INTO modelwire_leases (session_id, owner, token, expires_ms) "
    "VALUES ({p}, {p}, {p}, {p}) ON CONFLICT (session_id) DO UPDATE SET "
    "owner = excluded.owner, token = excluded.token, expires_ms = excluded.expires_ms"
)


def for_sqlite(statement: str) -> str:
    """`statement` with `?` parameters."""
    return statement.replace("{p}", "?")


def for_postgres(statement: str) -> str:
    """`statement` with `%s` parameters."""
    return statement.replace("{p}", "%s")


def select_many(count: int, placeholder: str) -> str:
    """The lease rows of `count` sessions (`placeholder` per parameter)."""
    return SELECT_ALL + " WHERE session_id IN (" + ", ".join([placeholder] * count) + ")"


def lease_row(row: Sequence[Any]) -> LeaseRow:  # Any: the driver's untyped row
    """A fetched `(session_id, owner, token, expires_ms)`."""
    sid, owner, token, expires = row
    return LeaseRow(str(sid), str(owner), int(token), int(expires))


def upsert_args(row: LeaseRow) -> tuple[str, str, int, int]:
    """The parameters of `UPSERT` for `row`."""
    return (row.session_id, row.owner, row.token, row.expires_ms)
