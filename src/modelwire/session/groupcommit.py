"""Group commit for the durable session-log backends (SQLite and PostgreSQL).

`GroupCommitLog` turns the `SessionLog` storage primitives into a small set of transaction hooks.
The first append after a commit opens one write transaction and takes the session's write lock
(SQLite: the database write lock of `BEGIN IMMEDIATE`; PostgreSQL: a per-session advisory
lock). While that transaction is open this instance is the only writer of the locked sessions,
so seqs are read once from storage (`max(seq) + 1`) and then handed out in memory: an append is a
list append with no I/O. The transaction commits when `commit_rows` rows are buffered, after
`commit_interval_ms`, at a barrier append, at `flush()` and at `close()`. Batch commits may be
"relaxed" (not yet on disk); `flush()` and barrier appends make everything durable.

Failure rule: rows whose seqs were already handed out are never silently dropped. If a commit or
a write fails while such rows exist, the instance becomes broken and every later call raises
`LOG_UNAVAILABLE` (reopen the log; the durable prefix is intact).
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import TypeAlias, TypeVar

from ..errors import ErrorCode, HarnessError
from ..vocab.typing import Coro
from .deadline import Stalled, within
from .log import Row, SessionInfo, SessionLog, StoredRow, stale_write

__all__ = ["GroupCommitLog", "PendingRow", "session_updates"]

PendingRow: TypeAlias = tuple[str, int, str, int, bytes]
"""A row waiting in the open transaction: `(session id, seq, event type, epoch-ms time, payload)`."""

_T = TypeVar("_T")


class GroupCommitLog(SessionLog):
    """A `SessionLog` that buffers appends inside one open, locked write transaction.

    Subclasses implement the `_tx_*` hooks (run one at a time, never concurrently) and the
    `_q_*` queries; this class owns seq assignment, batching, timers and the failure rule.
    """

    def __init__(
        self,
        *,
        commit_rows: int,
        commit_interval_ms: float,
        clock: Callable[[], int] | None = None,
        io_timeout_s: float | None = None,
    ) -> None:
        super().__init__(clock=clock)
        if io_timeout_s is not None and not io_timeout_s > 0:
            raise HarnessError("io_timeout_s must be > 0 (or None)", ErrorCode.INVALID_ARGS)
        self._io_timeout = io_timeout_s
        if commit_rows < 1 or commit_interval_ms <= 0:
            raise HarnessError(
                "commit_rows must be >= 1 and commit_interval_ms > 0", ErrorCode.INVALID_ARGS
            )
        self._commit_rows = commit_rows
        self._commit_interval = commit_interval_ms / 1000.0
        self._gate = asyncio.Lock()
        self._txn_open = False
        self._txn_rows = 0  # acknowledged rows (seqs returned to callers) in the open transaction
        self._pending: list[PendingRow] = []  # of those, rows not yet written to the transaction
        self._next: dict[str, int] = {}  # locked sessions -> next seq
        self._unsynced = False  # a relaxed commit happened since the last durable one
        self._broken: HarnessError | None = None
        self._generation = 0
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[object]] = set()

    # ---- backend hooks -----------------------------------------------------------------------

    @abstractmethod
    async def _tx_begin(self) -> None:
        """Open a write transaction (SQLite: `BEGIN IMMEDIATE`, waiting for other writers)."""

    @abstractmethod
    async def _tx_lock(self, session_id: str, *, wait: bool) -> bool:
        """Take the write lock of `session_id` in the open transaction; False if busy and not `wait`."""

    @abstractmethod
    async def _tx_next_seq(self, session_id: str) -> int:
        """`max(seq) + 1` of `session_id` as stored (0 for a new session), read under its lock."""

    @abstractmethod
    async def _tx_write(self, rows: Sequence[PendingRow]) -> None:
        """Insert `rows` (and maintain the sessions table) inside the open transaction."""

    @abstractmethod
    async def _tx_commit(self, *, durable: bool) -> None:
        """Commit the open transaction; `durable=False` may leave it in OS or server buffers."""

    @abstractmethod
    async def _tx_rollback(self) -> None:
        """Roll the open transaction back; must not raise."""

    @abstractmethod
    async def _tx_sync(self) -> None:
        """Make every earlier relaxed commit of this instance durable (no transaction is open)."""

    @abstractmethod
    async def _q_load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        """Query rows of a session in a seq range, ascending."""

    @abstractmethod
    async def _q_latest(self, session_id: str, type: str) -> StoredRow | None:
        """Query the highest-seq row of a type."""

    @abstractmethod
    async def _q_exists(self, session_id: str) -> bool:
        """Query whether a session has rows."""

    @abstractmethod
    async def _q_sessions(self) -> list[SessionInfo]:
        """Query the sessions table."""

    @abstractmethod
    async def _release(self) -> None:
        """Close connections and threads; must not raise."""

    @abstractmethod
    def _storage_error(self, exc: BaseException, action: str) -> HarnessError:
        """Translate a driver exception raised while doing `action` into a `HarnessError`."""

    def _abandon(self) -> None:
        """Drop the connection at once, without waiting for the server (after a stall)."""

    async def _bounded(self, awaitable: Coro[_T], action: str) -> _T:
        """One storage operation under the client-side deadline `io_timeout_s`, if set."""
        if self._io_timeout is None:
            return await awaitable
        return await within(
            awaitable, self._io_timeout, where=self.describe(), action=action, abandon=self._abandon
        )

    # ---- SessionLog primitives ---------------------------------------------------------------

    async def _store(
        self,
        session_id: str,
        rows: Sequence[Row],
        *,
        barrier: bool,
        expect_seq: int | None = None,
    ) -> int:
        if (
            not barrier
            and self._broken is None
            and self._txn_open
            and not self._gate.locked()
            and session_id in self._next
            and len(self._pending) + len(rows) < self._commit_rows
        ):
            # fast path: no I/O, no suspension; the session is locked by this instance's open
            # transaction, so its next seq in memory is the stored truth
            if expect_seq is not None and expect_seq != self._next[session_id]:
                raise stale_write(session_id, expect_seq, self._next[session_id])
            first = self._buffer(session_id, rows)
            self._txn_rows += len(rows)
            return first
        return await self._shielded(self._store_slow(session_id, rows, barrier, expect_seq))

    async def _flush(self) -> None:
        await self._shielded(self._locked(self._commit, durable=True))

    async def _load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        rows: list[StoredRow] = await self._shielded(
            self._locked(self._read, self._q_load, session_id, from_seq, to_seq)
        )
        for offset, row in enumerate(rows):
            if row[0] != from_seq + offset:
                raise HarnessError(
                    f"session log {self.describe()}: session {session_id!r} is missing seq "
                    f"{from_seq + offset} (next stored seq is {row[0]})",
                    ErrorCode.LOG_CORRUPT,
                )
        return rows

    async def _load_latest(self, session_id: str, type: str) -> StoredRow | None:
        return await self._shielded(self._locked(self._read, self._q_latest, session_id, type))

    async def _exists(self, session_id: str) -> bool:
        return await self._shielded(self._locked(self._read, self._q_exists, session_id))

    async def _list_sessions(self) -> list[SessionInfo]:
        return await self._shielded(self._locked(self._read, self._q_sessions))

    async def _close(self) -> None:
        await self._shielded(self._close_locked())

    # ---- engine ------------------------------------------------------------------------------

    def _buffer(self, session_id: str, rows: Sequence[Row]) -> int:
        first = self._next[session_id]
        pending = self._pending
        seq = first
        for name, at, raw in rows:
            pending.append((session_id, seq, name, at, raw))
            seq += 1
        self._next[session_id] = seq
        return first

    async def _store_slow(
        self, session_id: str, rows: Sequence[Row], barrier: bool, expect_seq: int | None
    ) -> int:
        async with self._gate:
            self._check_usable()
            await self._reserve(session_id)
            if expect_seq is not None and expect_seq != self._next[session_id]:
                raise stale_write(session_id, expect_seq, self._next[session_id])
            first = self._buffer(session_id, rows)
            # Until this returns, these rows are not acknowledged: a failing commit below raises
            # to this caller and only breaks the log if earlier, acknowledged rows were lost.
            if barrier:
                await self._commit(durable=True)
            elif len(self._pending) >= self._commit_rows:
                await self._commit(durable=False)
            else:
                self._txn_rows += len(rows)
            return first

    async def _reserve(self, session_id: str) -> None:
        """Open the transaction if needed and lock `session_id`, learning its next seq."""
        if self._txn_open and session_id in self._next:
            return
        if not self._txn_open:
            await self._begin()
            await self._guard(self._tx_lock(session_id, wait=True), "lock the session")
        elif not await self._guard(self._tx_lock(session_id, wait=False), "lock the session"):
            # Never wait for a lock while holding others (no cross-process deadlock): commit the
            # sessions locked so far, then wait in a fresh transaction.
            await self._commit(durable=False)
            await self._begin()
            await self._guard(self._tx_lock(session_id, wait=True), "lock the session")
        self._next[session_id] = await self._guard(self._tx_next_seq(session_id), "read seq")

    async def _begin(self) -> None:
        try:
            await self._bounded(self._tx_begin(), "begin a transaction")
        except HarnessError:
            raise
        except Exception as exc:
            raise self._storage_error(exc, "begin a transaction") from exc
        self._txn_open = True
        self._txn_rows = 0
        self._generation += 1
        generation = self._generation
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self._commit_interval, self._on_timer, generation)

    async def _guard(self, awaitable: Coro[_T], action: str) -> _T:
        """Run a transaction step; on failure roll back and, if seqs were handed out, break."""
        try:
            return await self._bounded(awaitable, action)
        except BaseException as exc:
            error = exc if isinstance(exc, HarnessError) else self._storage_error(exc, action)
            await self._abort(error)  # raises the "broken" error when rows were lost
            if isinstance(exc, HarnessError) or not isinstance(exc, Exception):
                raise  # a HarnessError as is; cancellation and exits untouched
            raise error from exc

    async def _abort(self, error: HarnessError) -> None:
        lost = self._txn_rows
        self._end_txn()
        await self._tx_rollback()
        if lost and self._broken is None:
            self._broken = HarnessError(
                f"session log {self.describe()} lost {lost} buffered event(s) in a failed "
                f"commit ({error.message}); reopen the log — the durable prefix is intact",
                ErrorCode.LOG_UNAVAILABLE,
                cause=error,
            )
            raise self._broken from error

    def _end_txn(self) -> None:
        self._txn_open = False
        self._txn_rows = 0
        self._pending = []
        self._next.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def _commit(self, *, durable: bool) -> None:
        self._check_usable()
        if not self._txn_open:
            if durable and self._unsynced:
                try:
                    await self._bounded(self._tx_sync(), "sync")
                except HarnessError:
                    raise
                except Exception as exc:
                    raise self._storage_error(exc, "sync") from exc
                self._unsynced = False
            return
        await self._write_pending()
        await self._guard(self._tx_commit(durable=durable), "commit")
        self._end_txn()
        self._unsynced = not durable

    async def _write_pending(self) -> None:
        if self._pending:
            rows, self._pending = self._pending, []
            await self._guard(self._tx_write(rows), "write")

    async def _read(self, query: Callable[..., Coro[_T]], *args: object) -> _T:
        self._check_usable()
        if self._txn_open:
            await self._write_pending()  # read-your-writes: the open transaction sees its rows
        try:
            return await self._bounded(query(*args), "read")
        except Stalled as stalled:
            if self._txn_open:  # the abandoned connection took the open transaction with it
                await self._abort(stalled)
            raise
        except HarnessError:
            raise
        except Exception as exc:
            error = self._storage_error(exc, "read")
            if self._txn_open:
                await self._abort(error)
            raise error from exc

    async def _locked(self, fn: Callable[..., Coro[_T]], *args: object, **kw: object) -> _T:
        async with self._gate:
            return await fn(*args, **kw)

    async def _close_locked(self) -> None:
        async with self._gate:
            try:
                await self._commit(durable=True)  # raises the recorded failure if broken
            finally:
                self._end_txn()
                await self._release()

    def _on_timer(self, generation: int) -> None:
        self._timer = None
        if generation != self._generation or not self._txn_open:
            return
        task = asyncio.get_running_loop().create_task(self._timed_commit(generation))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _timed_commit(self, generation: int) -> None:
        async with self._gate:
            if generation != self._generation or not self._txn_open or self._broken is not None:
                return
            try:
                await self._commit(durable=False)
            except HarnessError:
                return  # recorded in `_broken` when rows were lost; nothing else to report

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise self._broken

    async def _shielded(self, coro: Coro[_T]) -> _T:
        """Run a storage operation to completion even if the caller is cancelled meanwhile."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(_retrieve)
        task.add_done_callback(self._tasks.discard)
        return await asyncio.shield(task)


def _retrieve(task: asyncio.Task[object]) -> None:
    if not task.cancelled():
        task.exception()


def session_updates(rows: Sequence[PendingRow]) -> list[tuple[str, int, int, int]]:
    """One `(session id, event count, first time, last time)` per session in `rows`.

    The first time is only used when the batch creates the session (it then holds seq 0).
    """
    first: dict[str, int] = {}
    last: dict[str, tuple[int, int]] = {}
    for session_id, seq, _, at, _ in rows:
        first.setdefault(session_id, at)
        last[session_id] = (seq, at)
    return [(sid, seq + 1, first[sid], at) for sid, (seq, at) in last.items()]
