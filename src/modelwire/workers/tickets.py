"""The turn queue's records: a submitted ticket, a worker's claim, a ticket's status.

A ticket is one user turn submitted for a session: `queued` until a worker claims it (taking the
session's lease in the same transaction), `running` while a worker holds it, then `completed` or
`failed` exactly once (the ending is written only under the claim's lease). A `running` ticket
whose lease expired — its worker died or was paused — is claimed again by another worker (a
takeover), which continues the turn from the log.

`TurnQueue.cancel` ends a `queued` ticket `cancelled` at once (it never runs); a `running` one
becomes `cancelling` until its worker, which looks for such tickets every poll, cancels the turn
(`turn/end {aborted}`) and ends it `cancelled` — or, when its worker is gone (the lease expired),
it is `cancelled` at once too.

A turn that pauses for a person's approval (issue 35) leaves its ticket `paused` (its lease
released; the session's later tickets wait behind it): once every waiting call is decided
through `TurnQueue.decide`, it is `queued` again and the next worker resumes the turn.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

import msgspec

from ..errors import ErrorCode, HarnessError
from ..session.lease import Lease
from .drivers import Rows

__all__ = [
    "DONE_STATES",
    "SCHEMA_KEY",
    "SCHEMA_VERSION",
    "Claim",
    "QueueCounts",
    "State",
    "Ticket",
    "TicketRef",
    "TicketStatus",
    "newer_schema",
    "no_ticket",
    "statuses_from_rows",
    "ticket_id",
]

State: TypeAlias = Literal[
    "queued", "running", "cancelling", "paused", "completed", "failed", "cancelled"
]
DONE_STATES: Final = ("completed", "failed", "cancelled")
SCHEMA_KEY: Final = "workers_schema_version"
"""The `modelwire_meta` key recording the version of the queue tables."""
SCHEMA_VERSION: Final = 1


class Ticket(msgspec.Struct, frozen=True):
    """A submitted turn: its id, session and place in the queue."""

    id: str
    session_id: str
    position: int


TicketRef: TypeAlias = str | Ticket
"""A ticket as `submit()` returned it, or its id."""


def ticket_id(ticket: TicketRef) -> str:
    """The id of `ticket` (a `Ticket` or an id)."""
    return ticket.id if isinstance(ticket, Ticket) else ticket


class TicketStatus(msgspec.Struct, frozen=True):
    """Where a ticket stands. `claims` counts the workers that took it (more than one: taken
    over); `reason` is the turn's end (`completed`, `error`, …), `output` its answer text,
    `error` what failed."""

    id: str
    session_id: str
    state: State
    submitted_ms: int
    worker: str | None = None
    claims: int = 0
    finished_ms: int | None = None
    reason: str | None = None
    output: str | None = None
    error: str | None = None

    @property
    def done(self) -> bool:
        """True once completed, failed or cancelled."""
        return self.state in DONE_STATES


def statuses_from_rows(rows: Rows) -> list[TicketStatus]:
    """`modelwire_turns` rows (`queue._COLUMNS` order) as `TicketStatus`es."""
    return [
        TicketStatus(
            str(tid),
            str(sid),
            state,
            int(at),
            worker,
            int(claims),
            None if finished is None else int(finished),
            reason,
            output,
            error,
        )
        for tid, sid, state, at, worker, claims, finished, reason, output, error in rows
    ]


class Claim(msgspec.Struct, frozen=True):
    """A ticket a worker claimed: the user's text and the session lease it holds;
    `takeover` when another worker had claimed it before (its lease expired)."""

    ticket: str
    session_id: str
    text: str
    lease: Lease
    takeover: bool


class QueueCounts(msgspec.Struct, frozen=True):
    """`modelwire queue status`: tickets per state; `running` and `by_worker` count the tickets
    a live worker holds (its lease unexpired; `cancelling` ones included), `expired` the running
    tickets whose lease expired (their worker is gone; the next claim takes them over), `paused`
    the tickets whose turn waits for a person's decision."""

    queued: int
    running: int
    completed: int
    failed: int
    by_worker: dict[str, int]
    expired: int
    cancelled: int = 0
    paused: int = 0


def no_ticket(ticket: str, where: str) -> HarnessError:
    """`INVALID_ARGS`: no such ticket."""
    return HarnessError(f"turn queue {where}: no ticket {ticket!r}", ErrorCode.INVALID_ARGS)


def newer_schema(found: str, where: str) -> HarnessError:
    """`LOG_CORRUPT`: the queue tables were made by a newer modelwire."""
    return HarnessError(
        f"turn queue {where}: {SCHEMA_KEY} is {found!r}, this modelwire reads version "
        f"{SCHEMA_VERSION}; the tables were left untouched (upgrade modelwire)",
        ErrorCode.LOG_CORRUPT,
    )
