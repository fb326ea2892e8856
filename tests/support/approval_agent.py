"""The agent of the human-approval process tests (issue 35), in the `MODULE:FACTORY` form that
`modelwire worker --agent` and `modelwire chat --agent` load: `approval_agent:make_agent`.

`make_agent(log)` runs on the route `approval` (`ApprovalModel` at `$APPROVAL_MODEL_URL`) with
three tools that record every call they execute as one line `<tool> <call id>` in
`$APPROVAL_COUNTER` (`O_APPEND`, write, fsync: a call executed twice shows as a duplicate line):
`pay` needs approval, `look` does not, `wire` needs it when `amount` is over 100.
"""

from __future__ import annotations

import os
from typing import Any

from approval_model import MODEL, profile

from modelwire.agent import Agent, RunContext, Tool, open_runtime, tool
from modelwire.session import SessionLog

__all__ = ["counted", "make_agent", "tools"]


def counted(path: str) -> list[str]:
    """The lines of the counter file at `path` (none when it does not exist)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except FileNotFoundError:
        return []


def _record(name: str, ctx: RunContext) -> None:
    fd = os.open(os.environ["APPROVAL_COUNTER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{name} {ctx.call_id}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _big(ctx: RunContext, args: dict[str, Any]) -> bool:
    return bool(args.get("amount", 0) > 100)


def tools() -> list[Tool]:
    """`pay` (needs approval), `look` (free) and `wire` (needs approval above 100)."""

    @tool(needs_approval=True)
    def pay(amount: int, ctx: RunContext) -> str:
        """Pay an amount.

        Args:
            amount: How much.
        """
        _record("pay", ctx)
        return f"paid {amount}"

    @tool
    def look(ctx: RunContext) -> str:
        """Look around."""
        _record("look", ctx)
        return "looked"

    @tool(needs_approval=_big)
    def wire(amount: int, ctx: RunContext) -> str:
        """Wire an amount.

        Args:
            amount: How much.
        """
        _record("wire", ctx)
        return f"wired {amount}"

    return [pay, look, wire]


def make_agent(log: SessionLog) -> Agent:
    """The agent (see the module docstring)."""
    runtime = open_runtime(
        config={"providers": {"approval": profile(os.environ["APPROVAL_MODEL_URL"])}}
    )
    return Agent(runtime, log, "approval", MODEL, tools=tools(), repair_after_ms=0)
