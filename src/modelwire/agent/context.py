"""`RunContext`: what a tool function learns about the call it serves.

A parameter of a `Tool.from_function` function annotated `RunContext` receives it; it is left out
of the tool's JSON Schema (the model never sees it).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..session.log import SessionLog
from .cancel import TurnSignal
from .hooks import AgentLike

__all__ = ["RunContext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """The running call: the agent, the session and its log, the turn and step, the call id and
    tool name, and the turn's cancellation signal (`signal.cancelled`)."""

    agent: AgentLike
    log: SessionLog
    session_id: str
    turn: int
    step: int
    call_id: str
    tool: str
    signal: TurnSignal
