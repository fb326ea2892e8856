"""The Turn frame of the agent loop: `Agent.run_turn` runs Steps until no tool calls remain.

`Agent.resume_turn` runs the same frame over a turn a dead process left open (see `resume.py`).
Each turn runs its Steps through one `StepRunner` (`step.py`), built when the turn starts with the
agent's request seed frozen then.

Every fact lands in the session log and the log — not this object — is the source of truth: a new
`Agent` over an existing session continues turn numbering from it and rebuilds every request from
it. One turn per session runs at a time per agent instance.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import ErrorCode, HarnessError, normalize_llm_failure
from ..runtime.validation import MAX_OUTPUT_TOKENS
from ..session.events import (
    AbortCause,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEnd,
    TurnEndReason,
    TurnErrored,
    TurnMaxTokens,
    TurnStart,
)
from ..session.log import SessionLog
from ..vocab import Message, ToolSchema
from .cancel import TurnCancelled, TurnSignal, cancellation
from .hooks import AgentHooks, Block, ErrorContext, PreStepContext
from .inputs import UserInput, as_user_message
from .ports import RuntimeLike
from .repair import DEFAULT_REPAIR_AFTER_MS, repair_facts
from .request import LogView, RequestSeed, derive_messages
from .result import TurnResult
from .resume import ResumePoint, resume_point, resume_step
from .step import SessionState, StepFrame, StepOutcome, StepRunner
from .tools import Tool, tool_map
from .wait import Sleep

__all__ = ["Agent", "AgentPlugin", "TurnResult", "UserInput"]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class _TurnState:
    """The running turn inside the frame: its number, where its events start, the Step count,
    the messages entering the next Step and, when resuming, where the dead process stopped."""

    turn: int
    start_seq: int
    step: int = 0
    entered: list[Message] = field(default_factory=list)
    resumed: ResumePoint | None = None


class AgentPlugin(Protocol):
    """A plugin: `install(agent)` registers hooks; a callable return value is its disposer.

    The disposer (sync or async) runs on `await agent.close()`, in reverse install order.
    """

    def install(self, agent: Agent) -> object:
        """Register this plugin's hooks on `agent`."""
        ...


def _check_max_tokens(value: object) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not 0 < value <= MAX_OUTPUT_TOKENS:
        raise HarnessError(
            f"agent max_tokens must be an integer in 1..{MAX_OUTPUT_TOKENS}, got {value!r}",
            ErrorCode.INVALID_CONFIG,
        )
    return value


class Agent:
    """The Turn/Step loop over one runtime and one session log (see the module docstring).

    `provider`/`model` seed the first request; `system` and `tools` go with every request (as
    they are when a turn starts); `plugins` are installed in order (`plugin.install(agent)`).
    `max_tokens`, when given, must be a positive safe integer (`INVALID_CONFIG` otherwise, before
    anything else happens). `clock` (epoch ms) and `sleep` (seconds, default `asyncio.sleep`) are
    the agent's time: the age of an open turn, and the rest of a decided retry's wait on resume.
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
        repair_after_ms: float = DEFAULT_REPAIR_AFTER_MS,
        cancel_grace_ms: float = 2_000.0,
        clock: Callable[[], int] | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        self.max_tokens = _check_max_tokens(max_tokens)
        if not isinstance(repair_after_ms, (int, float)) or not repair_after_ms >= 0:
            raise HarnessError(
                f"agent repair_after_ms must be a number >= 0, got {repair_after_ms!r}",
                ErrorCode.INVALID_CONFIG,
            )
        self.repair_after_ms = float(repair_after_ms)
        if not isinstance(cancel_grace_ms, (int, float)) or not cancel_grace_ms > 0:
            raise HarnessError(
                f"agent cancel_grace_ms must be a number > 0, got {cancel_grace_ms!r}",
                ErrorCode.INVALID_CONFIG,
            )
        self.cancel_grace_ms = float(cancel_grace_ms)
        self.clock: Callable[[], int] = clock or _now_ms
        self.sleep: Sleep = sleep or asyncio.sleep
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
        self._sessions: dict[str, SessionState] = {}
        self._inbox: dict[str, list[Message]] = {}
        self._signals: dict[str, TurnSignal] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._opened: dict[str, int] = {}  # session -> a turn this instance opened, not yet ended
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
        message = as_user_message(content)
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

    def _session(self, session_id: str) -> SessionState:
        """This instance's state of `session_id`: its log view (refresh it before use) and
        whether it has logged a request header there yet."""
        state = self._sessions.get(session_id)
        if state is None:
            state = self._sessions[session_id] = SessionState(session_id)
        return state

    def _runner(self) -> StepRunner:
        """The step object of a turn starting now, with the request seed frozen now."""
        seed = RequestSeed(
            provider=self.provider,
            model=self.model,
            max_tokens=self.max_tokens,
            reasoning_effort=self.reasoning_effort,
            temperature=self.temperature,
            system=self.system,
            tools=self.tool_schemas,
        )
        return StepRunner(
            agent=self,
            log=self.log,
            runtime=self.runtime,
            hooks=self.hooks,
            tools=self.tool_map,
            seed=seed,
            clock=self.clock,
            sleep=self.sleep,
        )

    # ---- the turn --------------------------------------------------------------------------

    async def run_turn(self, session_id: str, user_input: UserInput) -> TurnResult:
        """Run one new turn: `turn/start`, Steps until no tool calls remain, `turn/end`.

        A turn a dead process left open is repaired first (its unanswered tool calls answered
        `TOOL_INTERRUPTED`, then `step/end` and `turn/end {interrupted}`) and abandoned, retry
        chain included; `resume_turn` continues such a turn instead. Errors end the turn with
        reason `error` (returned, not raised). Cancelling the calling task writes
        `turn/end {aborted}` and re-raises `CancelledError`; a cancel issued from inside the turn
        (a hook calling `signal.cancel()`) returns reason `aborted` instead.
        """
        self._check_usable()
        first = as_user_message(user_input)
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            return await self._turn(
                session_id, lambda view: self._open_new(session_id, view, first)
            )

    async def resume_turn(self, session_id: str) -> TurnResult:
        """Continue the turn a dead process left open in `session_id`, under the same number.

        Unlike `run_turn` nothing is abandoned: an open Step without a committed message goes on
        with its next attempt (a retry the dead process decided is honoured: only the rest of its
        wait, then `llm/retry-started`; an undecided failure runs `on_request_error` again); an
        open Step whose message was committed gets `TOOL_INTERRUPTED` results for the tool calls
        without a result (tools are never run twice) and its `step/end`; then Steps go on until
        no tool calls remain. Only for a turn whose process is gone. No open turn (or no such
        session) raises `HarnessError` `NOTHING_TO_RESUME`; everything else is as in `run_turn`.
        """
        self._check_usable()
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            return await self._turn(session_id, lambda view: self._open_resumed(session_id, view))

    def _check_usable(self) -> None:
        if self._closed:
            raise HarnessError("agent is closed", ErrorCode.INVALID_ARGS)

    async def _open_new(self, sid: str, view: LogView, first: Message | None) -> _TurnState:
        turn = view.last_turn + 1
        # One conditional append: the repair and the turn number are decisions derived from
        # the view, so they land only if no other writer appended since (else STALE_WRITE).
        ours = self._opened.get(sid) == view.open_turn
        facts = [
            *repair_facts(sid, view, ours, self.clock(), self.repair_after_ms),
            TurnStart(turn),
        ]
        events = await self.log.append_many(sid, facts, expect_seq=view.next_seq)
        self._opened[sid] = turn
        return _TurnState(turn, events[-1].seq, entered=[first] if first is not None else [])

    async def _open_resumed(self, sid: str, view: LogView) -> _TurnState:
        start = await self.log.latest(sid, "turn/start")
        if view.open_turn is None or start is None:
            missing = "" if await self.log.exists(sid) else " (the session does not exist)"
            raise HarnessError(
                f"session {sid!r} has no open turn to resume{missing}", ErrorCode.NOTHING_TO_RESUME
            )
        point = resume_point(await self.log.read(sid, start.seq))
        self._opened[sid] = point.turn
        return _TurnState(point.turn, start.seq, step=point.step, resumed=point)

    async def _turn(
        self, sid: str, opener: Callable[[LogView], Awaitable[_TurnState]]
    ) -> TurnResult:
        """The turn frame shared by `run_turn` and `resume_turn`: open, Steps, `turn/end`."""
        log = self.log
        signal = TurnSignal(asyncio.current_task())
        self._signals[sid] = signal
        try:
            state = await opener(await self._session(sid).view.refresh(log, sid))
        except BaseException:
            self._signals.pop(sid, None)
            raise
        turn = state.turn
        reason: TurnEndReason = TurnCompleted()
        try:
            try:
                reason = await self._steps(sid, signal, state, self._runner())
            except Exception as exc:
                failure = normalize_llm_failure(exc)
                reason = TurnErrored(failure)
                self._notify_error(
                    ErrorContext(
                        session_id=sid, turn=turn, step=state.step, failure=failure, error=exc
                    )
                )
        except TurnCancelled:
            reason = TurnAborted(AbortCause(signal.cause or "user", signal.reason))
        except asyncio.CancelledError:
            # Bounded whatever the log does: a stalled log gets `cancel_grace_ms` to take the
            # turn/end (the write goes on in the background); a turn left open is repaired later.
            aborted = TurnAborted(AbortCause(signal.cause or "user", signal.reason))
            with contextlib.suppress(TimeoutError, HarnessError):
                async with asyncio.timeout(self.cancel_grace_ms / 1000.0):
                    await self._end(sid, turn, aborted)
            raise
        finally:
            self._signals.pop(sid, None)
        await self._end(sid, turn, reason)
        messages = derive_messages(await log.read(sid, state.start_seq))
        return TurnResult(turn, reason, messages)

    async def _steps(
        self, sid: str, signal: TurnSignal, state: _TurnState, runner: StepRunner
    ) -> TurnEndReason:
        """Run Steps until no tool calls (and no injected messages) remain; the turn's reason."""
        session = self._session(sid)
        max_tokens = False
        more = True
        if state.resumed is not None:
            frame = StepFrame(session, signal, state.turn, state.step)
            settled = await resume_step(runner, frame, state.resumed)
            if isinstance(settled, StepOutcome):
                max_tokens = settled.max_tokens
                more = settled.ran_tools or bool(self._inbox.get(sid))
            elif settled is not None:
                return settled
            if signal.cancelled:
                raise cancellation()
        while more:
            state.entered.extend(self._inbox.pop(sid, ()))
            if state.step == 0 and not state.entered:
                break  # nothing to say: the turn completes without a step
            state.step += 1
            await self.log.flush()  # pre-step checkpoint: the previous step is durable
            decision = await self.hooks.on_pre_step.run(
                PreStepContext(
                    agent=self,
                    session_id=sid,
                    turn=state.turn,
                    step=state.step,
                    messages=tuple(state.entered),
                    signal=signal,
                )
            )
            if isinstance(decision, Block):
                return TurnBlocked()
            state.entered = []
            frame = StepFrame(session, signal, state.turn, state.step)
            outcome = await runner.run(frame, tuple(decision))
            max_tokens = max_tokens or outcome.max_tokens
            more = outcome.ran_tools or bool(self._inbox.get(sid))
            if signal.cancelled:
                raise cancellation()
        return TurnMaxTokens() if max_tokens else TurnCompleted()

    async def _end(self, sid: str, turn: int, reason: TurnEndReason) -> None:
        """Append `turn/end` and flush; a failing flush is raised unless the turn already failed."""
        await self.log.append(sid, TurnEnd(turn, reason))
        try:
            await self.log.flush()
        except Exception:
            if not isinstance(reason, (TurnErrored, TurnAborted)):
                raise
        if self._opened.get(sid) == turn:
            del self._opened[sid]

    def _notify_error(self, ctx: ErrorContext) -> None:
        for observer in tuple(self.hooks.on_error):
            try:
                observer(ctx)
            except Exception:  # observers must not change the turn's outcome
                continue
