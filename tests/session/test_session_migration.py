"""Schema version 2 (runs of chunk events) migrates logs written with schema version 1.

The version-1 schema is built here from its DDL, copied verbatim from `sqlite_file.py` and
`postgres.py` as they were before version 2, and filled with rows encoded as version-1 code
wrote them (one JSON payload per event). Opening it with today's code migrates it: every event
reads back unchanged, new appends and pushed chunk runs continue at the next seq, and the file
(or schema) then records version 2, which version-1 code refuses.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from session_helpers import (
    PG_SKIP,
    assert_contiguous,
    create_schema,
    drop_schema,
    pg_url,
    with_search_path,
)

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import AssistantChunk, StepStart, TurnStart, UserMessage, open_log
from modelwire.session.events import encode_event_data
from modelwire.session.sqlite import APPLICATION_ID, SCHEMA_VERSION
from modelwire.vocab import TextDelta, user_message

V1_SQLITE_DDL = (
    """CREATE TABLE modelwire_events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL CHECK (seq >= 0),
        type TEXT NOT NULL,
        time INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID""",
    "CREATE INDEX modelwire_events_by_type ON modelwire_events (session_id, type, seq)",
    """CREATE TABLE modelwire_sessions (
        session_id TEXT PRIMARY KEY,
        events INTEGER NOT NULL,
        first_time INTEGER NOT NULL,
        last_time INTEGER NOT NULL
    ) WITHOUT ROWID""",
    "CREATE TABLE modelwire_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
)
V1_PG_DDL = (
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
        PRIMARY KEY (session_id, seq)
    )""",
    "CREATE INDEX IF NOT EXISTS modelwire_events_by_type ON modelwire_events (session_id, type, seq)",
    "INSERT INTO modelwire_meta (key, value) VALUES ('schema_version', '1') ON CONFLICT DO NOTHING",
)
OLD = [
    TurnStart(1),
    StepStart(1, 1),
    UserMessage(user_message("hello")),
    *(AssistantChunk(1, 1, 1, TextDelta(0, f"old {i}")) for i in range(5)),
]


def v1_rows(session_id: str) -> list[tuple[str, int, str, int, bytes]]:
    """The event rows version-1 code wrote for `OLD`: one encoded payload per event."""
    rows = []
    for seq, data in enumerate(OLD):
        name, raw = encode_event_data(session_id, data)
        rows.append((session_id, seq, name, 1_000 + seq, raw))
    return rows


def write_v1_sqlite(path: Path) -> None:
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA journal_mode = WAL")
        for statement in V1_SQLITE_DDL:
            raw.execute(statement)
        raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        raw.execute("PRAGMA user_version = 1")
        for sid in ("s", "t"):
            raw.executemany("INSERT INTO modelwire_events VALUES (?, ?, ?, ?, ?)", v1_rows(sid))
            raw.execute(
                "INSERT INTO modelwire_sessions VALUES (?, ?, ?, ?)",
                (sid, len(OLD), 1_000, 1_000 + len(OLD) - 1),
            )
    raw.close()


async def continue_after_migration(url: str) -> None:
    log = await open_log(url)
    try:
        for sid in ("s", "t"):
            events = await log.read(sid)
            assert [e.data for e in events] == OLD
            assert [e.time for e in events] == [1_000 + i for i in range(len(OLD))]
        writer = log.chunk_writer("s", 2, 1, 1)
        for i in range(50):
            if writer.push(TextDelta(0, f"new {i}")) < 0:
                await writer.append(TextDelta(0, f"new {i}"))
        await log.append("s", StepStart(2, 1), barrier=True)
    finally:
        await log.close()
    reopened = await open_log(url)
    try:
        events = await reopened.read("s")
        assert_contiguous(events)
        assert [e.data for e in events[: len(OLD)]] == OLD
        texts = [e.data.chunk.text for e in events[len(OLD) : -1]]  # type: ignore[attr-defined]
        assert texts == [f"new {i}" for i in range(50)]
        assert (await reopened.latest("s", "assistant/chunk")).seq == len(OLD) + 49  # type: ignore[union-attr]
        assert (await reopened.sessions())[0].events == len(events)
    finally:
        await reopened.close()


async def test_a_version_1_sqlite_file_is_migrated_and_reads_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    write_v1_sqlite(path)
    await continue_after_migration(f"sqlite:///{path}")
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert raw.execute("SELECT max(event_count) FROM modelwire_events").fetchone()[0] > 1
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "modelwire_events_v1" not in tables
    raw.close()


async def test_a_failed_migration_leaves_the_version_1_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    write_v1_sqlite(path)
    with sqlite3.connect(path) as raw:  # a stray table in the way of the migration's rename
        raw.execute("CREATE TABLE modelwire_events_v1 (x)")
    raw.close()
    with pytest.raises(HarnessError) as info:
        await open_log(f"sqlite:///{path}")
    assert info.value.code in (ErrorCode.LOG_UNAVAILABLE, ErrorCode.LOG_CORRUPT)
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
        assert raw.execute("SELECT count(*) FROM modelwire_events").fetchone()[0] == 2 * len(OLD)
    raw.close()


@pytest.mark.postgres
@pytest.mark.skipif(pg_url() is None, reason=PG_SKIP)
async def test_version_1_postgres_tables_are_migrated_and_read_unchanged() -> None:
    import psycopg

    base = pg_url()
    assert base is not None
    schema = await create_schema(base)
    url = with_search_path(base, schema)
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            for statement in V1_PG_DDL:
                await conn.execute(statement)
            for sid in ("s", "t"):
                async with conn.cursor() as cur:
                    await cur.executemany(
                        "INSERT INTO modelwire_events VALUES (%s, %s, %s, %s, %s)", v1_rows(sid)
                    )
                await conn.execute(
                    "INSERT INTO modelwire_sessions VALUES (%s, %s, %s, %s)",
                    (sid, len(OLD), 1_000, 1_000 + len(OLD) - 1),
                )
        await continue_after_migration(url)
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            cur = await conn.execute(
                "SELECT value FROM modelwire_meta WHERE key = 'schema_version'"
            )
            assert await cur.fetchone() == ("2",)
            cur = await conn.execute("SELECT max(event_count) FROM modelwire_events")
            assert (await cur.fetchone())[0] > 1  # type: ignore[index]
    finally:
        await drop_schema(base, schema)
