"""The lease statements of the SQLite log, run on its worker thread (`sqlite.py`).

A lease transaction is `BEGIN IMMEDIATE` — the database write lock, the lock every append takes —
so a takeover waits for an open append transaction to commit, and an append's fence check sees
the newest holder. The table is created by the first lease transaction of a file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from .lease import Decision, LeaseRow, check_deletable
from .lease_sql import (
    LEASE_TABLE,
    SELECT_ALL,
    SELECT_ONE,
    UPSERT,
    for_sqlite,
    lease_row,
    select_many,
    upsert_args,
)

__all__ = ["w_delete", "w_fences", "w_lease", "w_leases"]

_SELECT_ONE = for_sqlite(SELECT_ONE)
_UPSERT = for_sqlite(UPSERT)


def _has_table(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'modelwire_leases'"
    ).fetchone()
    return row is not None


def w_lease(
    conn: sqlite3.Connection, session_id: str, decide: Decision, now_ms: int
) -> tuple[LeaseRow | None, LeaseRow | None]:
    """Apply `decide` to the lease row of `session_id` in one write transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(LEASE_TABLE)
        found = conn.execute(_SELECT_ONE, (session_id,)).fetchone()
        before = None if found is None else lease_row(found)
        after = decide(before, now_ms)
        if after is not None:
            conn.execute(_UPSERT, upsert_args(after))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return before, after


def w_delete(conn: sqlite3.Connection, session_id: str, now_ms: int) -> int:
    """Delete the events of `session_id` in one write transaction, once `check_deletable`
    allows it (its lease row, read under the same lock, stays); how many it had."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(LEASE_TABLE)
        found = conn.execute(_SELECT_ONE, (session_id,)).fetchone()
        counted = conn.execute(
            "SELECT events FROM modelwire_sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        events = 0 if counted is None else int(counted[0])
        check_deletable(session_id, None if found is None else lease_row(found), events, now_ms)
        conn.execute("DELETE FROM modelwire_events WHERE session_id = ?", (session_id,))
        conn.execute("DELETE FROM modelwire_sessions WHERE session_id = ?", (session_id,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return events


def w_fences(conn: sqlite3.Connection, session_ids: Sequence[str]) -> dict[str, LeaseRow]:
    """The lease rows of `session_ids`, inside the open write transaction."""
    if not _has_table(conn):
        return {}
    rows = conn.execute(select_many(len(session_ids), "?"), tuple(session_ids)).fetchall()
    return {row.session_id: row for row in map(lease_row, rows)}


def w_leases(conn: sqlite3.Connection) -> list[LeaseRow]:
    """Every lease row."""
    if not _has_table(conn):
        return []
    return [lease_row(row) for row in conn.execute(SELECT_ALL).fetchall()]
