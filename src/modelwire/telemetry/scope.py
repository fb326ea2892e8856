"""The agent turn a model call belongs to, as the agent instrumentation sees it.

The `invoke_agent` wrapper sets a `TurnScope` in the turn's context for as long as its Steps run;
the `on_request` listener moves its step and attempt on before every attempt; a model-call span of
the same session reads them (`modelwire.turn`, `modelwire.step`, `modelwire.attempt`) and adds
its tokens to the turn's totals. Tool tasks copy the context, so they see the scope too.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final

__all__ = ["CURRENT_TURN", "TurnScope"]


@dataclass(slots=True)
class TurnScope:
    """One running turn: its session and number, the step and attempt being requested, and the
    tokens of its model calls so far (every attempt, failed ones included)."""

    session_id: str
    turn: int
    step: int = 0
    attempt: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


CURRENT_TURN: Final[ContextVar[TurnScope | None]] = ContextVar(
    "modelwire.telemetry.turn", default=None
)
"""The instrumented turn running in this context, if any."""
