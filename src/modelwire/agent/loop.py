"""The Turn frame of the agent loop: `Agent.run_turn` runs Steps until no tool calls remain.

`Agent.resume_turn` runs the same frame over a turn a dead process left open (see `resume.py`).
Each turn runs its Steps through one `StepRunner` (`step.py`), with the request seed frozen then.
The session log, not this object, is the source of truth: a new `Agent` over an existing session
continues its turn numbering and rebuilds every request from it. One turn per session runs at a
time per agent; its Steps, limits and typed output are run by a `TurnLoop` (`turn.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Generic, Protocol, TypeVar, overload

from ..errors import HarnessError
from ..runtime.sync import run_sync
from ..session.lease import Lease
from ..session.log import SessionLog
from ..vocab import Message, StreamChunk
from .cancel import TurnSignal
from .controls import AgentControls
from .frame import run_frame
from .hooks import AgentHooks
from .inputs import UserInput, as_user_message
from .leasing import DEFAULT_LEASE_MS, TurnLeases
from .limits import UsageLimits, check_count, check_usage_limits
from .options import check_deadline_ms, check_max_tokens, check_ms, output_of, tool_map
from .output import OutputSpec
from .ports import RuntimeLike
from .repair import DEFAULT_REPAIR_AFTER_MS
from .request import LogView, RequestSeed
from .result import OutputT, TurnResult
from .setup import ConfigSource, LazyLog, default_log_url, open_runtime, served_model
from .step import SessionState, StepRunner
from .streaming import TurnStream
from .toolbox import ToolBox, ToolSource
from .tools import Tool
from .turn import TurnState, open_new, open_resumed
from .wait import Sleep

__all__ = ["Agent", "AgentPlugin", "TurnResult", "UserInput"]

U = TypeVar("U")


class AgentPlugin(Protocol):
    """A plugin: `install(agent)` registers hooks; a callable return value is its disposer.

    The disposer (sync or async) runs on `await agent.close()`, in reverse install order.
    """

    def install(self, agent: Agent[Any]) -> object:  # Any: agents of every output type
        """Register this plugin's hooks on `agent`."""
        ...


class Agent(AgentControls, Generic[OutputT]):
    """The Turn/Step loop over one runtime and one session log (see the module docstring).

    `provider`/`model` seed the first request; `system` and `tools` (`Tool`s, or typed functions
    for `Tool.from_function`) go with every request (as they are when a turn starts); `plugins`
    are installed in order. `output_type` (msgspec struct, dataclass, TypedDict or plain type;
    `str`/None: the answer text) is what `TurnResult.output` holds. Limits: `max_steps` and
    `usage_limits` per turn, `output_retries` corrections, `max_parallel_tools` per step. Every
    option is checked here (`INVALID_CONFIG` naming the field). `timeout_ms` is each model call's
    total deadline (None: the route's, 0: none). `clock` (epoch ms) and `sleep` (seconds) are the
    agent's time: an open turn's age, a resumed retry's wait, tool timeouts.
    Each turn holds the session's lease: `lease_ms` long (None: no lease), renewed every
    `lease_renew_ms` (default a third), taken as `owner` (default host:pid:random). `mcp_servers`
    (`MCPServer`s) add tools `<server>_<tool>`, started at the first request, stopped by `close()`.
    """

    def __init__(
        self,
        runtime: RuntimeLike,
        log: SessionLog,
        provider: str,
        model: str,
        *,
        system: str | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),  # Any: a tool function's parameters
        plugins: Iterable[AgentPlugin] = (),
        mcp_servers: Iterable[ToolSource] = (),
        output_type: type[OutputT] | None = None,
        output_retries: int = 1,
        max_steps: int = 50,
        max_parallel_tools: int = 8,
        usage_limits: UsageLimits | Mapping[str, int | None] | None = None,
        max_tokens: int | None = None,
        reasoning_effort: str | None = None,
        temperature: float | None = None,
        timeout_ms: int | None = None,
        repair_after_ms: float = DEFAULT_REPAIR_AFTER_MS,
        lease_ms: float | None = DEFAULT_LEASE_MS,
        lease_renew_ms: float | None = None,
        owner: str | None = None,
        cancel_grace_ms: float = 2_000.0,
        clock: Callable[[], int] | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        self.max_tokens = check_max_tokens(max_tokens)
        self.timeout_ms = check_deadline_ms("timeout_ms", timeout_ms)
        self.repair_after_ms = check_ms("repair_after_ms", repair_after_ms, zero=True)
        self.cancel_grace_ms = check_ms("cancel_grace_ms", cancel_grace_ms, zero=False)
        self.max_steps = check_count("max_steps", max_steps, 1)
        self.max_parallel_tools = check_count("max_parallel_tools", max_parallel_tools, 1)
        self.output_retries = check_count("output_retries", output_retries, 0)
        self.usage_limits = check_usage_limits(usage_limits)
        self.tool_map: dict[str, Tool] = tool_map(tools)
        self._outputs: dict[object, OutputSpec | None] = {}
        self.output_type = output_type
        self.output = output_of(output_type, self.tool_map, self._outputs)
        self.clock: Callable[[], int] = clock or (lambda: time.time_ns() // 1_000_000)
        self.sleep: Sleep = sleep or asyncio.sleep
        self.toolbox = ToolBox(self.tool_map, mcp_servers, self.sleep)
        self.runtime = runtime
        self.log = log
        self.leases = TurnLeases(
            log,
            owner=owner,
            lease_ms=lease_ms,
            renew_ms=lease_renew_ms,
            release_ms=self.cancel_grace_ms,
        )
        self.provider = provider
        self.model = model
        self.system = system
        self.reasoning_effort = reasoning_effort
        self.temperature = temperature
        super().__init__()
        self.hooks = AgentHooks()
        self._sessions: dict[str, SessionState] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._opened: dict[str, int] = {}  # session -> a turn this instance opened, not yet ended
        for plugin in plugins:
            self.use(plugin)

    @classmethod
    def from_model(
        cls,
        model: str | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),  # Any: a tool function's parameters
        log: SessionLog | str | None = None,
        *,
        output_type: type[OutputT] | None = None,
        config: ConfigSource = None,
        runtime: RuntimeLike | None = None,
        system: str | None = None,
        plugins: Iterable[AgentPlugin] = (),
        output_retries: int = 1,
        max_steps: int = 50,
        max_parallel_tools: int = 8,
        usage_limits: UsageLimits | Mapping[str, int | None] | None = None,
        max_tokens: int | None = None,
        reasoning_effort: str | None = None,
        temperature: float | None = None,
        timeout_ms: int | None = None,
        repair_after_ms: float = DEFAULT_REPAIR_AFTER_MS,
        lease_ms: float | None = DEFAULT_LEASE_MS,
        lease_renew_ms: float | None = None,
        owner: str | None = None,
        cancel_grace_ms: float = 2_000.0,
        clock: Callable[[], int] | None = None,
        sleep: Sleep | None = None,
        mcp_servers: Iterable[ToolSource] = (),
    ) -> Agent[OutputT]:
        """An agent on `"route:model"` (None: the config's `[default]`) with the routes of
        `open_runtime(config)` (or `runtime`) and the log `log` (a `SessionLog`; a URL, opened on
        first use, closed by `close()`; None: `$MODELWIRE_LOG`, else the default SQLite file)."""
        served = runtime if runtime is not None else open_runtime(config)
        provider, name = served_model(served, model)
        url = default_log_url() if log is None else log
        opened = LazyLog(url) if isinstance(url, str) else url
        agent = cls(
            served,
            opened,
            provider,
            name,
            system=system,
            tools=tools,
            plugins=plugins,
            output_type=output_type,
            output_retries=output_retries,
            max_steps=max_steps,
            max_parallel_tools=max_parallel_tools,
            usage_limits=usage_limits,
            max_tokens=max_tokens,
            reasoning_effort=reasoning_effort,
            temperature=temperature,
            timeout_ms=timeout_ms,
            repair_after_ms=repair_after_ms,
            lease_ms=lease_ms,
            lease_renew_ms=lease_renew_ms,
            owner=owner,
            cancel_grace_ms=cancel_grace_ms,
            clock=clock,
            sleep=sleep,
            mcp_servers=mcp_servers,
        )
        if opened is not url:
            agent._disposers.insert(0, opened.close)  # the log it opened closes last
        return agent

    def use(self, plugin: AgentPlugin) -> None:
        """Install a plugin now; a callable returned by `install` is kept as its disposer."""
        disposer = plugin.install(self)
        if callable(disposer):
            self._disposers.append(disposer)

    async def _start(self) -> None:
        await self.toolbox.ready()

    async def _release(self) -> None:
        await self.toolbox.aclose()

    def _session(self, session_id: str) -> SessionState:
        """This instance's state of `session_id`: its log view (refresh before use), header sent."""
        state = self._sessions.get(session_id)
        if state is None:
            state = self._sessions[session_id] = SessionState(session_id)
        return state

    def _runner(self, output: OutputSpec | None, timeout_ms: int | None = None) -> StepRunner:
        """The step object of a turn starting now, with the request seed frozen now."""
        seed = RequestSeed(
            provider=self.provider,
            model=self.model,
            max_tokens=self.max_tokens,
            reasoning_effort=self.reasoning_effort,
            temperature=self.temperature,
            system=self.system,
            timeout_ms=self.timeout_ms if timeout_ms is None else timeout_ms,
        )
        return StepRunner(
            agent=self,
            log=self.log,
            runtime=self.runtime,
            hooks=self.hooks,
            tools=self.toolbox,
            seed=seed,
            clock=self.clock,
            sleep=self.sleep,
            output=output,
            max_parallel_tools=self.max_parallel_tools,
        )

    @overload
    async def run_turn(
        self,
        session_id: str,
        user_input: UserInput,
        *,
        lease: Lease | None = None,
        ticket: str | None = None,
        timeout_ms: int | None = None,
    ) -> TurnResult[OutputT]: ...
    @overload
    async def run_turn(
        self,
        session_id: str,
        user_input: UserInput,
        *,
        output_type: type[U],
        lease: Lease | None = None,
        ticket: str | None = None,
        timeout_ms: int | None = None,
    ) -> TurnResult[U]: ...
    async def run_turn(
        self,
        session_id: str,
        user_input: UserInput,
        *,
        output_type: object = None,
        lease: Lease | None = None,
        ticket: str | None = None,
        timeout_ms: int | None = None,
    ) -> TurnResult[Any]:  # Any: the output type of this turn (overloads above)
        """Run one new turn: `turn/start`, Steps until no tool calls remain, `turn/end`.

        A turn a dead process left open is repaired first (unanswered calls get
        `TOOL_INTERRUPTED`, then `step/end`, `turn/end {interrupted}`) and abandoned, retries
        included; `resume_turn` continues one instead. Errors end the turn with reason `error`
        (returned). Cancelling the calling task writes `turn/end {aborted}` and re-raises
        `CancelledError`; a cancel from inside the turn (a hook's `signal.cancel()`) returns
        reason `aborted`. The lease is taken first (a live writer's: `TURN_IN_PROGRESS`; a dead
        holder's open turn is then repaired) or `lease` (a queue's claim) held; losing it raises
        `LEASE_LOST`. `ticket` goes on `turn/start`; `output_type`, `timeout_ms` are this turn's.
        """
        deadline = check_deadline_ms("timeout_ms", timeout_ms)
        return await self._new_turn(session_id, user_input, output_type, lease, ticket, deadline)

    def stream_turn(self, session_id: str, user_input: UserInput) -> TurnStream[OutputT]:
        """`run_turn`, streamed: `async for chunk in agent.stream_turn(sid, text)` (or
        `.text()`) as the turn runs, then `await` it for the `TurnResult` (`streaming.py`)."""
        return TurnStream(
            lambda heard: self._new_turn(session_id, user_input, None, listener=heard)
        )

    async def _new_turn(
        self,
        session_id: str,
        user_input: UserInput,
        output_type: object,
        lease: Lease | None = None,
        ticket: str | None = None,
        timeout_ms: int | None = None,
        listener: Callable[[StreamChunk], None] | None = None,
    ) -> TurnResult[Any]:  # Any: the output type of this turn
        self._check_usable()
        first = as_user_message(user_input)
        output = self._output(output_type)
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            return await self._turn(
                session_id,
                output,
                lease,
                lambda view, held: self._open_new(session_id, view, first, held, ticket),
                listener,
                timeout_ms,
            )

    @overload
    def run_sync(self, session_id: str, user_input: UserInput) -> TurnResult[OutputT]: ...
    @overload
    def run_sync(
        self, session_id: str, user_input: UserInput, *, output_type: type[U]
    ) -> TurnResult[U]: ...
    def run_sync(
        self, session_id: str, user_input: UserInput, *, output_type: Any = None
    ) -> TurnResult[Any]:  # Any: the output type of this turn (overloads above)
        """`run_turn` for scripts and notebooks: blocks until the turn ends. Works with no running
        loop and inside one (every sync call runs on one background loop, `runtime.sync`);
        `Ctrl-C` cancels the turn (`turn/end {aborted}`) and re-raises `KeyboardInterrupt`."""
        return run_sync(lambda: self.run_turn(session_id, user_input, output_type=output_type))

    async def resume_turn(
        self, session_id: str, *, output_type: object = None, lease: Lease | None = None
    ) -> TurnResult[Any]:  # Any: the agent's output type, or this turn's `output_type`
        """Continue the turn a dead process left open, or the paused turn, of `session_id`.

        Nothing is abandoned: an open Step without a committed message goes on with its next
        attempt (a retry the dead process decided is honoured: only the rest of its wait; an
        undecided failure runs `on_request_error` again); an open Step whose message was
        committed gets `TOOL_INTERRUPTED` results for the calls without one (tools never run
        twice) and its `step/end`. A paused turn whose calls are all decided (`decide`; else
        `APPROVAL_PENDING`) runs its approved calls once and answers its denied ones
        `TOOL_DENIED`. Then Steps go on until no tool calls remain. The lease is taken first (a
        live holder's turn: `TURN_IN_PROGRESS`); nothing to resume is `NOTHING_TO_RESUME`; the
        rest is as in `run_turn`, limits counted from the log."""
        self._check_usable()
        output = self._output(output_type)
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            return await self._turn(
                session_id, output, lease, lambda view, _: self._open_resumed(session_id, view)
            )

    def _output(self, output_type: object) -> OutputSpec | None:
        if output_type is None:
            return self.output
        return output_of(output_type, self.tool_map, self._outputs)

    async def _open_new(
        self, sid: str, view: LogView, first: Message | None, held: Lease | None, ticket: str | None
    ) -> TurnState:
        # A lease taken over from an earlier holder proves that holder gone.
        ours = self._opened.get(sid) == view.open_turn or (held is not None and bool(held.prior))
        now = self.clock()
        state = await open_new(self.log, sid, view, first, ticket, ours, now, self.repair_after_ms)
        self._opened[sid] = state.turn
        return state

    async def _open_resumed(self, sid: str, view: LogView) -> TurnState:
        state = await open_resumed(self.log, sid, view)
        self._opened[sid] = state.turn
        return state

    async def _turn(
        self,
        sid: str,
        output: OutputSpec | None,
        given: Lease | None,
        opener: Callable[[LogView, Lease | None], Awaitable[TurnState]],
        listener: Callable[[StreamChunk], None] | None = None,
        timeout_ms: int | None = None,
    ) -> TurnResult[Any]:  # Any: the turn's output type
        """The turn under the session's lease (`leasing.py`)."""
        signal = TurnSignal(asyncio.current_task(), self.cancel_grace_ms)

        def lost(error: HarnessError) -> None:
            signal.cancel("disposed", f"lease lost: {error.message}")

        async with self._running(sid, signal), self.leases.turn(sid, given, lost, signal) as held:
            return await run_frame(
                self, sid, output, signal, lambda v: opener(v, held), listener, timeout_ms
            )
