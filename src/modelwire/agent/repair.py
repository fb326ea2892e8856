"""Closing what an earlier turn left open, before a new turn starts, and the rule for "dead".

Tool calls committed without a result (the process died, or the turn was cancelled, between the
assistant message and its tools) get an error `tool/result` with code `TOOL_INTERRUPTED`, so the
next request never carries an unanswered tool call (providers reject that); then a turn left open
by a dead writer gets `step/end` and `turn/end {interrupted}`.

The rule for "dead": a turn this agent instance opened is dead (the instance holds the session's
lock, so that turn is not running); any other open turn is presumed dead only once the session has
been silent for `repair_after_ms` by the agent's clock. A younger one raises `TURN_IN_PROGRESS`:
its writer may be alive, and closing its turn would corrupt the chain (`resume_turn` continues it
once its writer is known to be gone). The facts are appended together with the next `turn/start`
in one conditional append, so a writer that appended meanwhile makes it fail with `STALE_WRITE`.
"""

from __future__ import annotations

from typing import Final

from ..errors import ErrorCode, HarnessError
from ..session.events import StepEnd, ToolResultRecord, TurnEnd, TurnInterrupted
from .request import LogView
from .resume import interrupted_results

__all__ = ["DEFAULT_REPAIR_AFTER_MS", "repair_facts"]

DEFAULT_REPAIR_AFTER_MS: Final = 60_000.0
"""How long another writer's open turn must be silent before `run_turn` closes it."""


def repair_facts(
    sid: str, view: LogView, ours: bool, now_ms: int, repair_after_ms: float
) -> list[ToolResultRecord | StepEnd | TurnEnd]:
    """The facts that close the loose ends `view` shows (see the module docstring).

    `ours`: the open turn was opened by the calling agent instance (and is not running).
    """
    facts: list[ToolResultRecord | StepEnd | TurnEnd] = []
    turn = view.open_turn
    if turn is not None and not ours:
        silent = now_ms - view.last_time
        if silent < repair_after_ms:
            raise HarnessError(
                f"session {sid!r}: turn {turn} is still open and its newest event is "
                f"{max(silent, 0)} ms old; its writer may still be running (an open turn is "
                f"closed as interrupted only after {repair_after_ms:g} ms of silence; "
                "resume_turn continues it once its writer is gone)",
                ErrorCode.TURN_IN_PROGRESS,
            )
    facts.extend(interrupted_results(view))
    if turn is not None:
        if view.open_step is not None:
            facts.append(StepEnd(*view.open_step))
        facts.append(TurnEnd(turn, TurnInterrupted()))
    return facts
