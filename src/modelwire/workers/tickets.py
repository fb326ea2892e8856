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

from typing import Final, Literal, TypeAlias, get_args

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
    "checked_claim_row",
    "corrupt_ticket",
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


STATES: Final[tuple[State, ...]] = get_args(State)  # every state a queue writes, one source


def corrupt_ticket(where: str, ticket: object, field: str, value: object) -> HarnessError:
    """`LOG_CORRUPT`: a stored ticket row whose `field` holds what no queue writes."""
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return HarnessError(
        f"turn queue {where}: ticket {ticket!r} is corrupt: its {field} is {shown}, "
        "which no modelwire writes (the row was left untouched)",
        ErrorCode.LOG_CORRUPT,
    )


def _int(where: str, ticket: object, field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise corrupt_ticket(where, ticket, field, value)
    return value


def _str(where: str, ticket: object, field: str, value: object) -> str:
    if not isinstance(value, str):
        raise corrupt_ticket(where, ticket, field, value)
    return value


def _maybe_str(where: str, ticket: object, field: str, value: object) -> str | None:
    return None if value is None else _str(where, ticket, field, value)


def checked_claim_row(where: str, row: tuple[object, ...]) -> tuple[str, str, str, str]:
    """A claim candidate `(ticket, session_id, input, state)`, each checked to be text."""
    tid, sid, text, state = row
    return (
        _str(where, tid, "ticket id", tid),
        _str(where, tid, "session_id", sid),
        _str(where, tid, "input", text),
        _str(where, tid, "state", state),
    )


def statuses_from_rows(rows: Rows, where: str = "") -> list[TicketStatus]:
    """`modelwire_turns` rows (`queue._COLUMNS` order) as `TicketStatus`es; a value no queue
    writes (a corrupt row) is `LOG_CORRUPT` naming the ticket and the field."""
    out = []
    for tid, sid, state, at, worker, claims, finished, reason, output, error in rows:
        if state not in STATES:
            raise corrupt_ticket(where, tid, "state", state)
        out.append(
            TicketStatus(
                _str(where, tid, "ticket id", tid),
                _str(where, tid, "session_id", sid),
                state,
                _int(where, tid, "submitted_ms", at),
                _maybe_str(where, tid, "worker", worker),
                _int(where, tid, "claims", claims),
                None if finished is None else _int(where, tid, "finished_ms", finished),
                _maybe_str(where, tid, "reason", reason),
                _maybe_str(where, tid, "output", output),
                _maybe_str(where, tid, "error", error),
            )
        )
    return out


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
