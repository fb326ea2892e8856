"""PostgreSQL backend specifics: cross-process serialisation, connection errors, schema checks.

The server tests run only when `MODELWIRE_TEST_POSTGRES_URL` is set (`.ci/run` starts one); each
test works in its own schema, dropped afterwards.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from session_helpers import (
    PG_SKIP,
    Store,
    assert_contiguous,
    make_store,
    pg_url,
    run_writers_together,
)

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import AssistantChunk, TurnStart, open_log
from modelwire.session.postgres import PostgresLog, describe_postgres_url
from modelwire.vocab import TextDelta

needs_pg = pytest.mark.skipif(pg_url() is None, reason=PG_SKIP)


@pytest.fixture
async def pg(tmp_path: Path) -> AsyncIterator[Store]:
    async for store in make_store("postgres", tmp_path):
        yield store


def chunk(text: str) -> AssistantChunk:
    return AssistantChunk(1, 1, 1, TextDelta(0, text))


async def test_unreachable_server_is_log_unavailable_naming_host_and_db_not_password() -> None:
    url = "postgresql://alice:hunter2-secret@127.0.0.1:1/sessions_db?connect_timeout=2"
    with pytest.raises(HarnessError) as info:
        await open_log(url)
    error = info.value
    assert error.code == ErrorCode.LOG_UNAVAILABLE
    assert "127.0.0.1:1" in error.message and "sessions_db" in error.message
    assert "hunter2" not in error.message and "hunter2" not in repr(error.__cause__)


async def test_missing_psycopg_is_log_unavailable_with_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # makes `import psycopg` raise ImportError
    with pytest.raises(HarnessError) as info:
        await open_log("postgresql://user:pw@db.example/x")
    assert info.value.code == ErrorCode.LOG_UNAVAILABLE
    assert "pip install 'psycopg[binary]>=3.1'" in info.value.message  # works without a release
    assert "pip install '.[postgres]'" in info.value.message


def test_described_url_drops_password_and_query() -> None:
    described = describe_postgres_url("postgresql://bob:s3cret@db:5433/app?sslmode=require")
    assert described == "postgresql://bob@db:5433/app"


@pytest.mark.postgres
@needs_pg
@pytest.mark.parametrize("count", [200], ids=["2x200"])
async def test_two_processes_append_to_one_session_without_collision_or_gap(
    pg: Store, count: int
) -> None:
    log = await pg.open()
    await log.append("shared", TurnStart(1), barrier=True)  # creates the tables up front
    await run_writers_together(pg.url, [("shared", "one"), ("shared", "two")], count)
    events = await log.read("shared")
    assert_contiguous(events)
    assert len(events) == 1 + 2 * count
    texts = [e.data.chunk.text for e in events[1:]]  # type: ignore[attr-defined]
    for tag in ("one", "two"):
        assert [t for t in texts if t.startswith(tag)] == [f"{tag}-{i}" for i in range(count)]


@pytest.mark.postgres
@needs_pg
async def test_processes_on_different_sessions_do_not_interfere(pg: Store) -> None:
    log = await pg.open()
    await log.append("warmup", TurnStart(1), barrier=True)
    await run_writers_together(pg.url, [("alpha", "a"), ("beta", "b")], 50)
    for sid, tag in (("alpha", "a"), ("beta", "b")):
        events = await log.read(sid)
        assert_contiguous(events)
        assert [e.data.chunk.text for e in events] == [f"{tag}-{i}" for i in range(50)]  # type: ignore[attr-defined]


@pytest.mark.postgres
@needs_pg
async def test_other_schema_version_is_log_corrupt_and_untouched(pg: Store) -> None:
    import psycopg

    log = await pg.open()
    await log.append("s", TurnStart(1), barrier=True)
    await log.close()
    async with await psycopg.AsyncConnection.connect(pg.url, autocommit=True) as conn:
        await conn.execute("UPDATE modelwire_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(HarnessError) as info:
        await open_log(pg.url)
    assert info.value.code == ErrorCode.LOG_CORRUPT
    assert "'99'" in info.value.message
    async with await psycopg.AsyncConnection.connect(pg.url, autocommit=True) as conn:
        cur = await conn.execute("SELECT count(*) FROM modelwire_events")
        assert (await cur.fetchone()) == (1,)


@pytest.mark.postgres
@needs_pg
async def test_flush_makes_buffered_rows_visible_to_other_connections(pg: Store) -> None:
    log = await PostgresLog.open(pg.url, commit_interval_ms=60_000, commit_rows=10_000)
    pg.opened.append(log)
    other = await pg.open()
    await log.append("s", TurnStart(1), barrier=True)
    await log.append("s", chunk("buffered"))
    assert len(await other.read("s")) == 1
    await log.flush()
    assert len(await other.read("s")) == 2


async def terminate_backend(url: str, log: PostgresLog) -> None:
    import psycopg

    conn = log._conn
    assert conn is not None
    pid = conn.info.backend_pid
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
        await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


@pytest.mark.postgres
@needs_pg
async def test_lost_idle_connection_fails_one_call_then_reconnects(pg: Store) -> None:
    log = await PostgresLog.open(pg.url)
    pg.opened.append(log)
    await log.append("s", TurnStart(1), barrier=True)
    await terminate_backend(pg.url, log)
    with pytest.raises(HarnessError) as info:
        await log.read("s")
    assert info.value.code == ErrorCode.LOG_UNAVAILABLE
    assert (await log.append("s", chunk("after reconnect"), barrier=True)).seq == 1
    assert len(await log.read("s")) == 2


@pytest.mark.postgres
@needs_pg
async def test_connection_lost_with_buffered_events_breaks_the_log(pg: Store) -> None:
    log = await PostgresLog.open(pg.url, commit_interval_ms=60_000)
    pg.opened.append(log)
    await log.append("s", TurnStart(1), barrier=True)
    await log.append("s", chunk("buffered"))
    await terminate_backend(pg.url, log)
    with pytest.raises(HarnessError) as info:
        await log.flush()
    assert info.value.code == ErrorCode.LOG_UNAVAILABLE
    assert "lost 1 buffered event" in info.value.message
    with pytest.raises(HarnessError):
        await log.append("s", chunk("refused"))
    fresh = await pg.open()
    assert [e.data for e in await fresh.read("s")] == [TurnStart(1)]
    assert (await fresh.append("s", chunk("next"))).seq == 1
