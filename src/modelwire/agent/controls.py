"""What others ask of an agent between and during its turns: `inject`, `cancel`, `close`, and a
person's `decide` on a paused turn's calls (`pending` lists them; `approval.py`).

`AgentControls` is the part of `Agent` that holds the per-session inbox of injected messages,
the signals of the running turns and the disposers of installed plugins.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Self

from ..errors import ErrorCode, HarnessError
from ..session.events import AbortCause, ToolDecision
from ..session.log import SessionLog
from ..vocab import Message
from .approval import PendingApproval, approval_state, decide
from .cancel import TurnSignal
from .inputs import UserInput, as_user_message

__all__ = ["AgentControls"]


class AgentControls:
    """The inbox, the running turns' signals and the plugin disposers of one agent."""

    log: SessionLog

    def __init__(self) -> None:
        self._inbox: dict[str, list[Message]] = {}
        self._signals: dict[str, TurnSignal] = {}
        self._disposers: list[Callable[[], object]] = []
        self._closed = False

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

    @contextlib.asynccontextmanager
    async def _running(self, session_id: str, signal: TurnSignal) -> AsyncIterator[None]:
        """While a turn of `session_id` runs, from before it takes its lease: `cancel()` reaches
        it (a turn waiting for a stalled log is cancelled like any other)."""
        self._signals[session_id] = signal
        try:
            yield
        finally:
            if self._signals.get(session_id) is signal:
                del self._signals[session_id]

    async def decide(
        self,
        session_id: str,
        call_id: str,
        approve: bool,
        reason: str | None = None,
        *,
        by: str | None = None,
    ) -> ToolDecision:
        """Approve or deny pending call `call_id` of the paused turn of `session_id`: logs
        `tool/decision` (`reason`: what the model is told of a denial; `by`: who decided). The
        same answer twice is a no-op; see `approval.decide` for what is refused. Any process
        may decide; `resume_turn` continues the turn once every pending call is decided."""
        return await decide(self.log, session_id, call_id, approve, reason, by=by)

    async def pending(self, session_id: str) -> tuple[PendingApproval, ...]:
        """The calls of the paused turn of `session_id` that wait for a decision, decided or
        not (empty when no turn is paused), read from the log."""
        return (await approval_state(self.log, session_id)).waiting

    async def close(self) -> None:
        """Cancel running turns (cause `disposed`), run plugin disposers in reverse order, then
        stop what the agent started (its MCP servers)."""
        if self._closed:
            return
        self._closed = True
        for signal in list(self._signals.values()):
            signal.cancel("disposed")
        try:
            while self._disposers:
                result = self._disposers.pop()()
                if inspect.isawaitable(result):
                    await result
        finally:
            await self._release()

    async def __aenter__(self) -> Self:
        """Start what the agent serves from now (its MCP servers; else the first request does);
        `close()` on exit. If one cannot start, those that did are stopped again and its failure
        is raised."""
        self._check_usable()
        try:
            await self._start()
        except BaseException:
            await self._release()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _start(self) -> None:
        """Start the agent's servers (the MCP servers of `Agent`); nothing here."""

    async def _release(self) -> None:
        """Stop what `_start` or a turn started; nothing here."""

    def _check_usable(self) -> None:
        if self._closed:
            raise HarnessError("agent is closed", ErrorCode.INVALID_ARGS)
