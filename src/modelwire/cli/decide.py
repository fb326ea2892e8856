"""`modelwire sessions decide ID CALL_ID --approve|--deny [--reason TEXT]`: a person's decision on
a call a paused turn waits for (issue 35), logged as `tool/decision` by this user.

The decision needs no agent and takes no lease (`modelwire.agent.approval.decide`); the turn is
continued by whatever runs the agent (`modelwire chat --session ID`, a worker for a queued
ticket: a paused ticket's calls are decided through its queue, `TurnQueue.decide`, so the last
decision queues it again). What is refused (an unknown call, a changed answer) is a one-line
error, exit code 2.
"""

from __future__ import annotations

import getpass
import socket
import sys

__all__ = ["decide_call"]


async def decide_call(
    session_id: str, call_id: str, approve: bool, *, reason: str | None, log_option: str | None
) -> int:
    """Decide `call_id` of `session_id`; prints what is decided and what still waits."""
    from ..agent.approval import approval_state, decide
    from .logs import open_cli_log

    by = f"{getpass.getuser()}@{socket.gethostname()} (modelwire sessions decide)"
    async with open_cli_log(log_option) as (log, url):
        ticket = (await approval_state(log, session_id)).ticket
        if ticket is not None and not url.lower().startswith("memory:"):
            from ..workers import TurnQueue

            async with await TurnQueue.open(url) as queue:
                decision = await queue.decide(ticket, call_id, approve, reason, by=by)
        else:
            decision = await decide(log, session_id, call_id, approve, reason, by=by)
        waiting = (await approval_state(log, session_id)).undecided
    sys.stdout.write(f"{decision.call_id} {'approved' if decision.approve else 'denied'}\n")
    if waiting:
        calls = ", ".join(f"{c.call_id} ({c.tool})" for c in waiting)
        sys.stderr.write(f"still waiting for a decision: {calls}\n")
    elif ticket is not None:
        sys.stderr.write(f"every call is decided: a worker resumes ticket {ticket}\n")
    else:
        sys.stderr.write(
            f"every call is decided: continue the turn with `modelwire chat --session "
            f"{session_id}` (with the same --agent)\n"
        )
    return 0
