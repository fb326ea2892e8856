"""The Turn/Step agent loop with the checkpoint barrier, tools and the request-error hook.

The one-line surface: `Agent.from_model("route:model", tools=[...])`, tools from typed functions
(`@tool`, `Tool.from_function`), typed outputs (`output_type`), per-turn limits (`max_steps`,
`UsageLimits`), `agent.run_sync(...)`, `agent.stream_turn(...)` and `open_runtime()`.
"""

from __future__ import annotations

from .approval import PendingApproval
from .context import RunContext
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
from .limits import UsageLimits
from .loop import Agent, AgentPlugin, TurnResult, UserInput
from .output import FINAL_TOOL
from .setup import open_runtime
from .streaming import TurnStream
from .toolcall import ToolOutcome, run_tool_call
from .tools import Tool, tool
from .wait import wait_cancellably

__all__ = [
    "FINAL_TOOL",
    "Agent",
    "AgentHooks",
    "AgentLike",
    "AgentPlugin",
    "Block",
    "ErrorContext",
    "GiveUp",
    "PendingApproval",
    "PreStepContext",
    "RequestErrorContext",
    "RequestErrorDecision",
    "RequestErrorWaterfall",
    "RequestHookContext",
    "Retry",
    "RunContext",
    "Tool",
    "ToolOutcome",
    "TurnResult",
    "TurnSignal",
    "TurnStream",
    "UsageLimits",
    "UserInput",
    "Waterfall",
    "open_runtime",
    "run_tool_call",
    "tool",
    "wait_cancellably",
]
