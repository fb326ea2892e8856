"""SQLite backend specifics: file format checks, group commit and flush, failure rule, processes."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from session_helpers import assert_contiguous, run_writers_together

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import AssistantChunk, StepStart, TurnStart, open_log
from modelwire.session.sqlite import APPLICATION_ID, SCHEMA_VERSION, SqliteLog
from modelwire.vocab import TextDelta


def chunk(text: str) -> AssistantChunk:
    return AssistantChunk(1, 1, 1, TextDelta(0, text))


def url_of(path: Path) -> str:
    return f"sqlite:///{path}"


async def expect_code(code: str, path: Path) -> HarnessError:
    with pytest.raises(HarnessError) as info:
        log = await open_log(url_of(path))
        try:
            await log.read("s")
        finally:
            await log.close()
    assert info.value.code == code, info.value.message
    assert str(path) in info.value.message
    return info.value


async def test_new_file_is_wal_with_modelwire_application_id(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    log = await open_log(url_of(path))
    await log.append("s", TurnStart(1), barrier=True)
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert raw.execute("SELECT count(*) FROM modelwire_events").fetchone()[0] == 1
    await log.close()


async def test_relative_url_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    log = await open_log("sqlite:///relative.db")
    assert isinstance(log, SqliteLog) and log.path == "relative.db"
    await log.close()
    assert (tmp_path / "relative.db").exists()


@pytest.mark.parametrize(
    "url",
    ["sqlite:///", "sqlite://host/x.db", "sqlite:///x.db?mode=ro", "sqlite:///:memory:"],
    ids=["empty-path", "host", "query", "memory"],
)
async def test_invalid_sqlite_urls_raise_log_unavailable(url: str) -> None:
    with pytest.raises(HarnessError) as info:
        await open_log(url)
    assert info.value.code == ErrorCode.LOG_UNAVAILABLE
    assert url in info.value.message


async def test_missing_directory_raises_log_unavailable_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "log.db"
    await expect_code(ErrorCode.LOG_UNAVAILABLE, path)
    assert not path.parent.exists()


async def test_random_bytes_file_is_log_corrupt_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    blob = bytes(range(256)) * 64
    path.write_bytes(blob)
    error = await expect_code(ErrorCode.LOG_CORRUPT, path)
    assert "not a SQLite database" in error.message
    assert path.read_bytes() == blob
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.db"]


async def test_foreign_sqlite_database_is_log_corrupt_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "foreign.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        raw.execute("INSERT INTO users (name) VALUES ('ada')")
    raw.close()
    blob = path.read_bytes()
    error = await expect_code(ErrorCode.LOG_CORRUPT, path)
    assert "application_id" in error.message and "users" in error.message
    assert path.read_bytes() == blob


async def test_other_application_id_is_log_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA application_id = 1234")
        raw.execute("CREATE TABLE modelwire_events (x)")
    raw.close()
    error = await expect_code(ErrorCode.LOG_CORRUPT, path)
    assert "0x4d2" in error.message


@pytest.mark.parametrize(
    ("tamper", "detail"),
    [
        (f"PRAGMA user_version = {SCHEMA_VERSION + 1}", "schema version"),
        ("DROP TABLE modelwire_meta", "modelwire_meta"),
    ],
    ids=["newer-schema", "missing-table"],
)
async def test_modelwire_file_with_wrong_schema_is_log_corrupt(
    tmp_path: Path, tamper: str, detail: str
) -> None:
    path = tmp_path / "log.db"
    log = await open_log(url_of(path))
    await log.append("s", TurnStart(1))
    await log.close()
    with sqlite3.connect(path) as raw:
        raw.execute(tamper)
    raw.close()
    error = await expect_code(ErrorCode.LOG_CORRUPT, path)
    assert detail in error.message


async def test_truncated_database_is_log_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    log = await open_log(url_of(path))
    await log.append_many("s", [chunk("x" * 500) for _ in range(400)], barrier=True)
    await log.close()
    blob = path.read_bytes()
    assert len(blob) > 64 * 1024
    path.write_bytes(blob[: len(blob) // 3])
    await expect_code(ErrorCode.LOG_CORRUPT, path)


async def test_stored_payload_not_matching_its_type_names_session_and_seq(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    log = await open_log(url_of(path))
    await log.append_many("s", [TurnStart(1), StepStart(1, 1)], barrier=True)
    await log.close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE modelwire_events SET data = ? WHERE seq = 1", (b'{"turn":"x"}',))
    raw.close()
    log = await open_log(url_of(path))
    with pytest.raises(HarnessError) as info:
        await log.read("s")
    assert info.value.code == ErrorCode.INVALID_EVENT
    assert "'s'" in info.value.message and "seq 1" in info.value.message
    await log.close()


async def test_sessions_row_disagreeing_with_events_is_log_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    log = await open_log(url_of(path))
    await log.append_many("s", [TurnStart(1), StepStart(1, 1)], barrier=True)
    await log.close()
    with sqlite3.connect(path) as raw:
        raw.execute("DELETE FROM modelwire_events WHERE seq = 1")
    raw.close()
    log = await open_log(url_of(path))
    with pytest.raises(HarnessError) as info:
        await log.append("s", StepStart(1, 2))
    assert info.value.code == ErrorCode.LOG_CORRUPT
    assert "'s'" in info.value.message and str(path) in info.value.message
    await log.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT seq FROM modelwire_events").fetchall() == [(0,)]
    raw.close()


async def test_flush_commits_what_group_commit_buffered(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    log = await SqliteLog.open(url_of(path), commit_interval_ms=60_000, commit_rows=10_000)
    await log.append("s", TurnStart(1), barrier=True)
    await log.append("s", chunk("buffered"))

    def committed() -> int:
        with sqlite3.connect(path, timeout=0.1) as raw:
            count = int(raw.execute("SELECT count(*) FROM modelwire_events").fetchone()[0])
        raw.close()
        return count

    assert committed() == 1  # the chunk waits in the open group-commit transaction
    await log.flush()
    assert committed() == 2
    with sqlite3.connect(path) as raw:
        marker = raw.execute("SELECT value FROM modelwire_meta WHERE key = 'last_flush_ms'")
        assert marker.fetchone() is not None
    raw.close()
    await log.close()


async def test_failed_commit_breaks_the_log_and_keeps_the_durable_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.db"
    log = await SqliteLog.open(url_of(path), commit_interval_ms=60_000)
    await log.append("s", TurnStart(1), barrier=True)
    await log.append("s", chunk("will be lost"))

    def disk_error(rows: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(log, "_w_write", disk_error)
    with pytest.raises(HarnessError) as info:
        await log.flush()
    assert info.value.code == ErrorCode.LOG_UNAVAILABLE
    assert "lost 1 buffered event" in info.value.message and str(path) in info.value.message
    monkeypatch.undo()
    for call in (log.flush(), log.append("s", chunk("after")), log.read("s")):
        with pytest.raises(HarnessError) as again:
            await call
        assert again.value.code == ErrorCode.LOG_UNAVAILABLE
    with pytest.raises(HarnessError):
        await log.close()
    reopened = await open_log(url_of(path))
    assert [e.data for e in await reopened.read("s")] == [TurnStart(1)]
    assert (await reopened.append("s", chunk("next"))).seq == 1
    await reopened.close()


async def test_two_processes_append_to_one_sqlite_session_without_collision(
    tmp_path: Path,
) -> None:
    url = url_of(tmp_path / "shared.db")
    await run_writers_together(url, [("s", "one"), ("s", "two")], 150)
    log = await open_log(url)
    events = await log.read("s")
    assert_contiguous(events)
    assert len(events) == 300
    texts = [e.data.chunk.text for e in events]  # type: ignore[attr-defined]
    for tag in ("one", "two"):
        assert [t for t in texts if t.startswith(tag)] == [f"{tag}-{i}" for i in range(150)]
    await log.close()


async def test_a_gap_in_stored_seqs_is_log_corrupt_naming_session_and_seq(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    log = await open_log(url_of(path))
    await log.append_many("s", [TurnStart(1), StepStart(1, 1), StepStart(1, 2)], barrier=True)
    await log.close()
    with sqlite3.connect(path) as raw:
        raw.execute("DELETE FROM modelwire_events WHERE seq = 1")
    raw.close()
    log = await open_log(url_of(path))
    with pytest.raises(HarnessError) as info:
        await log.read("s")
    assert info.value.code == ErrorCode.LOG_CORRUPT
    assert "'s'" in info.value.message and "seq 1" in info.value.message
    assert [e.seq for e in await log.read("s", 2)] == [2]
    await log.close()


async def test_failed_barrier_append_with_nothing_buffered_does_not_break_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.db"
    log = await SqliteLog.open(url_of(path))
    await log.append("s", TurnStart(1), barrier=True)

    def disk_full(rows: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(log, "_w_write", disk_full)
    with pytest.raises(HarnessError) as info:
        await log.append("s", StepStart(1, 1), barrier=True)
    assert info.value.code == ErrorCode.LOG_UNAVAILABLE
    assert "disk is full" in info.value.message and "lost" not in info.value.message
    monkeypatch.undo()
    assert (await log.append("s", StepStart(1, 1), barrier=True)).seq == 1
    assert [e.seq for e in await log.read("s")] == [0, 1]
    await log.close()


async def test_opening_a_log_keeps_the_locks_other_connections_of_the_process_hold(
    tmp_path: Path,
) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it: opening a
    second log must not read the file outside SQLite, or the first connection's locks are gone
    and another process may delete the WAL it still writes to."""
    path = tmp_path / "shared.db"
    await (await SqliteLog.open(f"sqlite:///{path}")).close()
    held = sqlite3.connect(path, isolation_level=None)
    held.execute("SELECT 1 FROM sqlite_master").fetchall()
    inode = path.stat().st_ino

    def mine() -> list[str]:
        with open("/proc/locks", encoding="ascii") as locks:
            return sorted(
                line.split()[3]
                for line in locks
                if f":{inode} " in line and f" {os.getpid()} " in line
            )

    before = mine()
    assert before, "the held connection locks the database file"
    log = await SqliteLog.open(f"sqlite:///{path}")
    try:
        assert set(before) <= set(mine())
    finally:
        await log.close()
        held.close()
