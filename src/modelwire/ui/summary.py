"""One row of the sessions list, folded incrementally: route, turns, tokens, cost, last outcome.

`SessionSummary` keeps only what a row shows (and the token meter), so thousands of them fit in
memory; it catches up from its `next_seq` when the session grew.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..meter import TokenMeter
from ..session import (
    AssistantChunk,
    AssistantMessage,
    Event,
    RequestContext,
    RequestHeader,
    SessionInfo,
    TurnEnd,
    TurnErrored,
    TurnStart,
)
from ..vocab import UsageChunk
from .costs import total_cost
from .payloads import SessionRow

__all__ = ["SessionSummary"]


class SessionSummary:
    """The list-row projection of one session."""

    __slots__ = ("_open", "meter", "next_seq", "outcome", "outcome_code", "route", "turns")

    def __init__(self) -> None:
        self.next_seq = 0
        self.route: str | None = None
        self.turns = 0
        self.outcome: str | None = None
        self.outcome_code: str | None = None
        self._open = False
        self.meter = TokenMeter()

    def apply_all(self, events: Iterable[Event]) -> None:
        """Fold events in log order (seqs already folded are skipped)."""
        for event in events:
            if event.seq < self.next_seq:
                continue
            self.next_seq = event.seq + 1
            data = event.data
            if isinstance(data, AssistantChunk):
                if isinstance(data.chunk, UsageChunk):
                    self.meter.apply(event)
            elif isinstance(data, AssistantMessage):
                self.meter.apply(event)
            elif isinstance(data, TurnStart):
                self.turns = max(self.turns, data.turn)
                self._open = True
                self.outcome, self.outcome_code = "running", None
            elif isinstance(data, TurnEnd):
                self.turns = max(self.turns, data.turn)
                self._open = False
                self.outcome = data.reason.kind
                failure = data.reason.failure if isinstance(data.reason, TurnErrored) else None
                self.outcome_code = str(failure.code) if failure is not None else None
            elif isinstance(data, RequestHeader):
                config = data.header.config
                self.route = f"{config.provider}/{config.model}"
            elif isinstance(data, RequestContext):
                self.route = f"{data.provider}/{data.model}"
                self.meter.apply(event)  # the prices of the calls that follow

    @staticmethod
    def pending_row(info: SessionInfo) -> SessionRow:
        """The row of a session still being summarized: the log's own counts and times only."""
        return SessionRow(
            session_id=info.session_id,
            events=info.events,
            started=info.first_time,
            last_time=info.last_time,
            route=None,
            turns=None,
            tokens=None,
            cost=None,
            outcome=None,
            outcome_code=None,
            pending=True,
        )

    def row(self, info: SessionInfo) -> SessionRow:
        """The list row, with the log's own counts and times."""
        report = self.meter.report()
        return SessionRow(
            session_id=info.session_id,
            events=info.events,
            started=info.first_time,
            last_time=info.last_time,
            route=self.route,
            turns=self.turns,
            tokens=report.total.total_tokens,
            cost=total_cost(report),
            outcome=self.outcome,
            outcome_code=self.outcome_code,
        )
