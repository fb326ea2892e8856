"""The step object, `StepRunner`: one Step's attempts, its request-error decision, its tool calls.

A `StepRunner` owns what a Step needs (log, runtime, hooks, tools, the turn's request seed) and
holds the one request-building path, shared by a running Step and a resumed one (`resume.py`).
A retry is another attempt of the same Step (a new attempt number, the request re-derived from
the log); `carry_on` carries on a Step a dead process left open, attempts numbered on.

With a typed output (`output`), each request asks for it as the route allows (`output.py`), and
the Step's outcome carries the verdict on its answer; an attempt ending in `OUTPUT_INVALID` is a
rejected answer (to be corrected), not a failure for `on_request_error`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeAlias

import msgspec

from ..errors import ErrorCode, HarnessError, LlmError
from ..never import assert_never
from ..policy import RetryPolicy
from ..session.events import (
    AssistantMessage,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
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
    ResolvedModelInfo,
    ToolCallBlock,
)
from .cancel import TurnSignal, cancellation
from .chunks import CallSink, consume
from .hooks import (
    AgentHooks,
    AgentLike,
    GiveUp,
    RequestErrorContext,
    RequestErrorDecision,
    RequestHookContext,
    Retry,
)
from .output import AnswerPlan, OutputSpec, Rejected, Verdict, judge, plan_for
from .ports import PreparedCallLike, RuntimeLike
from .request import LogView, RequestSeed, canonical_header, headers_equal
from .toolbox import ToolBox
from .toolrun import ToolRun
from .wait import Sleep

__all__ = ["Before", "FailedAttempt", "SessionState", "StepFrame", "StepOutcome", "StepRunner"]


@dataclass(slots=True)
class SessionState:
    """One agent instance's state of one session: its incremental view of the log, and whether
    it has logged a request header there yet (its first request logs `initial` or `resume`)."""

    session_id: str
    view: LogView = field(default_factory=LogView)
    requested: bool = False
    context: RequestContext | None = None  # the latest `request/context` known to be logged


@dataclass(frozen=True, slots=True)
class StepFrame:
    """Which Step a `StepRunner` call is about: session, signal, turn, step, the turn's sink."""

    session: SessionState
    signal: TurnSignal
    turn: int
    step: int
    sink: CallSink


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """How a Step ended: whether it hit the token limit, whether tool results follow, with a
    typed output the verdict on its answer (None: none yet), and whether calls wait for approval
    (`paused`: the turn pauses)."""

    max_tokens: bool
    ran_tools: bool
    verdict: Verdict | None = None
    paused: bool = False


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """An attempt that ended in a failure finish, before its request-error decision."""

    attempt: int
    provider: str
    failure: LlmFailure
    retry_policy: RetryPolicy | None


Before: TypeAlias = Callable[[], Awaitable[FailedAttempt | None]]
"""What `carry_on` runs first, inside the Step: a failed attempt still to decide on, or None."""


@dataclass(frozen=True, slots=True)
class _Request:
    options: GenerateOptions
    prepared: PreparedCallLike | None
    plan: AnswerPlan | None


@dataclass(frozen=True, slots=True)
class _Answer:
    """A Step's committed answer, and whether its request offered the final-answer tool."""

    message: Message
    finish: FinishReason
    final_offered: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRunner:
    """Runs the Steps of one turn (see the module docstring); `agent` only goes into payloads.

    `clock` (epoch ms) and `sleep` (seconds), injectable, time a resumed Step's retry wait and a
    tool's `timeout_ms`. `output` is the turn's typed output; `max_parallel_tools` bounds a Step's
    running tools."""

    agent: AgentLike
    log: SessionLog
    runtime: RuntimeLike
    hooks: AgentHooks
    tools: ToolBox
    seed: RequestSeed
    clock: Callable[[], int]
    sleep: Sleep
    output: OutputSpec | None = None
    max_parallel_tools: int = 8

    async def run(self, frame: StepFrame, entered: tuple[Message, ...]) -> StepOutcome:
        """Run one Step: `step/start`, entered messages, attempts, tool calls; `step/end` always."""
        await self.log.append_many(
            frame.session.session_id,
            [StepStart(frame.turn, frame.step), *(UserMessage(message) for message in entered)],
        )
        return await self._body(frame, 1, None)

    async def carry_on(self, frame: StepFrame, *, attempt: int, before: Before) -> StepOutcome:
        """Carry on an open Step whose `step/start` is already logged, from attempt `attempt`:
        `before` runs first, inside the Step (e.g. the rest of a retry wait a dead process
        decided); a failed attempt it returns is decided on as if it had just failed. An
        exception there ends the Step like a failed attempt would. `step/end` is always written."""
        return await self._body(frame, attempt, before)

    async def decide(self, frame: StepFrame, failed: FailedAttempt) -> RequestErrorDecision:
        """The `on_request_error` decision for a failed attempt of this Step."""
        return await self.hooks.on_request_error.run(
            RequestErrorContext(
                agent=self.agent,
                session_id=frame.session.session_id,
                log=self.log,
                turn=frame.turn,
                step=frame.step,
                attempt=failed.attempt,
                provider=failed.provider,
                failure=failed.failure,
                retry_policy=failed.retry_policy,
                signal=frame.signal,
            )
        )

    async def served_by(self, view: LogView) -> tuple[str, RetryPolicy | None]:
        """The provider and retry policy of the last attempt's call, re-prepared from the log:
        the latest `request/header`'s config (as every later request seeds it) is prepared
        again, binding the route's current registration and policy (no route: no policy)."""
        config = self.seed.config(view.latest_header, first_request=view.latest_header is None)
        prepared = await self._prepare(config)
        if prepared is None:
            return config.provider, None
        return prepared.config.provider, prepared.retry_policy

    async def _body(self, frame: StepFrame, attempt: int, before: Before | None) -> StepOutcome:
        try:
            failed = None if before is None else await before()
            answer = await self._attempts(frame, attempt, failed)
            if isinstance(answer, Rejected):
                return StepOutcome(max_tokens=False, ran_tools=False, verdict=answer)
            if isinstance(answer.finish, MaxTokens):
                return StepOutcome(max_tokens=True, ran_tools=False)
            calls = [b for b in answer.message.content if isinstance(b, ToolCallBlock)]
            tools = ToolRun(
                log=self.log,
                agent=self.agent,
                tools=self.tools,
                sleep=self.sleep,
                limit=self.max_parallel_tools,
                final=self.output if answer.final_offered else None,
            )
            sid = frame.session.session_id
            if await tools.run(sid, frame.turn, frame.step, frame.signal, calls):
                return StepOutcome(max_tokens=False, ran_tools=True, paused=True)
            verdict = None
            if self.output is not None:
                verdict = judge(self.output, answer.final_offered, answer.message)
            return StepOutcome(max_tokens=False, ran_tools=bool(calls), verdict=verdict)
        except HarnessError as exc:
            frame.signal.wind_down(exc)  # a failed log: what is left gets the grace only
            raise
        finally:
            async with frame.signal.grace():
                await self.log.append(frame.session.session_id, StepEnd(frame.turn, frame.step))

    async def _attempts(
        self, frame: StepFrame, attempt: int, failed: FailedAttempt | None
    ) -> _Answer | Rejected:
        sid, signal = frame.session.session_id, frame.signal
        while True:
            if failed is not None:
                if self.output is not None and failed.failure.code == ErrorCode.OUTPUT_INVALID:
                    return self.output.rejected(failed.failure.message)
                decision = await self.decide(frame, failed)
                if signal.cancelled:
                    raise cancellation()  # cancellation beats a returned Retry (spec F21)
                match decision:
                    case GiveUp():
                        raise LlmError.from_failure(failed.failure)
                    case Retry():
                        failed = None
                    case _:
                        assert_never(decision, "request-error decision")
            if signal.cancelled:
                raise cancellation()
            request = await self._build_request(frame, attempt)
            # Checkpoint barrier: every request fact appended so far is durable before the
            # adapter is invoked. A failing flush propagates (turn error); no adapter call.
            await self.log.flush()
            if signal.cancelled:
                raise cancellation()
            options, prepared = request.options, request.prepared
            stream = self.runtime.stream(options) if prepared is None else prepared.stream(options)
            source = ModelSource(options.provider, options.model)
            assembler, seqs = await consume(
                self.log,
                sid,
                signal,
                stream,
                turn=frame.turn,
                step=frame.step,
                attempt=attempt,
                source=source,
                sink=frame.sink,
                context=frame.session.context,
            )
            finish = assembler.finish
            if isinstance(finish, (Error, Aborted)):
                policy = None if prepared is None else prepared.retry_policy
                failed = FailedAttempt(attempt, options.provider, finish.failure, policy)
                attempt += 1
                continue
            message = assembler.message(
                ModelSource(options.provider, options.model, assembler.replay_state)
            )
            await self.log.append(
                sid,
                AssistantMessage(
                    turn=frame.turn,
                    step=frame.step,
                    attempt=attempt,
                    message=message,
                    usage=assembler.usage,
                    source_event_seqs=seqs,
                ),
            )
            plan = request.plan
            return _Answer(message, finish, plan is not None and plan.final_tool is not None)

    async def _plan(self, config: CallConfig) -> AnswerPlan | None:
        """How this request asks for the typed output, from what the route advertises."""
        if self.output is None:
            return None
        info: ResolvedModelInfo | None = None
        try:
            info = await self.runtime.resolve_model_info(config.provider, config.model)
        except HarnessError as exc:
            if exc.code != ErrorCode.NO_ADAPTER:
                raise
        return plan_for(self.output, info, other_tools=bool(self.tools.schemas))

    async def _prepare(self, config: CallConfig) -> PreparedCallLike | None:
        """`prepare_call`, or None on `NO_ADAPTER` (a stream middleware may own the route)."""
        try:
            return await self.runtime.prepare_call(config)
        except HarnessError as exc:
            if exc.code != ErrorCode.NO_ADAPTER:
                raise
            return None

    async def _context_changed(self, session: SessionState, context: RequestContext) -> bool:
        """Whether `context` differs from the latest logged one (the view folds all but the
        prices, read back from the log once per session state)."""
        if session.view.latest_context != (context.provider, context.model, context.context_window):
            return True
        if session.context != context:
            latest = await self.log.latest(session.session_id, "request/context")
            logged = None if latest is None else latest.data
            session.context = logged if isinstance(logged, RequestContext) else None
        return session.context != context

    async def _build_request(self, frame: StepFrame, attempt: int) -> _Request:
        """MCP servers ready (`ToolBox.ready`) → seed config → `on_request` → `prepare_call` →
        header/context facts → the request, offering the tools listed at this moment."""
        await self.tools.ready()
        session = frame.session
        sid = session.session_id
        view = await session.view.refresh(self.log, sid)
        first = not session.requested
        config = await self.hooks.on_request.run(
            RequestHookContext(
                agent=self.agent,
                session_id=sid,
                turn=frame.turn,
                step=frame.step,
                attempt=attempt,
                config=self.seed.config(view.latest_header, first_request=first),
                signal=frame.signal,
                turn_target=(self.seed.provider, self.seed.model),
            )
        )
        if not isinstance(config, CallConfig) or not config.provider or not config.model:
            raise HarnessError(
                f"agent request for session {sid!r} needs a provider and a model, got {config!r}",
                ErrorCode.INVALID_CONFIG,
            )
        plan = await self._plan(config)
        system, tools = self.seed.system, self.tools.schemas
        if plan is not None:
            config = msgspec.structs.replace(
                config,
                output=config.output or plan.output,
                tool_choice=config.tool_choice or plan.tool_choice,
            )
            if plan.final_tool is not None:
                tools = (*tools, plan.final_tool)
            if plan.instruction is not None:
                system = f"{system}\n\n{plan.instruction}" if system else plan.instruction
        prepared = await self._prepare(config)
        resolved = config if prepared is None else prepared.config
        defaults = None if prepared is None else prepared.adapter_defaults
        header = canonical_header(resolved, defaults, system, tools)
        facts: list[RequestHeader | RequestContext] = []
        if first:
            facts.append(
                RequestHeader(header, "initial" if view.latest_header is None else "resume")
            )
        elif view.latest_header is None or not headers_equal(header, view.latest_header):
            facts.append(RequestHeader(header, "change"))
        context = _context(resolved, prepared)
        if await self._context_changed(session, context):
            facts.append(context)
        if facts:
            await self.log.append_many(sid, facts)
        session.context = context
        session.requested = True
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
            output=resolved.output,
            tool_choice=resolved.tool_choice,
            timeout_ms=self.seed.timeout_ms,
        )
        return _Request(options, prepared, plan)


def _context(config: CallConfig, prepared: PreparedCallLike | None) -> RequestContext:
    """The `request/context` fact of a request: route, model, window and list prices."""
    if prepared is None:
        return RequestContext(config.provider, config.model)
    window = None if prepared.context is None else prepared.context.context_window
    info = getattr(prepared, "model_info", None)  # `PreparedCall` has it; a fake may not
    pricing = info.pricing if isinstance(info, ResolvedModelInfo) else None
    return RequestContext(config.provider, config.model, window, pricing)
