"""Group commit for the durable session-log backends (SQLite and PostgreSQL).

`GroupCommitLog` turns the `SessionLog` storage primitives into a small set of transaction hooks.
The first append after a commit opens one write transaction and takes the session's write lock
(SQLite: the database write lock of `BEGIN IMMEDIATE`; PostgreSQL: a per-session advisory lock),
trying at once, without waiting, the sessions the previous transaction wrote to (so a busy
session is re-locked in the same round trip, not one append later). While that transaction is
open this instance is the only writer of the locked sessions, so seqs are read once from storage
(the end of the last row) and then handed out in memory: an append is a list append with no
I/O, and a `ChunkWriter.push` does not even await (the chunks it pushes back to back become one
run row, `pending.py`). The transaction commits (rows written and committed in one step) when
`commit_rows` rows are buffered (a run counts as one), after `commit_interval_ms`, at a barrier
append, at `flush()` and at `close()`. Batch commits may be "relaxed" (not yet on disk);
`flush()` and barrier appends make everything durable. What this instance appended last is kept
for its own reads (`tailcache.py`).

Appends join the open transaction while it writes or reads; only its end refuses them (`_sealing`):
a commit first writes a large pending batch while appends go on, then seals and commits the rest.

Failure rule: rows whose seqs were already handed out are never silently dropped. If a commit or
a write fails while such rows exist, the instance becomes broken and every later call raises
`LOG_UNAVAILABLE` (reopen the log; the durable prefix is intact).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

from ..errors import ErrorCode, HarnessError
from ..vocab.typing import Coro
from .chunkrun import ChunkWriter, contiguous
from .deadline import Stalled, within
from .groupleases import GroupLeases
from .log import Row, SessionInfo, StoredRow, stale_write
from .pending import (
    MAX_PENDING_EVENTS,
    GroupChunkWriter,
    PendingRow,
    PendingRun,
    close_runs,
    seal,
    session_updates,
)
from .tailcache import TailCache

__all__ = ["MAX_PENDING_EVENTS", "GroupCommitLog", "PendingRow", "session_updates"]

_RELOCK: Final = 256  # sessions of the last transaction re-locked by the next one, at most
_EARLY_WRITE: Final = 256  # a commit with this many events pending writes them before sealing

_T = TypeVar("_T")


class GroupCommitLog(GroupLeases):
    """A `SessionLog` that buffers appends inside one open, locked write transaction.

    Subclasses implement the `_tx_*` hooks (run one at a time, never concurrently) and the
    `_q_*` queries (`grouphooks.py`); this class owns seq assignment, batching, timers and the
    failure rule.
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
        self._sealing = False  # the open transaction is ending: nothing more may join it
        self._txn_rows = 0  # acknowledged rows (seqs returned to callers) in the open transaction
        self._pending: list[PendingRow | PendingRun] = []  # of those, not yet written
        self._pending_events = 0  # events in `_pending`
        self._next: dict[str, int] = {}  # locked sessions -> next seq
        self._locked_at: dict[str, int] = {}  # locked sessions -> their next seq when locked
        self._recent: list[str] = []  # sessions the last committed transaction wrote to
        self._unsynced = False  # a relaxed commit happened since the last durable one
        self._broken: HarnessError | None = None
        self._generation = 0
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[object]] = set()
        self._cache = TailCache()  # what this instance appended last, for its own reads

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

    def _fast_ok(self, count: int) -> bool:
        """True when `count` more events can join the open transaction without any I/O."""
        return (
            self._broken is None
            and self._txn_open
            and not self._sealing
            and len(self._pending) + count < self._commit_rows
            and self._pending_events + count < MAX_PENDING_EVENTS
        )

    def _chunk_writer(self, session_id: str, turn: int, step: int, attempt: int) -> ChunkWriter:
        return GroupChunkWriter(self, session_id, turn, step, attempt)

    async def _store(
        self,
        session_id: str,
        rows: Sequence[Row],
        *,
        barrier: bool,
        expect_seq: int | None = None,
    ) -> int:
        if not barrier and session_id in self._next and self._fast_ok(len(rows)):
            # fast path: no I/O, no suspension; the session is locked by this instance's open
            # transaction, so its next seq in memory is the stored truth
            if expect_seq is not None and expect_seq != self._next[session_id]:
                raise stale_write(session_id, expect_seq, self._next[session_id])
            first = self._buffer(session_id, rows)
            self._txn_rows += len(rows)
            self._remember(session_id, first, rows)
            return first
        return await self._shielded(self._store_slow(session_id, rows, barrier, expect_seq))

    async def _flush(self) -> None:
        await self._shielded(self._locked(self._commit, durable=True))

    async def _load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        cached = self._cache.read(session_id, from_seq, to_seq)
        if cached is None:
            return await self._load_stored(session_id, from_seq, to_seq)
        self._check_usable()
        head, end = cached
        if end == to_seq or (
            to_seq is None and self._txn_open and self._next.get(session_id) == end
        ):
            return head  # all cached: while this transaction holds the session, nobody else
            # can have appended past what this instance appended
        return head + await self._load_stored(session_id, end, to_seq)

    async def _load_stored(
        self, session_id: str, from_seq: int, to_seq: int | None
    ) -> list[StoredRow]:
        rows: list[StoredRow] = await self._shielded(
            self._locked(self._read, self._q_load, session_id, from_seq, to_seq)
        )
        return contiguous(rows, from_seq, self.describe(), session_id)

    def _held_end(self, session_id: str) -> int | None:
        """The stored end of `session_id` when this transaction holds it (else None: unknown)."""
        return self._next.get(session_id) if self._txn_open else None

    async def _load_latest(self, session_id: str, type: str) -> StoredRow | None:
        cached = self._cache.latest(session_id, type, self._held_end(session_id))
        if cached is not None:
            self._check_usable()
            return cached[0]
        return await self._shielded(self._locked(self._read, self._q_latest, session_id, type))

    async def _exists(self, session_id: str) -> bool:
        if self._cache.holds(session_id):
            self._check_usable()
            return True
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
            pending.append((session_id, seq, name, at, raw, 1))
            seq += 1
        self._next[session_id] = seq
        self._pending_events += len(rows)
        return first

    def _remember(self, session_id: str, first: int, rows: Sequence[Row]) -> None:
        """Cache acknowledged rows (encoded, as storage returns them) for this instance's reads."""
        self._cache.add(session_id, first, rows)

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
            elif (
                len(self._pending) >= self._commit_rows
                or self._pending_events >= MAX_PENDING_EVENTS
            ):
                await self._commit(durable=False)
            else:
                self._txn_rows += len(rows)
            self._remember(session_id, first, rows)
            return first

    async def _reserve(self, session_id: str) -> None:
        """Open the transaction if needed and lock `session_id`, learning its next seq."""
        if self._txn_open and session_id in self._next:
            return
        if self._txn_open:
            following = await self._guard(self._tx_extend(session_id), "lock the session")
            if following is not None:
                if session_id in self._fences:  # checked under the lock just taken
                    rows = await self._guard(self._tx_fences([session_id]), "check the lease")
                    self._fence_check(session_id, rows.get(session_id), self._clock())
                self._next[session_id] = self._locked_at[session_id] = following
                return
            # Never wait for a lock while holding others (no cross-process deadlock): commit the
            # sessions locked so far, then wait in a fresh transaction.
            await self._commit(durable=False)
        await self._open(session_id)

    async def _open(self, session_id: str) -> None:
        others = [s for s in self._recent if s != session_id][:_RELOCK]
        try:
            locked = await self._bounded(self._tx_open([session_id, *others]), "lock the session")
            await self._bounded(self.fence_locked(locked, session_id), "check the lease")
        except BaseException as exc:
            await self._tx_rollback()
            if isinstance(exc, HarnessError) or not isinstance(exc, Exception):
                raise
            raise self._storage_error(exc, "lock the session") from exc
        self._txn_open = True
        self._txn_rows = 0
        self._next.update(locked)
        self._locked_at.update(locked)
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
        self._recent = []
        self._cache.clear()
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
        self._sealing = False
        self._txn_rows = 0
        close_runs(self._pending)
        self._pending = []
        self._pending_events = 0
        self._next.clear()
        self._locked_at.clear()
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
        if self._pending_events >= _EARLY_WRITE:
            await self._write_pending()  # appends go on meanwhile, into the same transaction
        self._sealing = True  # cleared by `_end_txn` (here, or `_guard`'s rollback)
        pending, self._pending, self._pending_events = self._pending, [], 0
        await self._guard(self._finish(pending, durable), "commit")
        self._recent = [s for s, n in self._next.items() if n != self._locked_at.get(s)]
        self._end_txn()
        self._unsynced = not durable

    async def _finish(self, pending: list[PendingRow | PendingRun], durable: bool) -> None:
        await self._tx_finish(seal(pending), durable=durable)

    async def _write_pending(self) -> None:
        if self._pending:
            pending, self._pending, self._pending_events = self._pending, [], 0
            await self._guard(self._write_sealed(pending), "write")

    async def _write_sealed(self, pending: list[PendingRow | PendingRun]) -> None:
        await self._tx_write(seal(pending))

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
