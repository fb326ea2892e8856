"""`TurnResult`: what `Agent.run_turn` and `Agent.resume_turn` return."""

from __future__ import annotations

from dataclasses import dataclass

from ..session.events import TurnEndReason, TurnErrored
from ..vocab import LlmFailure, Message, TextBlock

__all__ = ["TurnResult"]


@dataclass(frozen=True, slots=True)
class TurnResult:
    """The outcome of one turn: its number, why it ended and the messages it added, in log order."""

    turn: int
    reason: TurnEndReason
    messages: tuple[Message, ...]

    @property
    def failure(self) -> LlmFailure | None:
        """The failure of a turn that ended in error, else None."""
        return self.reason.failure if isinstance(self.reason, TurnErrored) else None

    @property
    def text(self) -> str:
        """The text blocks of the last assistant message, joined (empty when there is none)."""
        for message in reversed(self.messages):
            if message.role == "assistant":
                return "".join(b.text for b in message.content if isinstance(b, TextBlock))
        return ""
