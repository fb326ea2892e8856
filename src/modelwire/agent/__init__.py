"""The Turn/Step agent loop with the checkpoint barrier, tools and the request-error hook."""

from __future__ import annotations

from .hooks import (
    AgentHooks,
    AgentLike,
    Block,
    ErrorContext,
    GiveUp,
    PreStepContext,
    RequestErrorContext,
    RequestErrorDecision,
    RequestErrorWaterfall,
    RequestHookContext,
    Retry,
    TurnSignal,
    Waterfall,
)
from .loop import Agent, AgentPlugin, TurnResult, UserInput
from .tools import Tool, ToolOutcome, run_tool_call
from .wait import wait_cancellably

__all__ = [
    "Agent",
    "AgentHooks",
    "AgentLike",
    "AgentPlugin",
    "Block",
    "ErrorContext",
    "GiveUp",
    "PreStepContext",
    "RequestErrorContext",
    "RequestErrorDecision",
    "RequestErrorWaterfall",
    "RequestHookContext",
    "Retry",
    "Tool",
    "ToolOutcome",
    "TurnResult",
    "TurnSignal",
    "UserInput",
    "Waterfall",
    "run_tool_call",
    "wait_cancellably",
]
