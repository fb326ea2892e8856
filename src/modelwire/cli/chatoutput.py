"""How `modelwire chat` reports a finished turn: the answer printed once, `--json`, one error line."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import msgspec
from rich.text import Text

if TYPE_CHECKING:
    from .chatsession import ChatSession, TurnOutcome

__all__ = ["outcome_json", "print_answer", "report_outcome"]


def print_answer(answer: str) -> None:
    """A finished answer (`--no-stream`): rendered markdown on a terminal, verbatim otherwise."""
    from .chatview import answer_sink

    sink = answer_sink(sys.stdout)
    try:
        sink.text(answer)
        sink.close()
    except BrokenPipeError:
        from .errors import quiet_stdout

        quiet_stdout()


def outcome_json(outcome: TurnOutcome, chat: ChatSession) -> dict[str, object]:
    """The `--json` object of one turn; `cost` is the turn's cost in USD as a decimal string
    (never a float), null when a price is unknown."""
    from ..meter.cost import cost_text

    return {
        "session_id": chat.session_id,
        "turn": outcome.turn,
        "route": chat.route,
        "model": chat.model,
        "answer": outcome.answer,
        "reasoning": outcome.reasoning or None,
        "finish": outcome.kind,
        "usage": msgspec.to_builtins(outcome.usage) if outcome.usage is not None else None,
        "cost": cost_text(outcome.cost) if outcome.cost is not None else None,
        "error": _error(outcome),
        "cancelled": outcome.cause,
    }


def _error(outcome: TurnOutcome) -> dict[str, object] | None:
    failure = outcome.failure
    if failure is not None:
        return {"code": str(failure.code), "message": failure.message, "status": failure.status}
    if outcome.kind == "paused":
        return {"code": "TURN_PAUSED", "message": outcome.detail, "status": None}
    if outcome.detail is not None:
        return {"code": None, "message": f"the turn ended {outcome.detail}", "status": None}
    return None


def report_outcome(outcome: TurnOutcome, chat: ChatSession) -> None:
    """One stderr line for a turn that did not answer (nothing for an answer)."""
    from .render import failure_text

    console = chat.view.console
    where = f"turn {outcome.turn} of session {chat.session_id}"
    try:
        if outcome.kind == "error":
            detail = failure_text(outcome.failure) if outcome.failure else None
            detail = detail or (f"the turn ended {outcome.detail}" if outcome.detail else None)
            detail = detail or "the turn failed"
            console.print(Text(f"error: {detail} ({where})", style="bold red"))
        elif outcome.kind == "cancelled":
            console.print(
                Text(
                    f"cancelled ({outcome.cause or 'cancelled'}); the partial answer is saved "
                    f"in {where}",
                    style="yellow",
                )
            )
        elif outcome.kind == "blocked":
            console.print(Text(f"a plugin blocked {where}", style="yellow"))
        elif outcome.kind == "paused":
            console.print(Text(f"{outcome.detail} ({where})", style="yellow"))
    except OSError:
        pass
