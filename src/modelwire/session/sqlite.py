"""The embedded session log: one SQLite file in WAL mode behind an async facade.

All SQLite work runs on one dedicated thread per `SqliteLog` (one connection, never shared), so
the event loop never blocks on disk. Appends are group-committed (see `groupcommit.py`): the first
append after a commit takes the database write lock with `BEGIN IMMEDIATE` and reads the session's
`max(seq)` inside that transaction, so seqs stay contiguous even with several instances or
processes on one file; `UNIQUE(session_id, seq)` is the last line of defence. A transaction of
leased sessions only (every agent's and worker's) holds no lock across an await instead: a paused
process must not freeze the file for every other one. Its seqs are read without the lock and the
write lock is taken only inside the one call that checks them (and the fences) and commits
(`_w_commit_leased`); an unleased session joining it takes the lock from then on. Batch commits run
with `synchronous=NORMAL` (safe against a killed process); `flush()` and barrier appends then
commit a marker row with `synchronous=FULL`, which fsyncs the WAL — the data really reaches disk.

A file that is not a SQLite database, or a SQLite database of another application (checked with
`PRAGMA application_id`, `user_version` and the schema tables), raises `LOG_CORRUPT` naming the
path and is left untouched. Event rows are only ever inserted, never updated or deleted; a row
may hold a run of chunk events (`event_count`, see `chunkrun.py` and `sqlite_file.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, Self, TypeVar

from ..errors import ErrorCode, HarnessError
from .chunkrun import StoredRun
from .groupcommit import GroupCommitLog
from .lease import Decision, LeaseRow, fence_error
from .log import SessionInfo, StoredRow
from .pending import PendingRow, session_updates
from .sqlite_file import APPLICATION_ID, SCHEMA_VERSION, SqliteFile, sqlite_path_from_url
from .sqlite_leases import w_delete, w_fences, w_lease, w_leases

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SqliteLog", "sqlite_path_from_url"]

_INSERT: Final = (
    "INSERT INTO modelwire_events (session_id, seq, type, time, data, event_count) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_COLUMNS: Final = "SELECT seq, type, time, data, event_count FROM modelwire_events"
_UPSERT_SESSION: Final = (
    "INSERT INTO modelwire_sessions (session_id, events, first_time, last_time) "
    "VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
    "events = excluded.events, last_time = excluded.last_time"
)
_T = TypeVar("_T")


class SqliteLog(SqliteFile, GroupCommitLog):
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
        # a transaction of leased sessions, holding no lock: session -> its stored next seq
        # expected at the next write (None: no such transaction open)
        self._unlocked: dict[str, int] | None = None

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

    # ---- transaction hooks -------------------------------------------------------------------

    async def _tx_open(self, session_ids: Sequence[str]) -> dict[str, int]:
        fences = self._fences
        if session_ids[0] in fences:  # leased: no lock held until the write (module docstring)
            leased = [sid for sid in session_ids if sid in fences]
            return await self._call(self._w_open_leased, leased)
        return await self._call(self._w_open_txn, session_ids)

    def _w_open_leased(self, session_ids: Sequence[str]) -> dict[str, int]:
        seqs = {sid: self._w_next_seq(sid) for sid in session_ids}
        self._unlocked = dict(seqs)
        return seqs

    def _w_extend_leased(self, session_id: str) -> int:
        assert self._unlocked is not None
        seq = self._unlocked[session_id] = self._w_next_seq(session_id)
        return seq

    def _w_lock_leased(self) -> None:
        """An unleased session joins: take the write lock now, the seqs read so far checked."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._w_check_leased()
        except BaseException:
            self._w_abort()
            raise
        self._unlocked = None

    def _w_check_leased(self) -> None:
        """Under the write lock: every session still ends where this transaction expects."""
        for sid, expected in (self._unlocked or {}).items():
            stored = self._w_next_seq(sid)
            if stored != expected:
                raise HarnessError(
                    f"session log {self._url}: session {sid!r} was appended to by another "
                    f"writer (it ends at seq {stored - 1}, this writer expected {expected - 1}) "
                    "although this writer holds its lease",
                    ErrorCode.SEQ_CONFLICT,
                )

    def _w_commit_leased(
        self, rows: Sequence[PendingRow], fences: dict[str, int], now_ms: int, final: bool
    ) -> set[str]:
        """Write `rows` of a leased transaction and commit, in one call under the write lock:
        the seqs read without it are checked first, and the rows of a session whose lease was
        lost meanwhile (its `fences` token no longer live) are left out — its writer was
        presumed dead; its next append is refused `LEASE_LOST`. Returns those sessions."""
        conn = self._db
        conn.execute("BEGIN IMMEDIATE")
        try:
            stored = w_fences(conn, list(fences))
            refused = {
                sid
                for sid, token in fences.items()
                if fence_error(sid, token, stored.get(sid), now_ms) is not None
            }
            unlocked = self._unlocked or {}
            for sid in refused:
                unlocked.pop(sid, None)
            self._w_check_leased()
            kept = [row for row in rows if row[0] not in refused] if refused else rows
            if kept:
                self._w_write(kept)
            conn.execute("COMMIT")
        except BaseException:
            self._w_abort()
            raise
        if final or self._unlocked is None:
            self._unlocked = None
        else:
            for sid, seq, *_, count in kept:
                unlocked[sid] = max(unlocked.get(sid, 0), seq + count)
        return refused

    def _w_abort(self) -> None:
        self._unlocked = None
        self._w_rollback()

    def _forget(self, refused: set[str]) -> None:
        """Rows of `refused` sessions were left out: this instance's own reads must not see them."""
        if refused:
            self._cache.clear()

    def _fences_of(self, rows: Sequence[PendingRow]) -> dict[str, int]:
        fences = self._fences
        return {sid: fences[sid] for sid in {row[0] for row in rows} if sid in fences}

    def _w_open_txn(self, session_ids: Sequence[str]) -> dict[str, int]:
        # BEGIN IMMEDIATE takes the database write lock: every session is locked with it
        self._db.execute("BEGIN IMMEDIATE")
        try:
            return {sid: self._w_next_seq(sid) for sid in session_ids}
        except BaseException:
            self._w_rollback()
            raise

    async def _tx_extend(self, session_id: str) -> int | None:
        if self._unlocked is not None:
            if session_id in self._fences:
                return await self._call(self._w_extend_leased, session_id)
            await self._call(self._w_lock_leased)
        return await self._call(self._w_next_seq, session_id)

    def _w_next_seq(self, session_id: str) -> int:
        row = self._db.execute(
            "SELECT (SELECT seq + event_count FROM modelwire_events WHERE session_id = ? "
            "ORDER BY seq DESC LIMIT 1), "
            "(SELECT events FROM modelwire_sessions WHERE session_id = ?)",
            (session_id, session_id),
        ).fetchone()
        top, recorded = row
        following = 0 if top is None else int(top)
        if (recorded or 0) != following:
            raise self._corrupt(
                f"session {session_id!r} ends at seq {following - 1} but its sessions row "
                f"records {recorded or 0} event(s)"
            )
        return following

    async def _tx_write(self, rows: Sequence[PendingRow]) -> None:
        if self._unlocked is not None:  # committed at once: no lock outlives the call
            fences = self._fences_of(rows)
            self._forget(
                await self._call(self._w_commit_leased, rows, fences, self._clock(), False)
            )
            return
        await self._call(self._w_write, rows)

    def _w_write(self, rows: Sequence[PendingRow]) -> None:
        conn = self._db
        conn.executemany(_INSERT, rows)
        conn.executemany(_UPSERT_SESSION, session_updates(rows))

    async def _tx_finish(self, rows: Sequence[PendingRow], *, durable: bool) -> None:
        if self._unlocked is not None:
            fences = self._fences_of(rows)
            self._forget(await self._call(self._w_commit_leased, rows, fences, self._clock(), True))
            if durable:
                await self._call(self._w_sync)
            return
        await self._call(self._w_finish, rows, durable)

    def _w_finish(self, rows: Sequence[PendingRow], durable: bool) -> None:
        if rows:
            self._w_write(rows)
        self._db.execute("COMMIT")
        if durable:
            self._w_sync()

    async def _tx_rollback(self) -> None:
        await self._call(self._w_abort)

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

    async def _tx_lease(
        self, session_id: str, decide: Decision, now_ms: int
    ) -> tuple[LeaseRow | None, LeaseRow | None]:
        return await self._call(w_lease, self._db, session_id, decide, now_ms)

    async def _tx_fences(self, session_ids: Sequence[str]) -> dict[str, LeaseRow]:
        return await self._call(w_fences, self._db, session_ids)

    async def _q_leases(self) -> list[LeaseRow]:
        return await self._call(w_leases, self._db)

    async def _tx_delete(self, session_id: str, now_ms: int) -> int:
        return await self._call(w_delete, self._db, session_id, now_ms)

    # ---- queries -----------------------------------------------------------------------------

    async def _q_load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        return await self._call(self._w_load, session_id, from_seq, to_seq)

    def _w_load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        # from the row holding `from_seq` (a run may start before it)
        sql = (
            f"{_COLUMNS} WHERE session_id = ?1 AND seq >= coalesce((SELECT max(seq) FROM "
            "modelwire_events WHERE session_id = ?1 AND seq <= ?2), ?2)"
        )
        args: tuple[object, ...] = (session_id, from_seq)
        if to_seq is not None:
            sql += " AND seq < ?3"
            args = (*args, to_seq)
        return [_row(r) for r in self._db.execute(sql + " ORDER BY seq", args).fetchall()]

    async def _q_latest(self, session_id: str, type: str) -> StoredRow | None:
        return await self._call(self._w_latest, session_id, type)

    def _w_latest(self, session_id: str, type: str) -> StoredRow | None:
        row = self._db.execute(
            f"{_COLUMNS} WHERE session_id = ? AND type = ? ORDER BY seq DESC LIMIT 1",
            (session_id, type),
        ).fetchone()
        return None if row is None else _row(row)

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


def _row(row: tuple[Any, ...]) -> StoredRow:  # Any: sqlite3 rows are untyped
    """A loaded row: one event's tuple, or a `StoredRun` when it holds several."""
    seq, name, at, data, count = row
    if count > 1:
        return StoredRun(int(seq), int(count), int(at), bytes(data))
    return (int(seq), str(name), int(at), bytes(data))
