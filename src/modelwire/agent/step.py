"""One Step: attempts (request rebuilt from the log, checkpoint barrier, chunk logging), tool calls.

A retry is another attempt of the same Step: same turn, same step, a new attempt number, a fresh
assembler and chunk-seq list, and the request re-derived from the log. `continue_step` carries on
a Step a dead process left open (see `resume.py`): no new `step/start`, attempts numbered on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..assembler import BlockAssembler
from ..errors import ErrorCode, HarnessError, LlmError
from ..policy import RetryPolicy
from ..session.events import (
    AssistantChunk,
    AssistantMessage,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    UserMessage,
)
from ..session.log import SessionLog
from ..vocab import (
    Aborted,
    CallConfig,
    Error,
    FinishReason,
    GenerateOptions,
    LlmFailure,
    MaxTokens,
    Message,
    ModelSource,
    StreamChunk,
    ToolCallBlock,
    assistant_message,
)
from .hooks import RequestErrorContext, RequestHookContext, Retry, TurnSignal
from .ports import PreparedCallLike
from .request import canonical_header, headers_equal, seed_config
from .tools import run_tool_call

if TYPE_CHECKING:
    from .loop import Agent

__all__ = [
    "StepOutcome",
    "TurnCancelled",
    "cancellation",
    "continue_step",
    "handle_failure",
    "run_step",
]


class TurnCancelled(BaseException):
    """Raised inside the loop when the turn was cancelled through its signal (not its task)."""


def cancellation() -> BaseException:
    """The exception that ends a cancelled turn: `CancelledError` if the task itself is cancelled."""
    task = asyncio.current_task()
    if task is not None and task.cancelling() > 0:
        return asyncio.CancelledError()
    return TurnCancelled()


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """How a Step ended: whether it hit the token limit and whether tool results follow."""

    max_tokens: bool
    ran_tools: bool


@dataclass(frozen=True, slots=True)
class _Request:
    options: GenerateOptions
    prepared: PreparedCallLike | None


@dataclass(slots=True)
class _StepFrame:
    agent: Agent
    session_id: str
    signal: TurnSignal
    turn: int
    step: int


async def run_step(
    agent: Agent,
    session_id: str,
    signal: TurnSignal,
    turn: int,
    step: int,
    entered: tuple[Message, ...],
) -> StepOutcome:
    """Run one Step: `step/start`, entered messages, attempts, tool calls; `step/end` always."""
    await agent.log.append_many(
        session_id, [StepStart(turn, step), *(UserMessage(message) for message in entered)]
    )
    return await _step_body(_StepFrame(agent, session_id, signal, turn, step), 1, None)


async def continue_step(
    agent: Agent,
    session_id: str,
    signal: TurnSignal,
    turn: int,
    step: int,
    *,
    attempt: int,
    before: Callable[[], Awaitable[None]] | None = None,
) -> StepOutcome:
    """Carry on an open Step whose `step/start` is already logged, from attempt `attempt`.

    `before` runs first, inside the Step (e.g. the rest of a retry wait a dead process decided);
    an exception there ends the Step like a failed attempt would. `step/end` is always written.
    """
    return await _step_body(_StepFrame(agent, session_id, signal, turn, step), attempt, before)


async def _step_body(
    frame: _StepFrame, attempt: int, before: Callable[[], Awaitable[None]] | None
) -> StepOutcome:
    agent, session_id, signal = frame.agent, frame.session_id, frame.signal
    turn, step = frame.turn, frame.step
    log = agent.log
    try:
        if before is not None:
            await before()
        message, finish = await _attempts(frame, attempt)
        if isinstance(finish, MaxTokens):
            return StepOutcome(max_tokens=True, ran_tools=False)
        calls = [block for block in message.content if isinstance(block, ToolCallBlock)]
        for call in calls:
            if signal.cancelled:
                raise cancellation()
            await log.append(
                session_id, ToolCallRecord(turn, step, call.id, call.name, call.arguments)
            )
            outcome = await run_tool_call(call, agent.tool_map)
            await log.append(
                session_id,
                ToolResultRecord(
                    turn=turn,
                    step=step,
                    call_id=call.id,
                    name=call.name,
                    message=outcome.message,
                    is_error=outcome.is_error,
                    error_code=outcome.error_code,
                ),
            )
        return StepOutcome(max_tokens=False, ran_tools=bool(calls))
    finally:
        await log.append(session_id, StepEnd(turn, step))


async def handle_failure(
    agent: Agent,
    session_id: str,
    signal: TurnSignal,
    *,
    turn: int,
    step: int,
    attempt: int,
    provider: str,
    failure: LlmFailure,
    retry_policy: RetryPolicy | None,
) -> None:
    """Run `on_request_error` for a failed attempt: return on `Retry()`, else raise its error.

    Cancellation beats a returned `Retry()`: a cancelled turn raises its cancellation instead.
    """
    decision = await agent.hooks.on_request_error.run(
        RequestErrorContext(
            agent=agent,
            session_id=session_id,
            log=agent.log,
            turn=turn,
            step=step,
            attempt=attempt,
            provider=provider,
            failure=failure,
            retry_policy=retry_policy,
            signal=signal,
        )
    )
    if signal.cancelled:
        raise cancellation()
    if not isinstance(decision, Retry):
        raise LlmError.from_failure(failure)


async def _attempts(frame: _StepFrame, first_attempt: int) -> tuple[Message, FinishReason]:
    agent, sid, signal = frame.agent, frame.session_id, frame.signal
    log = agent.log
    attempt = first_attempt - 1
    while True:
        attempt += 1
        if signal.cancelled:
            raise cancellation()
        request = await _build_request(frame, attempt)
        # Checkpoint barrier: every request fact appended so far is durable before the adapter
        # is invoked. A failing flush propagates (turn error); the adapter is never called.
        await log.flush()
        if signal.cancelled:
            raise cancellation()
        options = request.options
        if request.prepared is not None:
            stream = request.prepared.stream(options)
        else:
            stream = agent.runtime.stream(options)
        assembler = BlockAssembler()
        seqs: list[int] = []
        source = ModelSource(options.provider, options.model)
        await _consume(frame, attempt, stream, assembler, seqs, source)
        finish = assembler.finish
        if isinstance(finish, (Error, Aborted)):
            await handle_failure(
                agent,
                sid,
                signal,
                turn=frame.turn,
                step=frame.step,
                attempt=attempt,
                provider=options.provider,
                failure=finish.failure,
                retry_policy=None if request.prepared is None else request.prepared.retry_policy,
            )
            continue
        message = assembler.message(
            ModelSource(options.provider, options.model, assembler.replay_state)
        )
        await log.append(
            sid,
            AssistantMessage(
                turn=frame.turn,
                step=frame.step,
                attempt=attempt,
                message=message,
                usage=assembler.usage,
                source_event_seqs=tuple(seqs),
            ),
        )
        return message, finish


async def _consume(
    frame: _StepFrame,
    attempt: int,
    stream: AsyncIterator[StreamChunk],
    assembler: BlockAssembler,
    seqs: list[int],
    source: ModelSource,
) -> None:
    """Log every chunk verbatim and fold it in; on cancellation commit the interrupted prefix."""
    log, sid, signal = frame.agent.log, frame.session_id, frame.signal
    turn, step = frame.turn, frame.step
    iterator = aiter(stream)
    try:
        async for chunk in iterator:
            if signal.cancelled:  # the signal check precedes the append (spec F6)
                raise cancellation()
            data = AssistantChunk(turn, step, attempt, chunk)
            try:
                event = await log.append(sid, data)
            except asyncio.CancelledError:
                # The append may still land (backends finish a started write): adopt it so the
                # interrupted message cites exactly the logged chunks.
                if await _landed(log, sid, data, seqs):
                    assembler.push(chunk)
                raise
            seqs.append(event.seq)
            assembler.push(chunk)
        if signal.cancelled:
            raise cancellation()
    except (asyncio.CancelledError, TurnCancelled):
        blocks = assembler.interrupted_blocks()
        if blocks:
            await log.append(
                sid,
                AssistantMessage(
                    turn=turn,
                    step=step,
                    attempt=attempt,
                    message=assistant_message(blocks, source),
                    usage=assembler.usage,
                    interrupted=True,
                    source_event_seqs=tuple(seqs),
                ),
            )
        raise
    finally:
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            await closer()


async def _landed(log: SessionLog, sid: str, data: AssistantChunk, seqs: list[int]) -> bool:
    """After a cancelled chunk append: True (and its seq recorded) if the log holds it anyway.

    Attempt numbers are unique within a step, so a matching chunk of this attempt newer than the
    last recorded seq can only be the one whose append was interrupted.
    """
    latest = await log.latest(sid, "assistant/chunk")
    if latest is None or latest.data != data or (seqs and latest.seq <= seqs[-1]):
        return False
    seqs.append(latest.seq)
    return True


async def _build_request(frame: _StepFrame, attempt: int) -> _Request:
    """Seed config → `on_request` → `prepare_call` → header/context facts → request (spec F.3)."""
    agent, sid = frame.agent, frame.session_id
    log = agent.log
    view = await agent.view(sid).refresh(log, sid)
    first = agent.first_request(sid)
    seed = seed_config(
        first_request=first,
        latest=view.latest_header,
        provider=agent.provider,
        model=agent.model,
        max_tokens=agent.max_tokens,
        reasoning_effort=agent.reasoning_effort,
        temperature=agent.temperature,
    )
    config = await agent.hooks.on_request.run(
        RequestHookContext(
            agent=agent,
            session_id=sid,
            turn=frame.turn,
            step=frame.step,
            attempt=attempt,
            config=seed,
            signal=frame.signal,
        )
    )
    if not isinstance(config, CallConfig) or not config.provider or not config.model:
        raise HarnessError(
            f"agent request for session {sid!r} needs a provider and a model, got {config!r}",
            ErrorCode.INVALID_CONFIG,
        )
    prepared: PreparedCallLike | None
    try:
        prepared = await agent.runtime.prepare_call(config)
    except HarnessError as exc:
        if exc.code != ErrorCode.NO_ADAPTER:
            raise
        prepared = None  # a stream middleware may own the route
    resolved = config if prepared is None else prepared.config
    defaults = None if prepared is None else prepared.adapter_defaults
    header = canonical_header(resolved, defaults, agent.system, agent.tool_schemas)
    facts: list[RequestHeader | RequestContext] = []
    if first:
        facts.append(RequestHeader(header, "initial" if view.latest_header is None else "resume"))
    elif view.latest_header is None or not headers_equal(header, view.latest_header):
        facts.append(RequestHeader(header, "change"))
    window = None
    if prepared is not None and prepared.context is not None:
        window = prepared.context.context_window
    if view.latest_context != (resolved.provider, resolved.model, window):
        facts.append(RequestContext(resolved.provider, resolved.model, window))
    if facts:
        await log.append_many(sid, facts)
    agent.mark_requested(sid, resolved)
    options = GenerateOptions(
        provider=resolved.provider,
        model=resolved.model,
        messages=tuple(view.messages),
        system=header.system,
        tools=header.tools,
        temperature=resolved.temperature,
        max_tokens=resolved.max_tokens,
        stop=resolved.stop,
        reasoning_effort=resolved.reasoning_effort,
        session_id=sid,
    )
    return _Request(options, prepared)
