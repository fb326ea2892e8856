"""Leases and fences on the group-commit backends (SQLite, PostgreSQL; rules in `lease.py`).

A lease operation runs as its own short transaction on the log's connection: the open group
transaction (if any) is committed first, then the backend's `_tx_lease` takes the session's
write lock (the lock appends take), reads the lease row, applies the decision and stores it.

Fences are checked when a group transaction locks a session (`fence_locked`; an extension of the
open transaction checks its one session the same way): the lease rows of the fenced sessions it
locked are read under those locks, and a session whose lease is lost is refused — the session
appended to raises `LEASE_LOST` (nothing of it was written in that transaction), one of the others
tried along is left unlocked, so its own next append meets the refusal. While the
transaction holds a session, a takeover waits for its commit (it needs the same lock), so every
row written under a checked lock was written under a live lease.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Sequence
from typing import TypeVar

from ..errors import HarnessError
from ..vocab.typing import Coro
from .grouphooks import GroupCommitHooks
from .lease import Decision, LeaseRow, fence_error
from .tailcache import TailCache

__all__ = ["GroupLeases"]

_T = TypeVar("_T")


class GroupLeases(GroupCommitHooks):
    """The lease primitives of a group-commit log (see the module docstring)."""

    _gate: asyncio.Lock
    _next: dict[str, int]
    _cache: TailCache

    @abstractmethod
    async def _commit(self, *, durable: bool) -> None:
        """Commit the open group transaction, if any."""

    @abstractmethod
    async def _bounded(self, awaitable: Coro[_T], action: str) -> _T:
        """One storage operation under the client-side deadline."""

    @abstractmethod
    async def _shielded(self, coro: Coro[_T]) -> _T:
        """Run a storage operation to completion even if the caller is cancelled."""

    @abstractmethod
    def _check_usable(self) -> None:
        """Raise the recorded failure of a broken instance."""

    @abstractmethod
    async def _tx_lease(
        self, session_id: str, decide: Decision, now_ms: int
    ) -> tuple[LeaseRow | None, LeaseRow | None]:
        """In a transaction of its own (none is open), lock `session_id` as an append would,
        read its lease row, store `decide(row, now_ms)` unless None, commit; return both."""

    @abstractmethod
    async def _tx_fences(self, session_ids: Sequence[str]) -> dict[str, LeaseRow]:
        """Inside the open transaction: the lease rows of `session_ids` (locked by it)."""

    @abstractmethod
    async def _q_leases(self) -> list[LeaseRow]:
        """Query every lease row (an absent table: none)."""

    @abstractmethod
    async def _tx_delete(self, session_id: str, now_ms: int) -> int:
        """In a transaction of its own (none is open), lock `session_id` as an append would,
        check it may go (`lease.check_deletable`), delete its events and sessions row, commit;
        return how many events it had."""

    async def _delete(self, session_id: str) -> int:
        return await self._shielded(self._delete_locked(session_id))

    async def _delete_locked(self, session_id: str) -> int:
        async with self._gate:
            self._check_usable()
            await self._commit(durable=True)  # nothing of the session left pending
            self._cache.clear()  # cached tails hold what storage no longer does
            try:
                return await self._bounded(
                    self._tx_delete(session_id, self._clock()), "delete the session"
                )
            except HarnessError:
                raise
            except Exception as exc:
                raise self._storage_error(exc, "delete the session") from exc

    async def _lease_txn(
        self, session_id: str, decide: Decision
    ) -> tuple[LeaseRow | None, LeaseRow | None]:
        return await self._shielded(self._lease_locked(session_id, decide))

    async def _lease_locked(
        self, session_id: str, decide: Decision
    ) -> tuple[LeaseRow | None, LeaseRow | None]:
        async with self._gate:
            self._check_usable()
            await self._commit(durable=False)
            try:
                return await self._bounded(
                    self._tx_lease(session_id, decide, self._clock()), "update the lease"
                )
            except HarnessError:
                raise
            except Exception as exc:
                raise self._storage_error(exc, "update the lease") from exc

    async def _lease_rows(self) -> list[LeaseRow]:
        async with self._gate:
            self._check_usable()
            await self._commit(durable=False)
            try:
                return await self._bounded(self._q_leases(), "read the leases")
            except HarnessError:
                raise
            except Exception as exc:
                raise self._storage_error(exc, "read the leases") from exc

    async def _fence_changed(self, session_id: str) -> None:
        if session_id in self._next:  # locked (and checked) before the fence existed
            async with self._gate:
                if session_id in self._next:
                    await self._commit(durable=False)

    async def fence_locked(self, locked: dict[str, int], first: str) -> None:
        """Check the fences of the sessions just `locked` (see the module docstring); `first` is
        the session the caller appends to (its refusal is raised)."""
        fenced = [s for s in locked if s in self._fences]
        if not fenced:
            return
        rows = await self._tx_fences(fenced)
        now = self._clock()
        for sid in fenced:
            token = self._fences.get(sid)
            if token is None:
                continue  # lifted while the rows were read (its lease was released)
            error = fence_error(sid, token, rows.get(sid), now)
            if error is not None:
                if sid == first:
                    raise error
                del locked[sid]
