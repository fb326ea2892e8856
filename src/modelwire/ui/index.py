"""`LogIndex`: the inspector's read-through caches over one session log.

Both caches are incremental — a cached projection remembers its next seq and reads only what was
appended since — and guarded by one lock per session, so concurrent requests never fold an event
twice. Session views (`SessionFold`) are kept for the `max_views` most recently used sessions;
list summaries (`SessionSummary`, a few hundred bytes each) for every session listed.

A page of the list never waits on a giant session: `rows(..., budget=N)` folds inline only while
the page's unread events stay within N, and summarizes the rest in the background (those rows are
`pending`; the page asks again).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

from ..errors import ErrorCode, HarnessError
from ..session import SessionInfo, SessionLog
from .fold import SessionFold
from .payloads import SessionRow
from .reader import BATCH, read_batches, read_range
from .summary import SessionSummary

__all__ = ["LogIndex"]

_CONCURRENCY: Final = 8
"""Sessions summarized at once (PostgreSQL serves them in parallel; SQLite queues them)."""

PAGE_BUDGET: Final = 50_000
"""Unread events a list page folds before answering; bigger backlogs are summarized behind it."""

BACKGROUND_BATCH: Final = 500
"""Events a background summary folds between two yields to the requests being served."""

BACKGROUND_DELAY: Final = 0.05
"""Seconds a background summary waits, so the page that deferred it goes out first."""


class LogIndex:
    """Cached projections of the sessions of `log` (see the module docstring)."""

    def __init__(self, log: SessionLog, *, max_views: int = 16, batch: int = BATCH) -> None:
        self.log = log
        self._max_views = max_views
        self._batch = batch
        self._views: OrderedDict[str, SessionFold] = OrderedDict()
        self._summaries: dict[str, SessionSummary] = {}
        self._view_locks: dict[str, asyncio.Lock] = {}
        self._summary_locks: dict[str, asyncio.Lock] = {}
        self._background: dict[str, asyncio.Task[SessionSummary]] = {}

    async def infos(self) -> list[SessionInfo]:
        """Every session of the log with its event count and first/last times."""
        return await self.log.sessions()

    async def fold(self, session_id: str, *, max_events: int | None = None) -> SessionFold:
        """The session's view, caught up with the log (`SESSION_NOT_FOUND` when unknown).

        With `max_events`, at most about that many new events are folded by this call (the
        first page of a giant session); `fold.caught_up` tells whether it reached the end.
        """
        lock = self._view_locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            fold = self._views.get(session_id)
            if fold is None:
                fold = SessionFold(session_id)
            try:
                read, complete = 0, True
                batches = read_batches(self.log, session_id, fold.next_seq, batch=self._batch)
                async with contextlib.aclosing(batches):
                    async for events in batches:
                        fold.apply_all(events)
                        read += len(events)
                        if max_events is not None and read >= max_events:
                            complete = False
                            break
                fold.caught_up = complete
                attempt = fold.open_attempt() if complete else None
                if attempt is not None and attempt.first_seq is not None:
                    last = attempt.last_seq if attempt.last_seq is not None else attempt.first_seq
                    chunks = await read_range(self.log, session_id, attempt.first_seq, last + 1)
                    fold.prime_draft(attempt, chunks)
            except HarnessError as err:
                if err.code == ErrorCode.SESSION_NOT_FOUND:
                    self._views.pop(session_id, None)
                raise
            self._views[session_id] = fold
            self._views.move_to_end(session_id)
            while len(self._views) > self._max_views:
                evicted, _ = self._views.popitem(last=False)
                self._view_locks.pop(evicted, None)
            return fold

    async def summary(self, info: SessionInfo, *, batch: int | None = None) -> SessionSummary:
        """The list projection of one session, caught up to `info.events`."""
        sid = info.session_id
        lock = self._summary_locks.setdefault(sid, asyncio.Lock())
        async with lock:
            summary = self._summaries.get(sid)
            if summary is None or summary.next_seq > info.events:  # new, or removed and re-created
                summary = self._summaries[sid] = SessionSummary()
            if summary.next_seq < info.events:
                async for events in read_batches(
                    self.log, sid, summary.next_seq, batch=batch or self._batch
                ):
                    summary.apply_all(events)
                    if batch is not None:
                        await asyncio.sleep(0)  # in the background: let requests go first
            return summary

    async def rows(
        self, infos: Sequence[SessionInfo], *, budget: int | None = None
    ) -> list[SessionRow]:
        """List rows of `infos`, in order (summaries computed a few at a time).

        With `budget`, sessions whose unread events would exceed it (largest backlog first) are
        summarized in the background and come back as `pending` rows.
        """
        deferred: set[str] = set()
        if budget is not None:
            backlog = sorted((self._unread(info), info.session_id) for info in infos)
            spent = 0
            for unread, sid in backlog:
                spent += unread
                if spent > budget and unread:
                    deferred.add(sid)
        gate = asyncio.Semaphore(_CONCURRENCY)

        async def one(info: SessionInfo) -> SessionRow:
            if info.session_id in deferred:
                return SessionSummary.pending_row(info)
            async with gate:
                return (await self.summary(info)).row(info)

        rows = list(await asyncio.gather(*(one(info) for info in infos)))
        for info in infos:
            if info.session_id in deferred:
                self._summarize_later(info)
        return rows

    def _unread(self, info: SessionInfo) -> int:
        summary = self._summaries.get(info.session_id)
        done = summary.next_seq if summary is not None and summary.next_seq <= info.events else 0
        return info.events - done

    def _summarize_later(self, info: SessionInfo) -> None:
        sid = info.session_id
        if sid in self._background:
            return
        task = asyncio.get_running_loop().create_task(self._summarize(info))
        self._background[sid] = task
        task.add_done_callback(lambda done: self._settled(sid, done))

    async def _summarize(self, info: SessionInfo) -> SessionSummary:
        await asyncio.sleep(BACKGROUND_DELAY)
        return await self.summary(info, batch=BACKGROUND_BATCH)

    def _settled(self, sid: str, task: asyncio.Task[SessionSummary]) -> None:
        if self._background.get(sid) is task:
            del self._background[sid]
        if not task.cancelled():
            task.exception()  # retrieved: a failure is retried by the next request

    async def close(self) -> None:
        """Cancel background summaries (the application is shutting down)."""
        tasks = list(self._background.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def forget_missing(self, infos: Sequence[SessionInfo]) -> None:
        """Drop the summaries of sessions no longer in the log."""
        present = {info.session_id for info in infos}
        for sid in [s for s in self._summaries if s not in present]:
            self._summaries.pop(sid, None)
            self._summary_locks.pop(sid, None)
