"""The SQLite file of a session log: URL to path, opening in WAL mode, the schema check that
refuses a foreign or corrupt file (left untouched), the migration of an older modelwire schema,
and the translation of SQLite errors into `HarnessError`s naming the path (a full disk named as
such). Runs on the log's worker thread.

Schema versions (`PRAGMA user_version`):

1. one row per event in a `WITHOUT ROWID` table keyed by `(session_id, seq)`.
2. (current) a row may hold a run of `event_count` chunk events (seqs `seq` to
   `seq + event_count - 1`, payload a `chunkrun.ChunkRun`); a rowid table, since run rows are
   large, with `UNIQUE (session_id, seq)`. A version-1 file is migrated when it is opened: its
   rows are copied into the new table (each with `event_count = 1`) in one write transaction,
   so a crash leaves either file whole. Older code refuses a version-2 file (`LOG_CORRUPT`).
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Final

from ..errors import ErrorCode, HarnessError
from .urls import redact_url

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SqliteFile", "sqlite_path_from_url"]

APPLICATION_ID: Final = 0x4D574C47
"""`PRAGMA application_id` of a modelwire session log ("MWLG")."""

SCHEMA_VERSION: Final = 2
"""`PRAGMA user_version` of the schema this module writes and reads."""
MIGRATES_FROM: Final = (1,)
"""Older schema versions this module migrates on open."""

_TABLES: Final = ("modelwire_events", "modelwire_meta", "modelwire_sessions")
_EVENTS: Final = (
    """CREATE TABLE modelwire_events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL CHECK (seq >= 0),
        type TEXT NOT NULL,
        time INTEGER NOT NULL,
        data BLOB NOT NULL,
        event_count INTEGER NOT NULL DEFAULT 1 CHECK (event_count >= 1),
        UNIQUE (session_id, seq)
    )""",
    "CREATE INDEX modelwire_events_by_type ON modelwire_events (session_id, type, seq)",
)
_MIGRATE_V1: Final = (
    "ALTER TABLE modelwire_events RENAME TO modelwire_events_v1",
    "DROP INDEX modelwire_events_by_type",
    *_EVENTS,
    "INSERT INTO modelwire_events (session_id, seq, type, time, data) "
    "SELECT session_id, seq, type, time, data FROM modelwire_events_v1 ORDER BY session_id, seq",
    "DROP TABLE modelwire_events_v1",
)
_SCHEMA: Final = (
    *_EVENTS,
    """CREATE TABLE modelwire_sessions (
        session_id TEXT PRIMARY KEY,
        events INTEGER NOT NULL,
        first_time INTEGER NOT NULL,
        last_time INTEGER NOT NULL
    ) WITHOUT ROWID""",
    "CREATE TABLE modelwire_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
)


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


class SqliteFile:
    """The connection-owning half of `SqliteLog` (a mixin): what opening and checking the file
    and translating its errors need. Every `_w_*` method runs on the log's worker thread."""

    _path: str
    _url: str
    _busy_timeout_ms: int
    _conn: sqlite3.Connection | None

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
        # The header is left to SQLite ("file is not a database"): opening and closing the file
        # here would drop every POSIX lock this process's other connections hold on it, and
        # another process could then delete the WAL they still write to.
        if not path.exists() and not path.parent.is_dir():
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
            version = self._w_is_initialized_snapshot()
            if version == 0:
                self._w_initialize()
            elif version != SCHEMA_VERSION:
                self._w_migrate()
            mode = self._w_enable_wal()
            if str(mode).lower() != "wal":
                raise HarnessError(
                    f"SQLite session log {self._path}: cannot enable WAL (journal_mode={mode})",
                    ErrorCode.LOG_UNAVAILABLE,
                )
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc).lower():
                raise self._corrupt(f"not a SQLite database ({exc})", exc) from exc
            if _looks_corrupt(str(exc)):
                raise self._corrupt(str(exc), exc) from exc
            raise self._storage_error(exc, "open the database") from exc

    def _w_is_initialized_snapshot(self) -> int:
        """`_w_is_initialized` inside one read transaction, so a concurrent initializer's commit is
        seen whole or not at all (never tables without their application_id)."""
        conn = self._db
        conn.execute("BEGIN")
        try:
            return self._w_is_initialized()
        finally:
            # SQLite may have rolled back already (a full disk): never let that mask the cause
            self._w_rollback()

    def _w_is_initialized(self) -> int:
        """The schema version of a modelwire log (current or migratable); 0 for an empty
        database; `LOG_CORRUPT` for anything else."""
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
            return 0
        if app_id != APPLICATION_ID:
            listed = ", ".join(sorted(tables)[:5]) or "none"
            raise self._corrupt(
                f"application_id is {app_id:#x}, not modelwire's {APPLICATION_ID:#x} "
                f"(tables: {listed})"
            )
        if version != SCHEMA_VERSION and version not in MIGRATES_FROM:
            raise self._corrupt(
                f"schema version {version} is not the supported version {SCHEMA_VERSION}"
            )
        missing = [name for name in _TABLES if name not in tables]
        if missing:
            raise self._corrupt(f"schema tables missing: {', '.join(missing)}")
        return version

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
            if self._w_is_initialized() == 0:  # another process may have won the race
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _w_migrate(self) -> None:
        """Bring an older modelwire schema to `SCHEMA_VERSION` in one write transaction (another
        process may be doing the same: the version is read again under the write lock)."""
        conn = self._db
        conn.execute("BEGIN IMMEDIATE")
        try:
            if self._w_is_initialized() == 1:
                for statement in _MIGRATE_V1:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _w_rollback(self) -> None:
        conn = self._conn
        if conn is not None and conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")


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
