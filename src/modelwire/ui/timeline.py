"""The mutable timeline state of one session: turns → steps → attempts, retry waits, tool runs.

`SessionFold` (fold.py) updates these records event by event; `freeze_turn` turns one into the
immutable `TurnView` payload. Times are the events' log times (epoch ms), so the page can draw
every piece to scale: an attempt runs from its step's start (or its retry's `llm/retry-started`)
to its finish chunk or message, a retry wait from `llm/retry` to `llm/retry-started`, a tool run
from `tool/call` to `tool/result`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..meter import CallKey
from ..vocab import LlmFailure, TokenUsage
from .blocks import failure_view, usage_view
from .payloads import (
    AttemptStatus,
    AttemptView,
    MarkerView,
    RetryView,
    StepView,
    ToolRunView,
    TurnView,
)

__all__ = [
    "AttemptState",
    "StepState",
    "TurnState",
    "freeze_attempt",
    "freeze_turn",
    "mark_fallback",
]


@dataclass(slots=True)
class AttemptState:
    """One provider call as folded so far."""

    key: CallKey
    start: int
    provider: str | None
    model: str | None
    header: int
    context: int
    input_messages: int
    fallback: bool = False
    end: int | None = None
    status: AttemptStatus = "running"
    finish: str | None = None
    failure: LlmFailure | None = None
    chunks: int = 0
    first_seq: int | None = None
    last_seq: int | None = None


@dataclass(slots=True)
class RetryState:
    """One retry decision and its wait."""

    retry: int
    mode: str
    delay_ms: float
    max_retries: int | None
    failure: LlmFailure
    start: int
    end: int | None = None


@dataclass(slots=True)
class ToolState:
    """One tool execution."""

    call_id: str
    name: str
    start: int
    end: int | None = None
    is_error: bool = False
    error_code: str | None = None
    approval: str | None = None  # pending, approved or denied (None: needs no approval)
    arguments: str = ""


@dataclass(slots=True)
class StepState:
    """One step; `pending_start` is when its next attempt begins (step start, retry started)."""

    step: int
    start: int
    end: int | None = None
    pending_start: int | None = None
    attempts: dict[int, AttemptState] = field(default_factory=dict)
    retries: list[RetryState] = field(default_factory=list)
    tools: dict[str, ToolState] = field(default_factory=dict)
    markers: list[MarkerView] = field(default_factory=list)

    def close_open(self, at: int) -> None:
        """Attempts still streaming when the step (or turn) closed never finished."""
        for attempt in self.attempts.values():
            if attempt.status == "running":
                attempt.status = "unfinished"
                attempt.end = at


@dataclass(slots=True)
class TurnState:
    """One turn and its steps; `updated_seq` is the last event that changed it."""

    turn: int
    start: int
    updated_seq: int
    end: int | None = None
    outcome: str | None = None
    failure: LlmFailure | None = None
    detail: str | None = None
    steps: dict[int, StepState] = field(default_factory=dict)


def freeze_attempt(
    attempt: AttemptState, usage: TokenUsage | None, cost: str | None
) -> AttemptView:
    """The payload of one attempt, with its metered usage and cost."""
    turn, step, number = attempt.key
    return AttemptView(
        turn=turn,
        step=step,
        attempt=number,
        provider=attempt.provider,
        model=attempt.model,
        start=attempt.start,
        end=attempt.end,
        status=attempt.status,
        finish=attempt.finish,
        failure=failure_view(attempt.failure) if attempt.failure is not None else None,
        chunks=attempt.chunks,
        first_seq=attempt.first_seq,
        last_seq=attempt.last_seq,
        usage=usage_view(usage) if usage is not None else None,
        cost=cost,
        fallback=attempt.fallback,
    )


def _freeze_step(
    step: StepState, calls: Mapping[CallKey, TokenUsage], costs: Mapping[CallKey, str]
) -> StepView:
    return StepView(
        step=step.step,
        start=step.start,
        end=step.end,
        attempts=tuple(
            freeze_attempt(a, calls.get(a.key), costs.get(a.key))
            for _, a in sorted(step.attempts.items())
        ),
        retries=tuple(
            RetryView(
                retry=r.retry,
                mode=r.mode,
                delay_ms=r.delay_ms,
                max_retries=r.max_retries,
                failure=failure_view(r.failure),
                start=r.start,
                end=r.end,
            )
            for r in step.retries
        ),
        tools=tuple(
            ToolRunView(
                call_id=t.call_id,
                name=t.name,
                start=t.start,
                end=t.end,
                is_error=t.is_error,
                error_code=t.error_code,
                approval=t.approval,
            )
            for t in step.tools.values()
        ),
        markers=tuple(step.markers),
    )


def freeze_turn(
    turn: TurnState, calls: Mapping[CallKey, TokenUsage], costs: Mapping[CallKey, str]
) -> TurnView:
    """The payload of one turn (steps in order)."""
    return TurnView(
        turn=turn.turn,
        start=turn.start,
        end=turn.end,
        outcome=turn.outcome,
        failure=failure_view(turn.failure) if turn.failure is not None else None,
        detail=turn.detail,
        steps=tuple(_freeze_step(s, calls, costs) for _, s in sorted(turn.steps.items())),
        updated_seq=turn.updated_seq,
    )


def mark_fallback(step: StepState, attempt: AttemptState) -> None:
    """An attempt served by another route than its step's first attempt is a fallback."""
    first = step.attempts[min(step.attempts)]
    attempt.fallback = first is not attempt and (first.provider, first.model) != (
        attempt.provider,
        attempt.model,
    )
