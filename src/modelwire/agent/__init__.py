"""The Turn/Step agent loop with the checkpoint barrier, tools and the request-error hook."""

from __future__ import annotations

from .hooks import (
    AgentHooks,
    AgentPlugin,
    Block,
    ErrorContext,
    PreStepContext,
    RequestErrorContext,
    RequestHookContext,
    Retry,
    TurnSignal,
    Waterfall,
)
from .loop import Agent, TurnResult, UserInput
from .tools import Tool, ToolOutcome, run_tool_call

__all__ = [
    "Agent",
    "AgentHooks",
    "AgentPlugin",
    "Block",
    "ErrorContext",
    "PreStepContext",
    "RequestErrorContext",
    "RequestHookContext",
    "Retry",
    "Tool",
    "ToolOutcome",
    "TurnResult",
    "TurnSignal",
    "UserInput",
    "Waterfall",
    "run_tool_call",
]
