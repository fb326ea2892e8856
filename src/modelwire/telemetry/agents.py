"""`invoke_agent` and `execute_tool` spans from an `Agent`'s hooks.

- `on_turn` wrapper: one INTERNAL span `invoke_agent [<name>]` per turn (new or resumed), made
  the current span while the turn's Steps run, so the model-call spans of the turn and its tool
  spans are its children. Attributes: `gen_ai.operation.name` (`invoke_agent`),
  `gen_ai.agent.name` (when the agent has a name), `gen_ai.provider.name` / `gen_ai.request.model`
  (the agent's seed route and model), `gen_ai.conversation.id` (the session), `modelwire.turn`;
  at the end `modelwire.turn.end_reason` (the `turn/end` reason kind), the turn's token totals
  (`gen_ai.usage.input_tokens` / `output_tokens`, every attempt's) and on a failed turn
  `error.type` = the failure code (`ABORTED` for a cancelled one) with status ERROR.
- `on_tool` wrapper: one INTERNAL span `execute_tool <tool>` per tool call, current inside the
  call's task. Attributes: `gen_ai.operation.name` (`execute_tool`), `gen_ai.tool.name`,
  `gen_ai.tool.call.id`, `gen_ai.tool.type` (`function`), `gen_ai.conversation.id`,
  `modelwire.turn`, `modelwire.step`; a failed call's `error.type` is its code (`TOOL_FAILED`,
  `TOOL_TIMEOUT`, `INVALID_ARGS`, ...). Arguments and result only with `capture_content=True`.
- approvals (issue 35): a turn that pauses gets the span event `modelwire.turn.paused`
  (`modelwire.tool.call.ids`, `modelwire.tool.names`: the waiting calls); a reopened paused turn
  gets one `modelwire.tool.decision` event per decision it resumes on, at the decision's log
  time (`gen_ai.tool.call.id`, `gen_ai.tool.name`, `modelwire.approved`, `modelwire.decided_by`
  when logged; the reason only with `capture_content=True`).
- `on_request` listener: moves the turn's `TurnScope` to the attempt being requested, which the
  model-call span reads (`modelwire.step`, `modelwire.attempt`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec

from ..agent.cancel import TurnCancelled
from ..agent.hooks import RequestHookContext, ToolEnd, ToolHookContext, TurnHookContext
from ..errors import ErrorCode, normalize_llm_failure
from ..session.events import ToolCallRecord, ToolDecision, TurnEndReason, TurnErrored, TurnStart
from ..vocab import CallConfig
from .otel import ABORTED, Instruments, error_type
from .scope import CURRENT_TURN, TurnScope

if TYPE_CHECKING:
    from opentelemetry.trace import Span
    from opentelemetry.util.types import AttributeValue

    from ..agent.loop import Agent

__all__ = ["agent_hooks"]


def agent_hooks(
    tools: Instruments,
    agent: Agent[Any],  # Any: agents of every output type
    name: str | None,
) -> Callable[[], None]:
    """Register the turn and tool wrappers and the attempt listener on `agent`; the disposer."""
    hooks = agent.hooks
    removers = [
        hooks.on_turn.add(_turn_wrapper(tools, agent, name)),
        hooks.on_tool.add(_tool_wrapper(tools)),
        hooks.on_request.add(_follow_attempts),
    ]

    def dispose() -> None:
        for remove in reversed(removers):
            remove()

    return dispose


async def _follow_attempts(
    ctx: RequestHookContext, call_next: Callable[[], Awaitable[CallConfig]]
) -> CallConfig:
    scope = CURRENT_TURN.get()
    if scope is not None and scope.session_id == ctx.session_id and scope.turn == ctx.turn:
        scope.step, scope.attempt = ctx.step, ctx.attempt
    return await call_next()


def _turn_wrapper(
    tools: Instruments,
    agent: Agent[Any],  # Any: agents of every output type
    name: str | None,
) -> Callable[[TurnHookContext, Callable[[], Awaitable[TurnEndReason]]], Awaitable[None]]:
    trace, context = tools.trace, tools.context
    span_name = f"invoke_agent {name}" if name else "invoke_agent"

    async def wrapper(
        ctx: TurnHookContext, call_next: Callable[[], Awaitable[TurnEndReason]]
    ) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": agent.provider,
            "gen_ai.request.model": agent.model,
            "gen_ai.conversation.id": ctx.session_id,
            "modelwire.turn": ctx.turn,
        }
        if name:
            attributes["gen_ai.agent.name"] = name
        span = tools.tracer.start_span(
            span_name, kind=trace.SpanKind.INTERNAL, attributes=attributes
        )
        scope = TurnScope(ctx.session_id, ctx.turn)
        scoped = CURRENT_TURN.set(scope)
        attached = context.attach(trace.set_span_in_context(span))
        kind, error = "error", None
        try:
            await _decisions(tools, agent, span, ctx)
            reason = await call_next()
            kind = reason.kind
            if isinstance(reason, TurnErrored):
                error = str(reason.failure.code)
            elif kind == "paused":
                await _paused(agent, span, ctx)
        except (TurnCancelled, asyncio.CancelledError):
            kind, error = "aborted", ABORTED
            raise
        except Exception as exc:  # the turn ends `error` with this failure
            error = str(normalize_llm_failure(exc).code)
            raise
        except BaseException as exc:
            error = error_type(exc)
            raise
        finally:
            context.detach(attached)
            CURRENT_TURN.reset(scoped)
            _end_turn(tools, span, scope, kind, error)

    return wrapper


async def _decisions(
    tools: Instruments,
    agent: Agent[Any],  # Any: agents of every output type
    span: Span,
    ctx: TurnHookContext,
) -> None:
    """One `modelwire.tool.decision` event per decision a reopened paused turn resumes on."""
    log, sid = agent.log, ctx.session_id
    start = await log.latest(sid, "turn/start")
    if start is None or not isinstance(start.data, TurnStart) or start.data.turn != ctx.turn:
        return
    if start.data.resumed_after is None:
        return
    paused = await log.latest(sid, "turn/end")
    since = paused.seq if paused is not None and paused.seq < start.seq else start.seq
    for event in await log.read(sid, since, start.seq, chunks=False):
        data = event.data
        if isinstance(data, ToolDecision) and data.turn == ctx.turn:
            attributes: dict[str, AttributeValue] = {
                "gen_ai.tool.call.id": data.call_id,
                "gen_ai.tool.name": data.name,
                "modelwire.approved": data.approve,
            }
            if data.by:
                attributes["modelwire.decided_by"] = data.by
            if data.reason and tools.capture_content:
                attributes["modelwire.decision.reason"] = data.reason
            span.add_event("modelwire.tool.decision", attributes, timestamp=event.time * 1_000_000)


async def _paused(
    agent: Agent[Any],  # Any: agents of every output type
    span: Span,
    ctx: TurnHookContext,
) -> None:
    """The `modelwire.turn.paused` event: the calls of this turn left waiting for a decision."""
    from ..agent.approval import approval_state

    state = await approval_state(agent.log, ctx.session_id)
    waiting: list[ToolCallRecord] = [c for c in state.pending.values() if c.turn == ctx.turn]
    span.add_event(
        "modelwire.turn.paused",
        {
            "modelwire.tool.call.ids": [c.call_id for c in waiting],
            "modelwire.tool.names": [c.name for c in waiting],
        },
    )


def _end_turn(
    tools: Instruments, span: Span, scope: TurnScope, kind: str, error: str | None
) -> None:
    attributes: dict[str, AttributeValue] = {"modelwire.turn.end_reason": kind}
    if scope.calls:
        attributes["gen_ai.usage.input_tokens"] = scope.input_tokens
        attributes["gen_ai.usage.output_tokens"] = scope.output_tokens
    span.set_attributes(attributes)
    if error is not None:
        tools.fail(span, error)
    span.end()


def _tool_wrapper(
    tools: Instruments,
) -> Callable[[ToolHookContext, Callable[[], Awaitable[ToolEnd]]], Awaitable[None]]:
    trace, context = tools.trace, tools.context

    async def wrapper(ctx: ToolHookContext, call_next: Callable[[], Awaitable[ToolEnd]]) -> None:
        call = ctx.call
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": ctx.session_id,
            "modelwire.turn": ctx.turn,
            "modelwire.step": ctx.step,
        }
        if tools.capture_content:
            attributes["gen_ai.tool.call.arguments"] = call.arguments
        span = tools.tracer.start_span(
            f"execute_tool {call.name}", kind=trace.SpanKind.INTERNAL, attributes=attributes
        )
        attached = context.attach(trace.set_span_in_context(span))
        try:
            outcome = await call_next()
        except BaseException as exc:
            tools.fail(span, error_type(exc))
            raise
        else:
            if tools.capture_content:
                result = msgspec.json.encode(outcome.message.content).decode()
                span.set_attribute("gen_ai.tool.call.result", result)
            if outcome.is_error:
                tools.fail(span, str(outcome.error_code or ErrorCode.TOOL_FAILED))
        finally:
            context.detach(attached)
            span.end()

    return wrapper
