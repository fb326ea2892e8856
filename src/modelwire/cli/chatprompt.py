"""The approval side of `modelwire chat` (issue 35): the y/N prompt on a terminal, and the lines
that say how to decide off one.

On a terminal (stdin and stderr both), each call a paused turn waits for is asked on stderr:
`Run tool NAME with {…}? [y/N] `; only `y` or `yes` (any case) approves; a denial then asks for
its reason (`Why not? (Enter: no reason) `, told to the model). The answer is read from stdin in
a thread, so the event loop goes on. End of input is a denial. Off a terminal nothing is asked
and nothing runs: the turn stays paused and `how_to_decide` names every waiting call and the
commands that decide and resume it.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..agent import PendingApproval
    from ..session import SessionLog

__all__ = ["ask_on_terminal", "how_to_decide", "on_a_terminal"]

_ARGUMENTS_SHOWN = 400  # characters of a call's arguments the prompt shows


def on_a_terminal() -> bool:
    """Whether a person can be asked: stdin and stderr are both terminals."""
    try:
        return sys.stdin is not None and sys.stdin.isatty() and sys.stderr.isatty()
    except (OSError, ValueError):
        return False


def _ask(question: str) -> str | None:
    sys.stderr.write(question)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return None if not line else line.strip()


async def ask_on_terminal(call: PendingApproval) -> tuple[bool, str | None]:
    """Ask about `call` on the terminal: (approve, the reason of a denial or None)."""
    shown = (
        call.arguments
        if len(call.arguments) <= _ARGUMENTS_SHOWN
        else (call.arguments[:_ARGUMENTS_SHOWN] + "…")
    )
    answer = await asyncio.to_thread(_ask, f"Run tool {call.tool} with {shown}? [y/N] ")
    if answer is not None and answer.lower() in ("y", "yes"):
        return True, None
    if answer is None:
        return False, None
    reason = await asyncio.to_thread(_ask, "Why not? (Enter: no reason) ")
    return False, reason or None


async def how_to_decide(log: SessionLog, session_id: str, agent_spec: str | None) -> str:
    """The calls the paused turn of `session_id` waits for, and the commands that decide it."""
    from ..agent.approval import approval_state

    waiting = (await approval_state(log, session_id)).undecided
    lines = ["the turn is paused: these tool calls wait for a person's decision (none ran):"]
    lines += [f"  {call.call_id}: {call.tool} {call.arguments}" for call in waiting]
    again = f" --agent {agent_spec}" if agent_spec else ""
    lines.append(
        f"decide each with `modelwire sessions decide {session_id} CALL_ID --approve` (or "
        f"`--deny --reason TEXT`), then continue the turn with `modelwire chat{again} --session "
        f"{session_id}` (or run chat on a terminal to be asked)"
    )
    return "\n".join(lines)
