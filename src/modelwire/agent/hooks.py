"""The agent's live extension points: waterfalls, their payloads and the decisions they return.

A `Waterfall` runs its listeners in registration order: the first-registered listener runs first
and reaches the later ones through `call_next()`; the last `call_next()` returns the default.
A "downstream-first" listener (e.g. always-mode retry) simply awaits `call_next()` before deciding.

`on_request_error` is a `RequestErrorWaterfall`, whose result is always an explicit decision:
`Retry()` (another attempt inside the same Step) or `GiveUp()` (the turn ends in error with the
failure). A listener returns one of them, or None for "no decision": then the rest of the chain
decides (it runs now, unless the listener already ran it through `call_next()`), and a chain in
which nobody decides gives up. `GiveUp()` stops the chain: the later listeners are not entered.
`call_next()` runs the rest of the chain at most once (a second call returns the first call's
answer) and answers `Retry()` if it decided to retry, else None — so listeners written before
`GiveUp` existed (`return None`, `if await call_next() is None`) keep working unchanged.

`on_turn` and `on_tool` are `Wrappers`: observers around a turn's Steps and one tool call (e.g.
tracing); a wrapper sees the work's result or exception through `call_next()`, never changes it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Generic, Literal, Protocol, TypeAlias, TypeVar

import msgspec

from ..policy import RetryPolicy
from ..session.events import AbortCause, TurnEndReason
from ..session.log import SessionLog
from ..vocab import CallConfig, LlmFailure, Message, ToolCallBlock
from .cancel import AbortKind, TurnSignal
from .inputs import UserInput

__all__ = [
    "AbortKind",
    "AgentHooks",
    "AgentLike",
    "Block",
    "ErrorContext",
    "GiveUp",
    "NextDecision",
    "PreStepContext",
    "RequestErrorContext",
    "RequestErrorDecision",
    "RequestErrorListener",
    "RequestErrorWaterfall",
    "RequestHookContext",
    "Retry",
    "ToolEnd",
    "ToolHookContext",
    "ToolWrappers",
    "TurnHookContext",
    "TurnSignal",
    "Waterfall",
    "Wrappers",
]

P = TypeVar("P")
R = TypeVar("R")
L = TypeVar("L")
T = TypeVar("T")


class Retry(msgspec.Struct, frozen=True):
    """Returned by an `on_request_error` listener: run another attempt inside the same Step."""

    kind: ClassVar[Literal["retry"]] = "retry"


class GiveUp(msgspec.Struct, frozen=True):
    """Returned by an `on_request_error` listener: no other attempt, and no later listener is
    asked; the turn ends in error with the attempt's failure."""

    kind: ClassVar[Literal["give-up"]] = "give-up"


RequestErrorDecision: TypeAlias = Retry | GiveUp
"""What the request-error waterfall decides for a failed attempt."""


class Block(msgspec.Struct, frozen=True):
    """Returned by an `on_pre_step` listener: refuse the step; the turn ends `blocked`."""

    kind: ClassVar[Literal["blocked"]] = "blocked"


class AgentLike(Protocol):
    """What a hook payload carries of the agent that runs the turn (`Agent` is one)."""

    @property
    def log(self) -> SessionLog:
        """The session log the agent writes."""
        ...

    @property
    def hooks(self) -> AgentHooks:
        """The agent's extension points."""
        ...

    def inject(self, session_id: str, content: UserInput) -> None:
        """Queue a user message for the next Step of `session_id`."""
        ...

    def cancel(self, session_id: str, kind: AbortCause | None = None) -> bool:
        """Cancel the running turn of `session_id`."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestHookContext:
    """Payload of `on_request`: the step being requested and the seed call config (the default);
    `turn_target` is the turn's configured (route, model), which `config` may have moved off."""

    agent: AgentLike
    session_id: str
    turn: int
    step: int
    attempt: int
    config: CallConfig
    signal: TurnSignal
    turn_target: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestErrorContext:
    """Payload of `on_request_error`: one failed attempt and the policy of the call that served it.

    `retry_policy` is None when no adapter registration served the attempt (e.g. `NO_ADAPTER`).
    """

    agent: AgentLike
    session_id: str
    log: SessionLog
    turn: int
    step: int
    attempt: int
    provider: str
    failure: LlmFailure
    retry_policy: RetryPolicy | None
    signal: TurnSignal


@dataclass(frozen=True, slots=True, kw_only=True)
class PreStepContext:
    """Payload of `on_pre_step`: the messages about to enter the step (the default result)."""

    agent: AgentLike
    session_id: str
    turn: int
    step: int
    messages: tuple[Message, ...]
    signal: TurnSignal


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorContext:
    """Payload of `on_error` observers: a turn ended in error at (turn, step)."""

    session_id: str
    turn: int
    step: int
    failure: LlmFailure
    error: BaseException


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnHookContext:
    """Payload of `on_turn`: the turn whose Steps are about to run (new or resumed)."""

    agent: AgentLike
    session_id: str
    turn: int
    signal: TurnSignal


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolHookContext:
    """Payload of `on_tool`: one tool call of a step, about to run in its own task."""

    agent: AgentLike
    session_id: str
    turn: int
    step: int
    call: ToolCallBlock
    signal: TurnSignal


class ToolEnd(Protocol):
    """What an `on_tool` wrapper sees of a finished call (`ToolOutcome` is one)."""

    @property
    def message(self) -> Message:
        """The tool-result message."""
        ...

    @property
    def is_error(self) -> bool:
        """Whether the call failed."""
        ...

    @property
    def error_code(self) -> str | None:
        """The failure's stable code (`TOOL_FAILED`, `TOOL_TIMEOUT`, ...), None on success."""
        ...


Listener: TypeAlias = Callable[[P, Callable[[], Awaitable[R]]], Awaitable[R]]
"""A waterfall listener: `async (payload, call_next) -> result`."""

NextDecision: TypeAlias = Callable[[], Awaitable[Retry | None]]
"""A request-error listener's `call_next`: `Retry()` if the rest of the chain retries, else None."""

RequestErrorListener: TypeAlias = Callable[
    [RequestErrorContext, NextDecision], Awaitable[RequestErrorDecision | None]
]
"""An `on_request_error` listener: `async (ctx, call_next) -> Retry() | GiveUp() | None`."""


class _Chain(Generic[L]):
    """An ordered, named list of listeners with disposers."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._listeners: list[L] = []

    def add(self, listener: L) -> Callable[[], None]:
        """Append `listener` (it runs after those registered earlier); returns its disposer."""
        self._listeners.append(listener)

        def dispose() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return dispose

    def __len__(self) -> int:
        return len(self._listeners)


class Waterfall(_Chain[Listener[P, R]], Generic[P, R]):
    """An ordered chain of async listeners with a default at the end (see the module docstring)."""

    def __init__(self, name: str, default: Callable[[P], R]) -> None:
        super().__init__(name)
        self._default = default

    async def run(self, payload: P) -> R:
        """Run the chain over a snapshot of the current listeners and return its result."""
        listeners = tuple(self._listeners)

        async def call(index: int) -> R:
            if index == len(listeners):
                return self._default(payload)
            return await listeners[index](payload, lambda: call(index + 1))

        return await call(0)


Wrapper: TypeAlias = Callable[[P, Callable[[], Awaitable[R]]], Awaitable[object]]
"""A wrapper: `async (payload, call_next) -> ignored`; `call_next()` returns the work's result."""


class _Once(Generic[T]):
    """The rest of a wrapper chain, run at most once (later calls: the same result or error)."""

    __slots__ = ("_done", "_error", "_result", "_run")

    def __init__(self, run: Callable[[], Awaitable[T]]) -> None:
        self._run = run
        self._done = False
        self._result: T | None = None
        self._error: BaseException | None = None

    async def __call__(self) -> T:
        if not self._done:
            self._done = True
            try:
                self._result = await self._run()
            except BaseException as exc:
                self._error = exc
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set by the run above


async def _wrapped(
    wrappers: Sequence[Wrapper[P, T]], payload: P, work: Callable[[], Awaitable[T]]
) -> T:
    async def call(index: int) -> T:
        if index == len(wrappers):
            return await work()
        rest = _Once(lambda: call(index + 1))
        await wrappers[index](payload, rest)
        return await rest()  # the rest runs even if the wrapper never called it

    return await call(0)


class Wrappers(_Chain[Wrapper[P, R]], Generic[P, R]):
    """Observers around a piece of work, in registration order (the first is outermost).

    Each wrapper's `call_next()` runs the later wrappers and then the work, at most once (a
    second call gives the same answer). The work's result — or its exception — is what `run`
    gives whatever a wrapper returns or swallows; a wrapper that never calls `call_next()` still
    has the rest run after it returns. An exception a wrapper raises itself propagates.
    """

    async def run(self, payload: P, work: Callable[[], Awaitable[R]]) -> R:
        """Run `work` inside a snapshot of the current wrappers; its result."""
        if not self._listeners:
            return await work()
        return await _wrapped(tuple(self._listeners), payload, work)


E = TypeVar("E", bound=ToolEnd)


class ToolWrappers(_Chain[Wrapper[ToolHookContext, ToolEnd]]):
    """The `agent/tool` wrappers (`Wrappers` over one tool call; wrappers see a `ToolEnd`)."""

    async def run(self, payload: ToolHookContext, work: Callable[[], Awaitable[E]]) -> E:
        """Run the call inside a snapshot of the current wrappers; its outcome."""
        if not self._listeners:
            return await work()
        return await _wrapped(tuple(self._listeners), payload, work)


class _Rest:
    """The rest of a request-error chain, as seen by the listener before it: run at most once."""

    __slots__ = ("_asked", "_decision", "_run")

    def __init__(self, run: Callable[[], Awaitable[RequestErrorDecision | None]]) -> None:
        self._run = run
        self._asked = False
        self._decision: RequestErrorDecision | None = None

    async def decision(self) -> RequestErrorDecision | None:
        """What the rest of the chain decided (None: nobody decided, or it raised and the
        listener went on)."""
        if not self._asked:
            self._asked = True
            self._decision = await self._run()
        return self._decision

    async def call_next(self) -> Retry | None:
        decision = await self.decision()
        return decision if isinstance(decision, Retry) else None


class RequestErrorWaterfall(_Chain[RequestErrorListener]):
    """The `agent/request-error` chain; `run` returns an explicit decision (module docstring)."""

    async def run(self, ctx: RequestErrorContext) -> RequestErrorDecision:
        """Offer a failed attempt to a snapshot of the current listeners: `Retry()` or `GiveUp()`.

        A listener that raises propagates (no retry; the turn ends in error with that error).
        """
        listeners = tuple(self._listeners)

        async def decide(index: int) -> RequestErrorDecision | None:
            if index == len(listeners):
                return None
            rest = _Rest(lambda: decide(index + 1))
            own = await listeners[index](ctx, rest.call_next)
            return own if own is not None else await rest.decision()

        decision = await decide(0)
        return GiveUp() if decision is None else decision  # nobody deciding gives up


class AgentHooks:
    """The agent's extension points.

    - `on_pre_step`: may replace the entered messages or return `Block()`.
    - `on_request`: returns the `CallConfig` for this attempt (default: the seed).
    - `on_request_error`: decides `Retry()` or `GiveUp()` for a failed attempt (None from a
      listener: the later ones decide; nobody deciding gives up).
    - `on_error`: observers told when a turn ends in error (exceptions there are ignored).
    - `on_turn` / `on_tool`: wrappers around a turn's Steps (its end reason, or what ended it
      raised) and around one tool call in its own task (its outcome).
    """

    def __init__(self) -> None:
        self.on_pre_step: Waterfall[PreStepContext, tuple[Message, ...] | Block] = Waterfall(
            "agent/pre-step", lambda ctx: ctx.messages
        )
        self.on_request: Waterfall[RequestHookContext, CallConfig] = Waterfall(
            "agent/request", lambda ctx: ctx.config
        )
        self.on_request_error = RequestErrorWaterfall("agent/request-error")
        self.on_error: list[Callable[[ErrorContext], object]] = []
        self.on_turn: Wrappers[TurnHookContext, TurnEndReason] = Wrappers("agent/turn")
        self.on_tool = ToolWrappers("agent/tool")
