"""`TurnQueue`: turns submitted to a pool of workers, kept in the log's own database.

`await TurnQueue.open(log_url)` (SQLite file or PostgreSQL) creates or checks the queue tables
(`modelwire_turns`, version `workers_schema_version` in `modelwire_meta`; a newer version is
refused, nothing touched). `submit` queues a turn and returns its ticket; `wait` returns once the
ticket ended (PostgreSQL: `LISTEN/NOTIFY`, SQLite: polling); `status` says where it stands (both
take the `Ticket` or its id); `tickets` lists them; `cancel` cancels one (`tickets.py`); a
paused ticket's calls are decided with `decide` (`decisions.py`; `wait` returns at a pause too).

Workers `claim` tickets: the oldest unfinished ticket of a session whose lease is free, taken
with `FOR UPDATE SKIP LOCKED` (SQLite: under its write lock) together with the session's lease in
one transaction — so two workers never claim the same ticket, a session runs one turn at a time
and in submission order, and a `running` ticket whose lease expired (its worker died) is claimed
again (a takeover). `finish` ends a ticket exactly once, only under the claim's lease, and
releases it; `renew` and `release` keep and give up a claim's lease. Time is the queue's `clock`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Self

import msgspec

from ..errors import ErrorCode, HarnessError
from ..session import open_log
from ..session.ids import check_session_id
from ..session.lease import (
    Decision,
    Lease,
    LeaseRow,
    decide_acquire,
    decide_release,
    decide_renew,
    lease_lost,
)
from ..session.lease_sql import (
    LEASE_TABLE,
    SELECT_ONE,
    UPSERT,
    for_postgres,
    lease_row,
    upsert_args,
)
from .decisions import TicketDecisions
from .drivers import Driver, Query, open_driver
from .tickets import (
    SCHEMA_KEY,
    SCHEMA_VERSION,
    Claim,
    QueueCounts,
    State,
    Ticket,
    TicketRef,
    TicketStatus,
    checked_claim_row,
    newer_schema,
    no_ticket,
    statuses_from_rows,
    ticket_id,
)

__all__ = ["TurnQueue"]

_TABLES = (
    LEASE_TABLE,
    """CREATE TABLE IF NOT EXISTS modelwire_turns (
        ticket text PRIMARY KEY, position bigint NOT NULL, session_id text NOT NULL,
        input text NOT NULL, state text NOT NULL, submitted_ms bigint NOT NULL, worker text,
        claimed_ms bigint, finished_ms bigint, claims integer NOT NULL DEFAULT 0,
        reason text, output text, error text)""",
    "CREATE INDEX IF NOT EXISTS modelwire_turns_open ON modelwire_turns (state, position)",
    "CREATE INDEX IF NOT EXISTS modelwire_turns_session ON modelwire_turns (session_id, position)",
)
_CANDIDATE = (
    "SELECT t.ticket, t.session_id, t.input, t.state FROM modelwire_turns t "
    "WHERE t.state IN ('queued', 'running') "
    "AND NOT EXISTS (SELECT 1 FROM modelwire_turns e WHERE e.session_id = t.session_id "
    "AND e.state IN ('queued', 'running', 'paused') AND e.position < t.position) "
    "AND NOT EXISTS (SELECT 1 FROM modelwire_leases l WHERE l.session_id = t.session_id "
    "AND l.expires_ms > %s) ORDER BY t.position LIMIT 8"
)
_COLUMNS = (
    "SELECT ticket, session_id, state, submitted_ms, worker, claims, finished_ms, reason, "
    "output, error FROM modelwire_turns"
)
_STATUS = _COLUMNS + " WHERE ticket = %s"
_LIVE_LEASE = (
    "EXISTS (SELECT 1 FROM modelwire_leases l WHERE l.session_id = t.session_id "
    "AND l.expires_ms > %s)"
)
_SWEEP = (  # a cancel whose worker died: nobody will end it, so it ends now
    "UPDATE modelwire_turns SET state = 'cancelled', finished_ms = %s, reason = 'cancelled' "
    f"WHERE state = 'cancelling' AND ticket IN (SELECT ticket FROM modelwire_turns t WHERE "
    f"t.state = 'cancelling' AND NOT {_LIVE_LEASE})"
)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TurnQueue(TicketDecisions):
    """The turn queue of one log database (see the module docstring)."""

    def __init__(
        self, driver: Driver, *, clock: Callable[[], int] | None = None, log_url: str | None = None
    ) -> None:
        self._driver = driver
        self._clock = clock or _now_ms
        self._log_url = log_url
        self.where = driver.where

    @classmethod
    async def open(cls, log_url: str, *, clock: Callable[[], int] | None = None) -> Self:
        """Open the queue of the log at `log_url`, creating its tables on first use."""
        log = await open_log(log_url)  # creates or checks the log's own schema first
        await log.close()
        queue = cls(open_driver(log_url), clock=clock, log_url=log_url)
        try:
            await queue._ensure_schema()
        except BaseException:
            await queue.close()
            raise
        return queue

    async def close(self) -> None:
        """Release the connections."""
        await self._driver.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _ensure_schema(self) -> None:
        driver = self._driver
        async with driver.transaction() as q:
            if driver.postgres:
                await q("SELECT pg_advisory_xact_lock(%s, 1)", (0x4D574C47,))
            rows = await q("SELECT value FROM modelwire_meta WHERE key = %s", (SCHEMA_KEY,))
            if rows and str(rows[0][0]) != str(SCHEMA_VERSION):
                raise newer_schema(str(rows[0][0]), self.where)
            if not rows:
                for statement in _TABLES:
                    await q(statement, ())
                if driver.postgres:
                    await q("CREATE SEQUENCE IF NOT EXISTS modelwire_turns_position", ())
                await q(
                    "INSERT INTO modelwire_meta (key, value) VALUES (%s, %s)",
                    (SCHEMA_KEY, str(SCHEMA_VERSION)),
                )

    # ---- submitting and waiting --------------------------------------------------------------

    async def submit(self, session_id: str, text: str) -> Ticket:
        """Queue a turn of `session_id` with the user's `text`; returns its ticket."""
        sid = check_session_id(session_id)
        if not isinstance(text, str) or not text:
            raise HarnessError(
                f"a queued turn needs non-empty user text, got {text!r}", ErrorCode.INVALID_ARGS
            )
        ticket = f"tk_{uuid.uuid4().hex}"
        position = (
            "nextval('modelwire_turns_position')"
            if self._driver.postgres
            else "(SELECT coalesce(max(position), 0) + 1 FROM modelwire_turns)"
        )
        async with self._driver.transaction() as q:
            rows = await q(
                "INSERT INTO modelwire_turns (ticket, position, session_id, input, state, "
                f"submitted_ms) VALUES (%s, {position}, %s, %s, 'queued', %s) RETURNING position",
                (ticket, sid, text, self._clock()),
            )
        return Ticket(ticket, sid, int(rows[0][0]))

    async def status(self, ticket: TicketRef) -> TicketStatus:
        """Where `ticket` (a `Ticket` or its id) stands; an unknown one is `INVALID_ARGS`."""
        tid = ticket_id(ticket)
        async with self._driver.transaction() as q:
            rows = await q(_STATUS, (tid,))
        if not rows:
            raise no_ticket(tid, self.where)
        return statuses_from_rows(rows, self.where)[0]

    async def tickets(
        self, *, states: tuple[str, ...] = (), session_id: str | None = None, limit: int = 100
    ) -> list[TicketStatus]:
        """The `limit` most recent tickets (of `states`, of `session_id`), oldest first."""
        where: list[str] = []
        params: list[object] = []
        if states:
            where.append(f"state IN ({', '.join(['%s'] * len(states))})")
            params.extend(states)
        if session_id is not None:
            where.append("session_id = %s")
            params.append(session_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        sql = f"{_COLUMNS}{clause} ORDER BY position DESC LIMIT %s"
        async with self._driver.transaction() as q:
            rows = await q(sql, (*params, max(0, int(limit))))
        return statuses_from_rows(rows[::-1], self.where)

    async def cancel(self, ticket: TicketRef) -> TicketStatus:
        """Cancel `ticket`: a queued one (or a running one whose worker is gone) ends
        `cancelled` now and never runs; a running one becomes `cancelling` until its worker
        cancels the turn. An unknown, finished or paused ticket is `INVALID_ARGS`, nothing
        changed (a paused one ends once its calls are denied)."""
        tid = ticket_id(ticket)
        now = self._clock()
        async with self._driver.transaction() as q:
            rows = await q(_STATUS, (tid,))
            if not rows:
                raise no_ticket(tid, self.where)
            status = statuses_from_rows(rows, self.where)[0]
            if status.done or status.state == "paused":
                why = "nothing to cancel"
                if status.state == "paused":
                    why = "its turn waits for decisions: deny them (`queue deny`) to end it"
                raise HarnessError(
                    f"turn queue {self.where}: ticket {tid!r} already {status.state}: {why}, "
                    "nothing changed",
                    ErrorCode.INVALID_ARGS,
                )
            if status.state != "queued":
                live = await q(f"SELECT {_LIVE_LEASE} FROM modelwire_turns t WHERE ticket = %s",
                               (now, tid))  # fmt: skip
                if live and live[0][0]:
                    await q("UPDATE modelwire_turns SET state = 'cancelling' WHERE ticket = %s "
                            "AND state = 'running'", (tid,))  # fmt: skip
                    return msgspec.structs.replace(status, state="cancelling")
            await q(
                "UPDATE modelwire_turns SET state = 'cancelled', finished_ms = %s, "
                "reason = 'cancelled' WHERE ticket = %s",
                (now, tid),
            )
            await self._driver.notify(q, tid)
        return msgspec.structs.replace(
            status, state="cancelled", reason="cancelled", finished_ms=now
        )

    async def cancel_requests(self, owner: str) -> list[str]:
        """The tickets `owner` runs whose cancel was asked for (`cancelling`)."""
        async with self._driver.transaction() as q:
            rows = await q(
                "SELECT ticket FROM modelwire_turns WHERE state = 'cancelling' AND worker = %s",
                (owner,),
            )
        return [str(row[0]) for row in rows]

    async def wait(
        self, ticket: TicketRef, *, timeout_s: float | None = None, poll_s: float = 0.2
    ) -> TicketStatus:
        """The status of `ticket` (a `Ticket` or its id) once it ended or paused (`TIMEOUT`
        after `timeout_s` if given). Waits for a notice (PostgreSQL) or `poll_s` between checks."""
        ticket = ticket_id(ticket)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            status = await self.status(ticket)
            if status.done or status.state == "paused":
                return status
            left = poll_s if deadline is None else min(poll_s, deadline - time.monotonic())
            if left <= 0:
                raise HarnessError(
                    f"turn queue {self.where}: ticket {ticket!r} still {status.state} after "
                    f"{timeout_s:g} s",
                    ErrorCode.TIMEOUT,
                )
            await self._driver.wait_notice(left)

    async def counts(self) -> QueueCounts:
        """Tickets per state; running ones per live worker, and those whose lease expired (a
        dead worker's, counted there and no longer under its name)."""
        now = self._clock()
        async with self._driver.transaction() as q:
            grouped = await q("SELECT state, count(*) FROM modelwire_turns GROUP BY state", ())
            states = {str(state): int(n) for state, n in grouped}
            workers = await q(
                "SELECT worker, count(*) FROM modelwire_turns t WHERE state IN ('running', "
                f"'cancelling') AND {_LIVE_LEASE} GROUP BY worker",
                (now,),
            )
        by_worker = {str(w): int(n) for w, n in workers}
        running = states.get("running", 0) + states.get("cancelling", 0)
        return QueueCounts(
            queued=int(states.get("queued", 0)),
            running=sum(by_worker.values()),
            completed=int(states.get("completed", 0)),
            failed=int(states.get("failed", 0)),
            by_worker=by_worker,
            expired=running - sum(by_worker.values()),
            cancelled=int(states.get("cancelled", 0)),
            paused=int(states.get("paused", 0)),
        )

    # ---- claims ------------------------------------------------------------------------------

    async def claim(self, owner: str, lease_ms: float) -> Claim | None:
        """Claim the next runnable ticket for `owner` with a lease of `lease_ms`, or None."""
        now = self._clock()
        driver = self._driver
        lock = " FOR UPDATE OF t SKIP LOCKED" if driver.postgres else ""
        async with driver.transaction() as q:
            await q(_SWEEP, (now, now))
            for candidate in await q(_CANDIDATE + lock, (now,)):
                ticket, sid, text, state = checked_claim_row(self.where, candidate)
                # never wait for a session another writer holds (a paused one may hold it long)
                if not await driver.try_lock_session(q, sid):
                    continue
                try:
                    before, row = await self._lease(
                        q,
                        sid,
                        decide_acquire(sid, owner, lease_ms, gone=lambda _: False),
                        locked=True,
                    )
                except HarnessError as exc:
                    if exc.code == ErrorCode.TURN_IN_PROGRESS:  # taken meanwhile
                        continue
                    raise
                assert row is not None
                await q(
                    "UPDATE modelwire_turns SET state = 'running', worker = %s, claimed_ms = %s, "
                    "claims = claims + 1 WHERE ticket = %s",
                    (owner, now, ticket),
                )
                break
            else:
                return None
        prior = before if before is not None and before.token != row.token else None
        return Claim(ticket, sid, text, Lease(row, prior), takeover=state == "running")

    async def renew(self, lease: Lease, lease_ms: float) -> Lease:
        """Extend a claim's lease (`LEASE_LOST` once taken over or expired)."""
        async with self._driver.transaction() as q:
            _, row = await self._lease(q, lease.session_id, decide_renew(lease, lease_ms))
        assert row is not None
        return Lease(row, lease.prior)

    async def release(self, lease: Lease) -> None:
        """Give a claim's lease up, leaving its ticket `running`: the next claim takes it over
        at once (a worker shutting down with turns unfinished)."""
        async with self._driver.transaction() as q:
            await self._lease(q, lease.session_id, decide_release(lease))

    async def finish(
        self,
        claim: Claim,
        lease: Lease,
        state: State,
        *,
        reason: str | None = None,
        output: str | None = None,
        error: str | None = None,
    ) -> None:
        """End `claim`'s ticket as `state` (completed, failed or cancelled; or `paused`, its
        turn waiting for decisions) and release its lease, only while `lease` still holds the
        session (else `LEASE_LOST`: another worker took over)."""
        if state not in ("completed", "failed", "cancelled", "paused"):
            raise HarnessError(
                f"a ticket ends completed, failed, cancelled or paused, not {state!r}",
                ErrorCode.INVALID_ARGS,
            )
        now = self._clock()
        driver = self._driver
        async with driver.transaction() as q:
            await driver.lock_session(q, lease.session_id)
            found = await q(for_postgres(SELECT_ONE), (lease.session_id,))
            row = lease_row(found[0]) if found else None
            if row is None or row.token != lease.token:
                raise lease_lost(lease.session_id, lease.token, row, now)
            await q(
                "UPDATE modelwire_turns SET state = %s, finished_ms = %s, reason = %s, "
                "output = %s, error = %s WHERE ticket = %s AND state IN ('running', 'cancelling')",
                (state, now, reason, output, error, claim.ticket),
            )
            released = decide_release(lease)(row, now)
            if released is not None:
                await q(for_postgres(UPSERT), upsert_args(released))
            await driver.notify(q, claim.ticket)

    async def _lease(
        self, q: Query, session_id: str, decide: Decision, *, locked: bool = False
    ) -> tuple[LeaseRow | None, LeaseRow | None]:
        """Apply a lease decision under the session's append lock (taken here unless `locked`),
        inside `q`'s transaction."""
        if not locked:
            await self._driver.lock_session(q, session_id)
        found = await q(for_postgres(SELECT_ONE), (session_id,))
        before = lease_row(found[0]) if found else None
        after = decide(before, self._clock())
        if after is not None:
            await q(for_postgres(UPSERT), upsert_args(after))
        return before, after
