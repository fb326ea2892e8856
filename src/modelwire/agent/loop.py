"""The Turn frame of the agent loop: `Agent.run_turn` runs Steps until no tool calls remain.

Every fact lands in the session log and the log — not this object — is the source of truth: a new
`Agent` over an existing session continues turn numbering from it and rebuilds every request from
it. One turn per session runs at a time per agent instance.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import ErrorCode, HarnessError, normalize_llm_failure
from ..session.events import (
    AbortCause,
    StepEnd,
    ToolResultRecord,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEnd,
    TurnEndReason,
    TurnErrored,
    TurnInterrupted,
    TurnMaxTokens,
    TurnStart,
)
from ..session.log import SessionLog
from ..vocab import CallConfig, ContentBlock, LlmFailure, Message, TextBlock, ToolSchema
from ..vocab.messages import tool_result_message, user_message
from .hooks import AgentHooks, AgentPlugin, Block, ErrorContext, PreStepContext, TurnSignal
from .ports import RuntimeLike
from .request import LogView, derive_messages
from .step import TurnCancelled, cancellation, run_step
from .tools import Tool, tool_map

_INTERRUPTED_TOOL_TEXT = (
    "this tool call was interrupted before it produced a result; it may not have run"
)

__all__ = ["Agent", "TurnResult", "UserInput"]

UserInput = str | Message | Sequence[ContentBlock] | None
"""What a turn starts with: text, a ready user message, content blocks, or nothing (inbox only)."""

_MAX_SAFE_INT = 2**53 - 1


@dataclass(frozen=True, slots=True)
class TurnResult:
    """The outcome of one turn: its number, why it ended and the messages it added, in log order."""

    turn: int
    reason: TurnEndReason
    messages: tuple[Message, ...]

    @property
    def failure(self) -> LlmFailure | None:
        """The failure of a turn that ended in error, else None."""
        return self.reason.failure if isinstance(self.reason, TurnErrored) else None

    @property
    def text(self) -> str:
        """The text blocks of the last assistant message, joined (empty when there is none)."""
        for message in reversed(self.messages):
            if message.role == "assistant":
                return "".join(b.text for b in message.content if isinstance(b, TextBlock))
        return ""


def _check_max_tokens(value: object) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not 0 < value <= _MAX_SAFE_INT:
        raise HarnessError(
            f"agent max_tokens must be a positive safe integer, got {value!r}",
            ErrorCode.INVALID_CONFIG,
        )
    return value


def _as_message(content: UserInput) -> Message | None:
    if content is None:
        return None
    if isinstance(content, Message):
        if content.role != "user":
            raise HarnessError(
                f"turn input must be a user message, got role {content.role!r}",
                ErrorCode.INVALID_ARGS,
            )
        return content
    return user_message(content)


class Agent:
    """The Turn/Step loop over one runtime and one session log (see the module docstring).

    `provider`/`model` seed the first request; `system` and `tools` go with every request;
    `plugins` are installed in order (`plugin.install(agent)`). `max_tokens`, when given, must be a
    positive safe integer (`INVALID_CONFIG` otherwise, before anything else happens).
    """

    def __init__(
        self,
        runtime: RuntimeLike,
        log: SessionLog,
        provider: str,
        model: str,
        *,
        system: str | None = None,
        tools: Iterable[Tool] = (),
        plugins: Iterable[AgentPlugin] = (),
        max_tokens: int | None = None,
        reasoning_effort: str | None = None,
        temperature: float | None = None,
    ) -> None:
        self.max_tokens = _check_max_tokens(max_tokens)
        self.runtime = runtime
        self.log = log
        self.provider = provider
        self.model = model
        self.system = system
        self.reasoning_effort = reasoning_effort
        self.temperature = temperature
        tool_list = list(tools)
        self.tool_map: dict[str, Tool] = tool_map(tool_list)
        self.tool_schemas: tuple[ToolSchema, ...] = tuple(tool.schema for tool in tool_list)
        self.hooks = AgentHooks()
        self._requested: set[str] = set()
        self._views: dict[str, LogView] = {}
        self._inbox: dict[str, list[Message]] = {}
        self._signals: dict[str, TurnSignal] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._disposers: list[Callable[[], object]] = []
        self._closed = False
        for plugin in plugins:
            self.use(plugin)

    # ---- plugins, inbox, cancellation ----------------------------------------------------------

    def use(self, plugin: AgentPlugin) -> None:
        """Install a plugin now; a callable returned by `install` is kept as its disposer."""
        disposer = plugin.install(self)
        if callable(disposer):
            self._disposers.append(disposer)

    def inject(self, session_id: str, content: UserInput) -> None:
        """Queue a user message; it enters the session at the start of the next Step."""
        message = _as_message(content)
        if message is not None:
            self._inbox.setdefault(session_id, []).append(message)

    def cancel(self, session_id: str, kind: AbortCause | None = None) -> bool:
        """Cancel the running turn of `session_id` (cause `user` by default); False if none runs."""
        signal = self._signals.get(session_id)
        if signal is None:
            return False
        cause = kind or AbortCause("user")
        signal.cancel(cause.kind, cause.reason)
        return True

    async def close(self) -> None:
        """Cancel running turns (cause `disposed`) and run plugin disposers in reverse order."""
        if self._closed:
            return
        self._closed = True
        for signal in list(self._signals.values()):
            signal.cancel("disposed")
        while self._disposers:
            result = self._disposers.pop()()
            if inspect.isawaitable(result):
                await result

    def first_request(self, session_id: str) -> bool:
        """True until this instance has logged a request header for `session_id`."""
        return session_id not in self._requested

    def view(self, session_id: str) -> LogView:
        """This instance's incremental view of `session_id` (refresh it before use)."""
        view = self._views.get(session_id)
        if view is None:
            view = self._views[session_id] = LogView()
        return view

    def mark_requested(self, session_id: str, config: CallConfig) -> None:
        """Record that this instance built a request for `session_id` (header logged)."""
        self._requested.add(session_id)

    # ---- the turn --------------------------------------------------------------------------

    async def run_turn(self, session_id: str, user_input: UserInput) -> TurnResult:
        """Run one turn: `turn/start`, Steps until no tool calls remain, `turn/end`.

        Errors end the turn with reason `error` (returned, not raised). Cancelling the calling task
        writes `turn/end {aborted}` and re-raises `CancelledError`; a cancel issued from inside the
        turn (a hook calling `signal.cancel()`) returns reason `aborted` instead.
        """
        if self._closed:
            raise HarnessError("agent is closed", ErrorCode.INVALID_ARGS)
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            return await self._run_turn(session_id, _as_message(user_input))

    async def _run_turn(self, sid: str, first: Message | None) -> TurnResult:
        log = self.log
        task = asyncio.current_task()
        signal = TurnSignal(task)
        self._signals[sid] = signal
        view = await self.view(sid).refresh(log, sid)
        await self._repair(sid, view)
        turn = view.last_turn + 1
        start = await log.append(sid, TurnStart(turn))
        reason: TurnEndReason = TurnCompleted()
        step = 0
        entered: list[Message] = [first] if first is not None else []
        try:
            try:
                max_tokens = False
                more = True
                while more:
                    entered.extend(self._inbox.pop(sid, ()))
                    if step == 0 and not entered:
                        break  # nothing to say: the turn completes without a step
                    step += 1
                    await log.flush()  # pre-step checkpoint: the previous step is durable
                    decision = await self.hooks.on_pre_step.run(
                        PreStepContext(
                            agent=self,
                            session_id=sid,
                            turn=turn,
                            step=step,
                            messages=tuple(entered),
                            signal=signal,
                        )
                    )
                    if isinstance(decision, Block):
                        reason = TurnBlocked()
                        break
                    entered = []
                    outcome = await run_step(self, sid, signal, turn, step, tuple(decision))
                    max_tokens = max_tokens or outcome.max_tokens
                    more = outcome.ran_tools or bool(self._inbox.get(sid))
                    if signal.cancelled:
                        raise cancellation()
                if not isinstance(reason, TurnBlocked):
                    reason = TurnMaxTokens() if max_tokens else TurnCompleted()
            except Exception as exc:
                failure = normalize_llm_failure(exc)
                reason = TurnErrored(failure)
                self._notify_error(
                    ErrorContext(session_id=sid, turn=turn, step=step, failure=failure, error=exc)
                )
        except TurnCancelled:
            reason = TurnAborted(AbortCause(signal.cause or "user", signal.reason))
        except asyncio.CancelledError:
            await self._end(
                sid, turn, TurnAborted(AbortCause(signal.cause or "user", signal.reason))
            )
            raise
        finally:
            self._signals.pop(sid, None)
        await self._end(sid, turn, reason)
        messages = derive_messages(await log.read(sid, start.seq))
        return TurnResult(turn, reason, messages)

    async def _end(self, sid: str, turn: int, reason: TurnEndReason) -> None:
        """Append `turn/end` and flush; a failing flush is raised unless the turn already failed."""
        await self.log.append(sid, TurnEnd(turn, reason))
        try:
            await self.log.flush()
        except Exception:
            if not isinstance(reason, (TurnErrored, TurnAborted)):
                raise

    async def _repair(self, sid: str, view: LogView) -> None:
        """Close what an earlier turn left open before a new turn starts.

        Tool calls committed without a result (the process died, or the turn was cancelled,
        between the assistant message and its tools) get an error `tool/result` with code
        `TOOL_INTERRUPTED`, so the next request never carries an unanswered tool call (providers
        reject that); then a turn left open by a dead process gets `step/end` and
        `turn/end {interrupted}`.
        """
        facts: list[ToolResultRecord | StepEnd | TurnEnd] = [
            ToolResultRecord(
                turn=turn,
                step=step,
                call_id=call_id,
                name=name,
                message=tool_result_message(call_id, _INTERRUPTED_TOOL_TEXT, is_error=True),
                is_error=True,
                error_code=ErrorCode.TOOL_INTERRUPTED,
            )
            for call_id, (turn, step, name) in view.unanswered.items()
        ]
        if view.open_turn is not None:
            if view.open_step is not None:
                facts.append(StepEnd(*view.open_step))
            facts.append(TurnEnd(view.open_turn, TurnInterrupted()))
        if facts:
            await self.log.append_many(sid, facts)

    def _notify_error(self, ctx: ErrorContext) -> None:
        for observer in tuple(self.hooks.on_error):
            try:
                observer(ctx)
            except Exception:  # observers must not change the turn's outcome
                continue
