"""The SQL of the PostgreSQL session log: the schema and its migration, the batch write, the
row query columns, and how a fetched row becomes a loaded row (`postgres.py` runs them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from .chunkrun import StoredRun
from .lease import LeaseRow, check_deletable
from .lease_sql import LEASE_TABLE
from .log import StoredRow

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

__all__ = [
    "COLUMNS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "TABLES",
    "WRITE",
    "delete_session",
    "ensure_schema",
    "stored_row",
]

SCHEMA_VERSION: Final = "2"
"""The `schema_version` row of `modelwire_meta` this module writes and reads."""
TABLES: Final = ("modelwire_meta", "modelwire_sessions", "modelwire_events")
SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS modelwire_meta (key text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE IF NOT EXISTS modelwire_sessions (
        session_id text PRIMARY KEY,
        events bigint NOT NULL,
        first_time bigint NOT NULL,
        last_time bigint NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS modelwire_events (
        session_id text NOT NULL,
        seq bigint NOT NULL CHECK (seq >= 0),
        type text NOT NULL,
        time bigint NOT NULL,
        data bytea NOT NULL,
        event_count integer NOT NULL DEFAULT 1 CHECK (event_count >= 1),
        PRIMARY KEY (session_id, seq)
    )""",
    "CREATE INDEX IF NOT EXISTS modelwire_events_by_type ON modelwire_events (session_id, type, seq)",
    "INSERT INTO modelwire_meta (key, value) VALUES ('schema_version', '2') ON CONFLICT DO NOTHING",
)
MIGRATE_V1: Final = (
    "ALTER TABLE modelwire_events ADD COLUMN IF NOT EXISTS event_count integer NOT NULL "
    "DEFAULT 1 CHECK (event_count >= 1)",
    "UPDATE modelwire_meta SET value = '2' WHERE key = 'schema_version'",
)
# One statement (one round trip) writes a batch: its rows and the sessions they extend. Arrays
# travel as binary parameters, so payloads are sent verbatim.
WRITE: Final = (
    "WITH written AS (INSERT INTO modelwire_events "
    "(session_id, seq, type, time, data, event_count) "
    "SELECT * FROM unnest(%b::text[], %b::int8[], %b::text[], %b::int8[], %b::bytea[], "
    "%b::int4[])) "
    "INSERT INTO modelwire_sessions (session_id, events, first_time, last_time) "
    "SELECT * FROM unnest(%b::text[], %b::int8[], %b::int8[], %b::int8[]) "
    "ON CONFLICT (session_id) DO UPDATE SET "
    "events = EXCLUDED.events, last_time = EXCLUDED.last_time"
)
COLUMNS: Final = "SELECT seq, type, time, data, event_count FROM modelwire_events"


async def ensure_schema(conn: psycopg.AsyncConnection[TupleRow], namespace: int) -> str | None:
    """Create the tables if absent, migrate version 1, return the recorded schema version.

    Runs in one transaction under the advisory lock `(namespace, 0)`, committed durably."""
    async with conn.transaction():
        await conn.execute("SET LOCAL synchronous_commit = on")
        await conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (namespace,))
        cur = await conn.execute(
            "SELECT " + ", ".join(f"to_regclass('{name}') IS NOT NULL" for name in TABLES)
        )
        present = await cur.fetchone()
        if not (present and all(present)):
            for statement in SCHEMA:
                await conn.execute(statement)
        await conn.execute(LEASE_TABLE)  # added beside schema version 2 (older code ignores it)
        cur = await conn.execute("SELECT value FROM modelwire_meta WHERE key = 'schema_version'")
        row = await cur.fetchone()
        if row is not None and row[0] == "1":
            for statement in MIGRATE_V1:
                await conn.execute(statement)
            return SCHEMA_VERSION
    return None if row is None else str(row[0])


async def delete_session(
    conn: psycopg.AsyncConnection[TupleRow], namespace: int, session_id: str, now_ms: int
) -> int:
    """Delete the events of `session_id` in one transaction under its append lock, once
    `check_deletable` allows it (its lease row stays); how many it had."""
    async with conn.transaction():
        await conn.execute("SET LOCAL synchronous_commit = on")
        await conn.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (namespace, session_id)
        )
        cur = await conn.execute(
            "SELECT (SELECT events FROM modelwire_sessions WHERE session_id = %(s)s), "
            "l.owner, l.token, l.expires_ms FROM (SELECT 1) AS one LEFT JOIN modelwire_leases l "
            "ON l.session_id = %(s)s",
            {"s": session_id},
        )
        counted, owner, token, expires = await cur.fetchone() or (None, None, None, None)
        row = None if token is None else LeaseRow(session_id, str(owner), int(token), int(expires))
        events = 0 if counted is None else int(counted)
        check_deletable(session_id, row, events, now_ms)
        await conn.execute("DELETE FROM modelwire_events WHERE session_id = %s", (session_id,))
        await conn.execute("DELETE FROM modelwire_sessions WHERE session_id = %s", (session_id,))
    return events


def stored_row(row: tuple[Any, ...]) -> StoredRow:  # Any: the driver's untyped row
    """A fetched `(seq, type, time, data, event_count)`: one event's tuple, or a `StoredRun`."""
    seq, name, at, data, count = row
    if int(count) > 1:
        return StoredRun(int(seq), int(count), int(at), bytes(data))
    return (int(seq), str(name), int(at), bytes(data))
