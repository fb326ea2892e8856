"""The lease half of the `SessionLog` interface: take, renew, release and list session leases, and
the fences they put on this instance's appends (the rules are in `lease.py`).

`Leasing` is a base class of `SessionLog`: the public methods check their arguments and keep the
fences (session → token) of this instance; a backend implements `_lease_txn` (run a decision in
one transaction holding the session's write lock, returning the row before and the row stored),
`_lease_rows` and the fence check of its appends.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable

from .ids import check_session_id
from .lease import (
    Decision,
    Lease,
    LeaseRow,
    decide_acquire,
    decide_release,
    decide_renew,
    fence_error,
)

__all__ = ["Leasing"]


class Leasing:
    """Session leases of a log instance (see the module docstring)."""

    _clock: Callable[[], int]

    def __init__(self) -> None:
        self._fences: dict[str, int] = {}  # session -> the token its appends must carry

    @abstractmethod
    def _check_open(self) -> None:
        """Raise when the log is closed."""

    async def acquire_lease(self, session_id: str, owner: str, ttl_ms: float) -> Lease:
        """Take the lease of `session_id` for `owner`, for `ttl_ms` by the log's clock, and fence
        this instance's appends of the session with its token.

        A free, released or expired lease is taken under the next token (`Lease.prior` is the one
        it replaced: its holder is gone); one `owner` already holds is renewed under its token;
        one another owner holds is `TURN_IN_PROGRESS` naming the holder and what is left of it.
        """
        sid = check_session_id(session_id)
        self._check_open()
        before, row = await self._lease_txn(sid, decide_acquire(sid, owner, ttl_ms))
        assert row is not None, "an acquisition stores a row or raises"
        self._fences[sid] = row.token
        prior = before if before is not None and before.token != row.token else None
        return Lease(row, prior)

    async def renew_lease(self, lease: Lease, ttl_ms: float) -> Lease:
        """Extend `lease` to `ttl_ms` from now; a lease taken over or expired is `LEASE_LOST`
        (this instance stays fenced: its appends of the session keep failing)."""
        self._check_open()
        _, row = await self._lease_txn(lease.session_id, decide_renew(lease, ttl_ms))
        assert row is not None, "a renewal stores a row or raises"
        return Lease(row, lease.prior)

    async def release_lease(self, lease: Lease) -> None:
        """Give `lease` up so another writer may take it at once, and lift its fence (no error
        when it was already lost). Flush first: what was appended under it stays durable."""
        self._check_open()
        await self._lease_txn(lease.session_id, decide_release(lease))
        if self._fences.get(lease.session_id) == lease.token:
            del self._fences[lease.session_id]

    async def hold(self, lease: Lease) -> None:
        """Fence this instance's appends of `lease.session_id` with a lease taken elsewhere (a
        turn queue's claim): from now on they land only while that lease holds."""
        sid = check_session_id(lease.session_id)
        self._check_open()
        await self._fence_changed(sid)
        self._fences[sid] = lease.token

    def unhold(self, lease: Lease) -> None:
        """Lift the fence `hold` set for `lease` (its holder released it elsewhere); no I/O."""
        if self._fences.get(lease.session_id) == lease.token:
            del self._fences[lease.session_id]

    def fence(self, session_id: str) -> int | None:
        """The token this instance's appends of `session_id` are fenced with, or None."""
        return self._fences.get(session_id)

    async def leases(self) -> list[LeaseRow]:
        """Every stored lease (live, expired and released), ordered by session id."""
        self._check_open()
        return sorted(await self._lease_rows(), key=lambda row: row.session_id)

    def _fence_check(self, session_id: str, row: LeaseRow | None, now_ms: int) -> None:
        """Raise `LEASE_LOST` when `session_id` is fenced and `row` does not carry its token live."""
        token = self._fences.get(session_id)
        if token is not None and (error := fence_error(session_id, token, row, now_ms)):
            raise error

    async def _fence_changed(self, session_id: str) -> None:
        """Called before a fence of `session_id` is set by `hold` (a backend whose open
        transaction already holds the session commits it, so the next append checks the fence)."""
        return

    @abstractmethod
    async def _lease_txn(
        self, session_id: str, decide: Decision
    ) -> tuple[LeaseRow | None, LeaseRow | None]:
        """Run `decide(stored row, now)` in one transaction holding the session's write lock and
        store what it returns; return `(row before, row stored or None)`. An exception from
        `decide` stores nothing and is raised as is; storage failures are `LOG_UNAVAILABLE`."""

    @abstractmethod
    async def _lease_rows(self) -> list[LeaseRow]:
        """Every stored lease row (any order)."""
