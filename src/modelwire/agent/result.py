"""`TurnResult`: what `Agent.run_turn` and `Agent.resume_turn` return."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Generic, Self

from ..errors import ErrorCode, LlmError, TurnLimitError
from ..events import TurnLimit
from ..never import assert_never
from ..session.events import (
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEndReason,
    TurnErrored,
    TurnInterrupted,
    TurnMaxTokens,
    TurnPaused,
)
from ..vocab import LlmFailure, Message, TextBlock, TokenUsage
from .approval import PendingApproval

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    OutputT = TypeVar("OutputT", default=str)
else:
    from typing import TypeVar

    OutputT = TypeVar("OutputT")  # `default=str` for type checkers (PEP 696), not needed at runtime

__all__ = ["OutputT", "TurnResult", "turn_error"]

_NO_USAGE = TokenUsage(0, 0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class TurnResult(Generic[OutputT]):
    """The outcome of one turn: its number, why it ended, the messages it added (in log order),
    its `output` (the validated value of the turn's `output_type`, or without one the answer
    text; None unless the turn completed — or passed a token budget in its last step, whose
    answer it still holds), and what its provider calls were billed: `usage` (every bucket an
    int, failed attempts included) and `cost` (USD, None when a price is unknown), the figures
    `modelwire sessions usage` shows for the turn. A paused turn (`reason.kind == "paused"`)
    lists the calls waiting for a decision in `pending` (call order; empty otherwise)."""

    turn: int
    reason: TurnEndReason
    messages: tuple[Message, ...]
    output: OutputT | None = None
    usage: TokenUsage = _NO_USAGE
    cost: Decimal | None = None
    pending: tuple[PendingApproval, ...] = ()

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

    def raise_for_failure(self) -> Self:
        """This result when the turn completed; otherwise why it did not, raised: an error as
        the `LlmError` category of its code (`mw.AuthError`, `mw.RateLimitError`, ...), a
        limit or a cut-off answer as `mw.TurnLimitError`, a cancelled, blocked or paused turn
        as `LlmError` `ABORTED` / `TURN_BLOCKED` / `TURN_PAUSED`. `agent.run_sync(...).raise_for_failure().output`."""
        error = turn_error(self.reason)
        if error is not None:
            raise error
        return self


def turn_error(reason: TurnEndReason) -> LlmError | None:  # noqa: RET503 - assert_never
    """The error a turn that ended for `reason` stands for (None: it completed)."""
    match reason:
        case TurnCompleted():
            return None
        case TurnErrored(failure=failure):
            return LlmError.from_failure(failure)
        case TurnLimit(limit="max_steps", max=most, used=used):
            return TurnLimitError(
                f"the turn stopped at its max_steps limit: {used} steps run, at most {most}",
                ErrorCode.TURN_LIMIT,
            )
        case TurnLimit(limit=name, max=most, used=used):
            return TurnLimitError(
                f"the turn's provider calls were billed {used} {name.replace('_', ' ')}, past "
                f"its budget usage_limits.{name} = {most}",
                ErrorCode.TURN_LIMIT,
            )
        case TurnMaxTokens():
            return TurnLimitError(
                "the answer was cut off at the output-token limit (max_tokens): raise the "
                "agent's max_tokens or ask for a shorter answer",
                ErrorCode.TURN_LIMIT,
            )
        case TurnAborted(reason=cause):
            why = f": {cause.reason}" if cause.reason else ""
            return LlmError(f"the turn was cancelled ({cause.kind}{why})", ErrorCode.ABORTED)
        case TurnBlocked():
            return LlmError("a pre-step hook blocked the turn", ErrorCode.TURN_BLOCKED)
        case TurnPaused():
            return LlmError(
                "the turn is paused: tool calls wait for a person's decision (see "
                "TurnResult.pending; agent.decide, then agent.resume_turn)",
                ErrorCode.TURN_PAUSED,
            )
        case TurnInterrupted():
            return LlmError(
                "the turn was interrupted: its process stopped before the turn ended",
                ErrorCode.ABORTED,
            )
        case _:
            assert_never(reason, "turn end reason")
