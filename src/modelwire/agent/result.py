"""`TurnResult`: what `Agent.run_turn` and `Agent.resume_turn` return."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic

from ..events import TurnLimit
from ..session.events import TurnEndReason, TurnErrored
from ..vocab import LlmFailure, Message, TextBlock

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    OutputT = TypeVar("OutputT", default=str)
else:
    from typing import TypeVar

    OutputT = TypeVar("OutputT")  # `default=str` for type checkers (PEP 696), not needed at runtime

__all__ = ["OutputT", "TurnResult"]


@dataclass(frozen=True, slots=True)
class TurnResult(Generic[OutputT]):
    """The outcome of one turn: its number, why it ended, the messages it added (in log order) and
    its `output`: the validated value of the turn's `output_type`, or without one the answer text
    (None unless the turn completed)."""

    turn: int
    reason: TurnEndReason
    messages: tuple[Message, ...]
    output: OutputT | None = None

    @property
    def failure(self) -> LlmFailure | None:
        """The failure of a turn that ended in error, else None."""
        return self.reason.failure if isinstance(self.reason, TurnErrored) else None

    @property
    def limit(self) -> TurnLimit | None:
        """The limit that ended the turn (`.limit` names it: `max_steps`, ...), else None."""
        return self.reason if isinstance(self.reason, TurnLimit) else None

    @property
    def text(self) -> str:
        """The text blocks of the last assistant message, joined (empty when there is none)."""
        for message in reversed(self.messages):
            if message.role == "assistant":
                return "".join(b.text for b in message.content if isinstance(b, TextBlock))
        return ""
