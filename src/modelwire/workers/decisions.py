"""`TurnQueue.decide`: a person's decision on a call of a paused ticket (issue 35).

The decision is logged in the session's log (`modelwire.agent.approval.decide`: a conditional
append, the same refusals as `Agent.decide`); when it leaves no call of the paused turn
undecided, the ticket goes from `paused` back to `queued` in the same call, so the next worker
claims it and resumes the turn (`Worker`). The last decider always sees every decision: a
decision appended after another reader's read makes that reader's conditional append re-read.
"""

from __future__ import annotations

from typing import Protocol

from ..agent.approval import approval_state, decide
from ..errors import ErrorCode, HarnessError
from ..session import open_log
from ..session.events import ToolDecision
from .drivers import Driver
from .tickets import TicketRef, TicketStatus, ticket_id

__all__ = ["TicketDecisions"]


class _Queue(Protocol):
    _driver: Driver
    _log_url: str | None
    where: str

    async def status(self, ticket: TicketRef) -> TicketStatus: ...


class TicketDecisions:
    """The decision part of `TurnQueue` (see the module docstring)."""

    async def decide(
        self: _Queue,
        ticket: TicketRef,
        call_id: str,
        approve: bool,
        reason: str | None = None,
        *,
        by: str | None = None,
    ) -> ToolDecision:
        """Approve or deny call `call_id` of `ticket`'s paused turn (`reason`: what the model is
        told of a denial; `by`: who decided); once none is undecided the ticket is `queued`
        again. An unknown ticket is `INVALID_ARGS`; a bad call id or a changed answer is
        refused as by `Agent.decide` (`UNKNOWN_CALL`, `ALREADY_DECIDED`), nothing changed."""
        status = await self.status(ticket)  # an unknown ticket: INVALID_ARGS
        if self._log_url is None:
            raise HarnessError(
                f"turn queue {self.where}: decide needs the queue opened with TurnQueue.open",
                ErrorCode.INVALID_CONFIG,
            )
        log = await open_log(self._log_url)
        try:
            before = await approval_state(log, status.session_id)
            if before.paused_turn is not None and before.ticket != status.id:
                raise HarnessError(
                    f"turn queue {self.where}: ticket {status.id!r} is {status.state}; the paused "
                    f"turn of session {status.session_id!r} is another ticket's "
                    f"({before.ticket or 'not run from the queue'})",
                    ErrorCode.UNKNOWN_CALL,
                )
            decision = await decide(log, status.session_id, call_id, approve, reason, by=by)
            undecided = (await approval_state(log, status.session_id)).undecided
        finally:
            await log.close()
        if status.state == "paused" and not undecided:
            async with self._driver.transaction() as q:
                await q(
                    "UPDATE modelwire_turns SET state = 'queued' WHERE ticket = %s "
                    "AND state = 'paused'",
                    (ticket_id(ticket),),
                )
                await self._driver.notify(q, ticket_id(ticket))
        return decision
