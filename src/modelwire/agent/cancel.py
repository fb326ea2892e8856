"""The cancellation of one running turn: its `TurnSignal`, and how the loop ends a cancelled turn."""

from __future__ import annotations

import asyncio
from typing import Any, Literal, TypeAlias

__all__ = ["AbortKind", "TurnCancelled", "TurnSignal", "cancellation"]

AbortKind: TypeAlias = Literal["user", "parent", "hook", "disposed", "legacy"]
"""Who cancelled a turn (recorded in `turn/end {aborted}`)."""


class TurnSignal:
    """The cancellation handle of one running turn.

    `cancel()` from outside the turn's task cancels that task (`run_turn` then re-raises
    `CancelledError`); from inside it (e.g. in a hook, or in a tool: its task is `adopt`ed) it
    only marks the turn, and the loop ends it `aborted` at its next check. Cancellation always
    beats a returned `Retry`.
    """

    def __init__(self, task: asyncio.Task[object] | None) -> None:
        self._task = task
        # Made when first needed (most turns never adopt a task nor wait): a turn in flight
        # holds no event or set of its own. Any: whatever the adopted tasks return.
        self._inside: set[asyncio.Future[Any]] | None = None
        self._event: asyncio.Event | None = None
        self._set = False  # cancelled through `cancel()` (read per chunk: no method call)
        self.cause: AbortKind | None = None
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        """True once the turn was cancelled (by `cancel()` or by cancelling its task)."""
        if self._set:
            return True
        task = self._task
        return task is not None and task.cancelling() > 0

    def cancel(self, kind: AbortKind = "user", reason: str | None = None) -> None:
        """Cancel the turn, recording who did it; later calls keep the first cause."""
        if self.cause is None:
            self.cause = kind
            self.reason = reason
        self._set = True
        if self._event is not None:
            self._event.set()
        task, caller = self._task, asyncio.current_task()
        inside = caller is task or (self._inside is not None and caller in self._inside)
        if task is not None and not task.done() and not inside:
            task.cancel()

    def adopt(self, inner: asyncio.Future[Any]) -> None:  # Any: its result is not used
        """Count `inner` (a task the turn runs, e.g. a tool call) as inside the turn."""
        if self._inside is None:
            self._inside = set()
        self._inside.add(inner)
        inner.add_done_callback(self._inside.discard)

    async def wait(self) -> None:
        """Return once the turn is cancelled (explicit `cancel()` calls only)."""
        if self._set:
            return
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()


class TurnCancelled(BaseException):
    """Raised inside the loop when the turn was cancelled through its signal (not its task)."""


def cancellation() -> BaseException:
    """The exception that ends a cancelled turn: `CancelledError` if the task itself is cancelled."""
    task = asyncio.current_task()
    if task is not None and task.cancelling() > 0:
        return asyncio.CancelledError()
    return TurnCancelled()
