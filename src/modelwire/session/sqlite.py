"""The embedded session log: one SQLite file in WAL mode behind an async facade.

All SQLite work runs on one dedicated thread per `SqliteLog` (one connection, never shared), so
the event loop never blocks on disk. Appends are group-committed (see `groupcommit.py`): the first
append after a commit takes the database write lock with `BEGIN IMMEDIATE` and reads the session's
`max(seq)` inside that transaction, so seqs stay contiguous even with several instances or
processes on one file; `UNIQUE(session_id, seq)` is the last line of defence. Batch commits run
with `synchronous=NORMAL` (safe against a killed process); `flush()` and barrier appends then
commit a marker row with `synchronous=FULL`, which fsyncs the WAL — the data really reaches disk.

A file that is not a SQLite database, or a SQLite database of another application (checked with
`PRAGMA application_id`, `user_version` and the schema tables), raises `LOG_CORRUPT` naming the
path and is left untouched. Event rows are only ever inserted, never updated or deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final, Self, TypeVar

from ..errors import ErrorCode, HarnessError
from .groupcommit import GroupCommitLog, PendingRow, session_updates
from .log import SessionInfo, StoredRow
from .urls import redact_url

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SqliteLog", "sqlite_path_from_url"]

APPLICATION_ID: Final = 0x4D574C47
"""`PRAGMA application_id` of a modelwire session log ("MWLG")."""

SCHEMA_VERSION: Final = 1
"""`PRAGMA user_version` of the schema this module writes and reads."""

_MAGIC: Final = b"SQLite format 3\x00"
_TABLES: Final = ("modelwire_events", "modelwire_meta", "modelwire_sessions")
_SCHEMA: Final = (
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
_INSERT: Final = (
    "INSERT INTO modelwire_events (session_id, seq, type, time, data) VALUES (?, ?, ?, ?, ?)"
)
_UPSERT_SESSION: Final = (
    "INSERT INTO modelwire_sessions (session_id, events, first_time, last_time) "
    "VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
    "events = excluded.events, last_time = excluded.last_time"
)
_T = TypeVar("_T")


def sqlite_path_from_url(url: str) -> str:
    """The file path of `sqlite:///relative.db` or `sqlite:////absolute/path.db` (SQLAlchemy style).

    Anything else (a host, a query string, an empty path, `:memory:`) raises `LOG_UNAVAILABLE`.
    """
    prefix = "sqlite:///"
    if not url[: len(prefix)].lower() == prefix or "?" in url or "#" in url:
        raise HarnessError(
            f"invalid SQLite log URL {redact_url(url)!r}: expected sqlite:///relative.db or "
            "sqlite:////absolute/path.db (no query string)",
            ErrorCode.LOG_UNAVAILABLE,
        )
    path = url[len(prefix) :]
    if not path or path == ":memory:":
        raise HarnessError(
            f"invalid SQLite log URL {redact_url(url)!r}: a file path is required "
            "(use memory: for a process-local log)",
            ErrorCode.LOG_UNAVAILABLE,
        )
    return path


class SqliteLog(GroupCommitLog):
    """A `SessionLog` in one SQLite file (WAL); open it with `await SqliteLog.open(url)`."""

    def __init__(
        self,
        path: str,
        *,
        url: str,
        commit_rows: int,
        commit_interval_ms: float,
        busy_timeout_ms: int,
        clock: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(
            commit_rows=commit_rows, commit_interval_ms=commit_interval_ms, clock=clock
        )
        self._path = path
        self._url = url
        self._busy_timeout_ms = busy_timeout_ms
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="modelwire-sqlite")
        self._conn: sqlite3.Connection | None = None

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        commit_rows: int = 1024,
        commit_interval_ms: float = 10.0,
        busy_timeout_ms: int = 30_000,
        clock: Callable[[], int] | None = None,
    ) -> Self:
        """Open (creating if absent) the log file named by `url`; see `sqlite_path_from_url`.

        `commit_rows`/`commit_interval_ms` bound a group commit; `busy_timeout_ms` is how long a
        writer waits for another process holding the write lock.
        """
        path = sqlite_path_from_url(url)
        log = cls(
            path,
            url=url,
            commit_rows=commit_rows,
            commit_interval_ms=commit_interval_ms,
            busy_timeout_ms=busy_timeout_ms,
            clock=clock,
        )
        try:
            await log._call(log._w_open)
        except BaseException:
            await log._release()
            raise
        return log

    @property
    def path(self) -> str:
        """The database file path."""
        return self._path

    def describe(self) -> str:
        """The log URL (SQLite URLs carry no credentials)."""
        return self._url

    # ---- thread plumbing ---------------------------------------------------------------------

    async def _call(self, fn: Callable[..., _T], *args: object) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    @property
    def _db(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            raise HarnessError(f"session log {self._url} is not open", ErrorCode.LOG_UNAVAILABLE)
        return conn

    def _storage_error(self, exc: BaseException, action: str) -> HarnessError:
        text = str(exc)
        if isinstance(exc, sqlite3.IntegrityError):
            code = ErrorCode.SEQ_CONFLICT
        elif isinstance(exc, sqlite3.DatabaseError) and _looks_corrupt(text):
            code = ErrorCode.LOG_CORRUPT
        else:
            code = ErrorCode.LOG_UNAVAILABLE
        if isinstance(exc, sqlite3.Error) and _disk_full(exc, self._path):
            text = f"the disk holding it is full ({text})"
        return HarnessError(
            f"SQLite session log {self._path}: cannot {action}: {text}", code, cause=exc
        )

    def _corrupt(self, detail: str, cause: BaseException | None = None) -> HarnessError:
        return HarnessError(
            f"SQLite session log {self._path} is corrupt or foreign: {detail}; the file was "
            "left untouched",
            ErrorCode.LOG_CORRUPT,
            cause=cause,
        )

    # ---- open and schema check (worker thread) -----------------------------------------------

    def _w_open(self) -> None:
        path = Path(self._path)
        if path.is_dir():
            raise HarnessError(
                f"SQLite session log {self._path} is a directory", ErrorCode.LOG_UNAVAILABLE
            )
        if path.exists() and path.stat().st_size > 0:
            try:
                with path.open("rb") as fh:
                    magic = fh.read(len(_MAGIC))
            except OSError as exc:
                raise self._storage_error(exc, "read the file") from exc
            if magic != _MAGIC:
                raise self._corrupt("not a SQLite database (bad file header)")
        elif not path.parent.is_dir():
            raise HarnessError(
                f"SQLite session log {self._path}: directory {str(path.parent)!r} does not exist",
                ErrorCode.LOG_UNAVAILABLE,
            )
        try:
            conn = sqlite3.connect(
                self._path,
                isolation_level=None,
                timeout=self._busy_timeout_ms / 1000.0,
                check_same_thread=True,
            )
        except sqlite3.Error as exc:
            raise self._storage_error(exc, "open the database") from exc
        self._conn = conn
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            if not self._w_is_initialized_snapshot():
                self._w_initialize()
            mode = self._w_enable_wal()
            if str(mode).lower() != "wal":
                raise HarnessError(
                    f"SQLite session log {self._path}: cannot enable WAL (journal_mode={mode})",
                    ErrorCode.LOG_UNAVAILABLE,
                )
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            if _looks_corrupt(str(exc)):
                raise self._corrupt(str(exc), exc) from exc
            raise self._storage_error(exc, "open the database") from exc

    def _w_is_initialized_snapshot(self) -> bool:
        """`_w_is_initialized` inside one read transaction, so a concurrent initializer's commit is
        seen whole or not at all (never tables without their application_id)."""
        conn = self._db
        conn.execute("BEGIN")
        try:
            return self._w_is_initialized()
        finally:
            # SQLite may have rolled back already (a full disk): never let that mask the cause
            self._w_rollback()

    def _w_is_initialized(self) -> bool:
        """True for a modelwire log; False for an empty database; `LOG_CORRUPT` for anything else."""
        conn = self._db
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = {
            str(name)
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        if app_id == 0 and version == 0 and not tables:
            return False
        if app_id != APPLICATION_ID:
            listed = ", ".join(sorted(tables)[:5]) or "none"
            raise self._corrupt(
                f"application_id is {app_id:#x}, not modelwire's {APPLICATION_ID:#x} "
                f"(tables: {listed})"
            )
        if version != SCHEMA_VERSION:
            raise self._corrupt(
                f"schema version {version} is not the supported version {SCHEMA_VERSION}"
            )
        missing = [name for name in _TABLES if name not in tables]
        if missing:
            raise self._corrupt(f"schema tables missing: {', '.join(missing)}")
        return True

    def _w_enable_wal(self) -> str:
        """Switch to WAL, retrying while another connection holds a lock: SQLite answers a
        journal-mode change with "database is locked" at once, without calling the busy handler."""
        deadline = time.monotonic() + self._busy_timeout_ms / 1000.0
        pause = 0.002
        while True:
            try:
                return str(self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _w_initialize(self) -> None:
        conn = self._db
        self._w_enable_wal()
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not self._w_is_initialized():  # another process may have won the race
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # ---- transaction hooks -------------------------------------------------------------------

    async def _tx_begin(self) -> None:
        await self._call(self._db.execute, "BEGIN IMMEDIATE")

    async def _tx_lock(self, session_id: str, *, wait: bool) -> bool:
        return True  # BEGIN IMMEDIATE already holds the database write lock

    async def _tx_next_seq(self, session_id: str) -> int:
        return await self._call(self._w_next_seq, session_id)

    def _w_next_seq(self, session_id: str) -> int:
        row = self._db.execute(
            "SELECT (SELECT max(seq) FROM modelwire_events WHERE session_id = ?), "
            "(SELECT events FROM modelwire_sessions WHERE session_id = ?)",
            (session_id, session_id),
        ).fetchone()
        top, recorded = row
        following = 0 if top is None else int(top) + 1
        if (recorded or 0) != following:
            raise self._corrupt(
                f"session {session_id!r} ends at seq {following - 1} but its sessions row "
                f"records {recorded or 0} event(s)"
            )
        return following

    async def _tx_write(self, rows: Sequence[PendingRow]) -> None:
        await self._call(self._w_write, rows)

    def _w_write(self, rows: Sequence[PendingRow]) -> None:
        conn = self._db
        conn.executemany(_INSERT, rows)
        conn.executemany(_UPSERT_SESSION, session_updates(rows))

    async def _tx_commit(self, *, durable: bool) -> None:
        await self._call(self._w_commit, durable)

    def _w_commit(self, durable: bool) -> None:
        self._db.execute("COMMIT")
        if durable:
            self._w_sync()

    async def _tx_rollback(self) -> None:
        await self._call(self._w_rollback)

    def _w_rollback(self) -> None:
        conn = self._conn
        if conn is not None and conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")

    async def _tx_sync(self) -> None:
        await self._call(self._w_sync)

    def _w_sync(self) -> None:
        """Commit a marker row with `synchronous=FULL`: fsyncs the WAL and all earlier frames."""
        conn = self._db
        conn.execute("PRAGMA synchronous = FULL")
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO modelwire_meta (key, value) VALUES ('last_flush_ms', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(self._clock()),),
            )
            conn.execute("COMMIT")
        finally:
            self._w_rollback()
            conn.execute("PRAGMA synchronous = NORMAL")

    # ---- queries -----------------------------------------------------------------------------

    async def _q_load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        return await self._call(self._w_load, session_id, from_seq, to_seq)

    def _w_load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        sql = "SELECT seq, type, time, data FROM modelwire_events WHERE session_id = ? AND seq >= ?"
        args: tuple[object, ...] = (session_id, from_seq)
        if to_seq is not None:
            sql += " AND seq < ?"
            args = (*args, to_seq)
        rows = self._db.execute(sql + " ORDER BY seq", args).fetchall()
        return [(int(s), str(t), int(at), bytes(d)) for s, t, at, d in rows]

    async def _q_latest(self, session_id: str, type: str) -> StoredRow | None:
        return await self._call(self._w_latest, session_id, type)

    def _w_latest(self, session_id: str, type: str) -> StoredRow | None:
        row = self._db.execute(
            "SELECT seq, type, time, data FROM modelwire_events WHERE session_id = ? AND type = ? "
            "ORDER BY seq DESC LIMIT 1",
            (session_id, type),
        ).fetchone()
        if row is None:
            return None
        seq, name, at, data = row
        return (int(seq), str(name), int(at), bytes(data))

    async def _q_exists(self, session_id: str) -> bool:
        return await self._call(self._w_exists, session_id)

    def _w_exists(self, session_id: str) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM modelwire_sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return row is not None

    async def _q_sessions(self) -> list[SessionInfo]:
        return await self._call(self._w_sessions)

    def _w_sessions(self) -> list[SessionInfo]:
        rows = self._db.execute(
            "SELECT session_id, events, first_time, last_time FROM modelwire_sessions"
        ).fetchall()
        return [SessionInfo(str(s), int(n), int(a), int(b)) for s, n, a, b in rows]

    # ---- teardown ----------------------------------------------------------------------------

    async def _release(self) -> None:
        with contextlib.suppress(Exception):
            await self._call(self._w_close)
        self._executor.shutdown(wait=False)

    def _w_close(self) -> None:
        self._w_rollback()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _disk_full(exc: sqlite3.Error, path: str) -> bool:
    """SQLITE_FULL, or an I/O error (SQLite reports a failed -wal/-shm write as one) while the
    file system holding `path` has no room left."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code == 13:  # SQLITE_FULL
        return True
    if code != 10:  # SQLITE_IOERR
        return False
    try:
        return shutil.disk_usage(Path(path).parent).free < 64 * 1024
    except OSError:
        return False


def _looks_corrupt(text: str) -> bool:
    lowered = text.lower()
    return "malformed" in lowered or "not a database" in lowered or "corrupt" in lowered
