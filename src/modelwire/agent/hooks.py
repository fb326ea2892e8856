"""The agent's live extension points: waterfalls, their payloads, the turn signal and `Retry`.

A `Waterfall` runs its listeners in registration order: the first-registered listener runs first
and reaches the later ones through `call_next()`; the last `call_next()` returns the default.
A "downstream-first" listener (e.g. always-mode retry) simply awaits `call_next()` before deciding.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Generic, Literal, Protocol, TypeAlias, TypeVar

import msgspec

from ..policy import RetryPolicy
from ..vocab import CallConfig, LlmFailure, Message

if TYPE_CHECKING:
    from ..session.log import SessionLog
    from .loop import Agent

__all__ = [
    "AbortKind",
    "AgentHooks",
    "AgentPlugin",
    "Block",
    "ErrorContext",
    "PreStepContext",
    "RequestErrorContext",
    "RequestHookContext",
    "Retry",
    "TurnSignal",
    "Waterfall",
]

P = TypeVar("P")
R = TypeVar("R")

AbortKind: TypeAlias = Literal["user", "parent", "hook", "disposed", "legacy"]
"""Who cancelled a turn (recorded in `turn/end {aborted}`)."""


class Retry(msgspec.Struct, frozen=True):
    """Returned by an `on_request_error` listener: run another attempt inside the same Step."""

    kind: ClassVar[Literal["retry"]] = "retry"


class Block(msgspec.Struct, frozen=True):
    """Returned by an `on_pre_step` listener: refuse the step; the turn ends `blocked`."""

    kind: ClassVar[Literal["blocked"]] = "blocked"


class TurnSignal:
    """The cancellation handle of one running turn.

    `cancel()` from outside the turn's task cancels that task (`run_turn` then re-raises
    `CancelledError`); from inside it (e.g. in a hook) it only marks the turn, and the loop ends
    it `aborted` at its next check. Cancellation always beats a returned `Retry`.
    """

    def __init__(self, task: asyncio.Task[object] | None) -> None:
        self._task = task
        self._event = asyncio.Event()
        self.cause: AbortKind | None = None
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        """True once the turn was cancelled (by `cancel()` or by cancelling its task)."""
        if self._event.is_set():
            return True
        task = self._task
        return task is not None and task.cancelling() > 0

    def cancel(self, kind: AbortKind = "user", reason: str | None = None) -> None:
        """Cancel the turn, recording who did it; later calls keep the first cause."""
        if self.cause is None:
            self.cause = kind
            self.reason = reason
        self._event.set()
        task = self._task
        if task is not None and not task.done() and asyncio.current_task() is not task:
            task.cancel()

    async def wait(self) -> None:
        """Return once the turn is cancelled (explicit `cancel()` calls only)."""
        await self._event.wait()


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestHookContext:
    """Payload of `on_request`: the step being requested and the seed call config (the default)."""

    agent: Agent
    session_id: str
    turn: int
    step: int
    attempt: int
    config: CallConfig
    signal: TurnSignal


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestErrorContext:
    """Payload of `on_request_error`: one failed attempt and the policy of the call that served it.

    `retry_policy` is None when no adapter registration served the attempt (e.g. `NO_ADAPTER`).
    """

    agent: Agent
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

    agent: Agent
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


Listener: TypeAlias = Callable[[P, Callable[[], Awaitable[R]]], Awaitable[R]]
"""A waterfall listener: `async (payload, call_next) -> result`."""


class Waterfall(Generic[P, R]):
    """An ordered chain of async listeners with a default at the end (see the module docstring)."""

    def __init__(self, name: str, default: Callable[[P], R]) -> None:
        self.name = name
        self._default = default
        self._listeners: list[Listener[P, R]] = []

    def add(self, listener: Listener[P, R]) -> Callable[[], None]:
        """Append `listener` (it runs after those registered earlier); returns its disposer."""
        self._listeners.append(listener)

        def dispose() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return dispose

    def __len__(self) -> int:
        return len(self._listeners)

    async def run(self, payload: P) -> R:
        """Run the chain over a snapshot of the current listeners and return its result."""
        listeners = tuple(self._listeners)

        async def call(index: int) -> R:
            if index == len(listeners):
                return self._default(payload)
            return await listeners[index](payload, lambda: call(index + 1))

        return await call(0)


class AgentHooks:
    """The agent's extension points.

    - `on_pre_step`: may replace the entered messages or return `Block()`.
    - `on_request`: returns the `CallConfig` for this attempt (default: the seed).
    - `on_request_error`: returns `Retry()` to run another attempt, or None (default).
    - `on_error`: observers told when a turn ends in error (exceptions there are ignored).
    """

    def __init__(self) -> None:
        self.on_pre_step: Waterfall[PreStepContext, tuple[Message, ...] | Block] = Waterfall(
            "agent/pre-step", lambda ctx: ctx.messages
        )
        self.on_request: Waterfall[RequestHookContext, CallConfig] = Waterfall(
            "agent/request", lambda ctx: ctx.config
        )
        self.on_request_error: Waterfall[RequestErrorContext, Retry | None] = Waterfall(
            "agent/request-error", lambda ctx: None
        )
        self.on_error: list[Callable[[ErrorContext], object]] = []


class AgentPlugin(Protocol):
    """A plugin: `install(agent)` registers hooks; a callable return value is its disposer.

    The disposer (sync or async) runs on `await agent.close()`, in reverse install order.
    """

    def install(self, agent: Agent) -> object:
        """Register this plugin's hooks on `agent`."""
        ...
