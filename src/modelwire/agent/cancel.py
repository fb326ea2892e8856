"""The cancellation of one running turn: its `TurnSignal`, and how the loop ends a cancelled turn."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal, TypeAlias

from ..errors import ErrorCode, HarnessError

__all__ = ["AbortKind", "TurnCancelled", "TurnSignal", "cancellation"]

AbortKind: TypeAlias = Literal["user", "parent", "hook", "disposed", "legacy"]
"""Who cancelled a turn (recorded in `turn/end {aborted}`)."""


class TurnSignal:
    """The cancellation handle of one running turn.

    `cancel()` from outside the turn's task cancels that task (`run_turn` then re-raises
    `CancelledError`); from inside it (e.g. in a hook, or in a tool: its task is `adopt`ed) it
    only marks the turn, and the loop ends it `aborted` at its next check. Cancellation always
    beats a returned `Retry`.

    Once the turn's task is cancelled (or the turn's log failed, `wind_down`), what the turn still
    writes on its way out (an interrupted message, `step/end`, `turn/end`, the lease's release)
    runs inside `grace()`: all of it together gets `grace_ms` from the cancel, and what a stalled
    log has not taken by then is given up (the turn left open is repaired later).
    """

    def __init__(self, task: asyncio.Task[object] | None, grace_ms: float = 2_000.0) -> None:
        self._task = task
        self._grace_s = grace_ms / 1000.0
        self._deadline: float | None = None  # loop time the grace ends (set once it started)
        self._wound_down = False
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
        if self._deadline is None and self._task is not None:
            self._deadline = self._task.get_loop().time() + self._grace_s
        if self._event is not None:
            self._event.set()
        task, caller = self._task, asyncio.current_task()
        inside = caller is task or (self._inside is not None and caller in self._inside)
        if task is not None and not task.done() and not inside:
            task.cancel()

    def wind_down(self, failure: HarnessError) -> None:
        """When `failure` is the log's (`LOG_UNAVAILABLE`): from now on the turn's remaining
        writes run within `grace()` too."""
        if failure.code == ErrorCode.LOG_UNAVAILABLE:
            self._wound_down = True

    @contextlib.asynccontextmanager
    async def grace(self) -> AsyncIterator[None]:
        """Run a write of a turn on its way out: while the turn's task is cancelled (or the turn
        was wound down) at most until the grace deadline, past which the block is abandoned and
        nothing is raised (nor, for a cancelled task, a `LOG_UNAVAILABLE`: the cancellation goes
        on; a `LEASE_LOST` is still raised); otherwise without a bound (the log's own deadlines
        apply)."""
        task = self._task
        cancelled = task is not None and task.cancelling() > 0
        if not (self._wound_down or cancelled):
            yield
            return
        if self._deadline is None:
            self._deadline = asyncio.get_running_loop().time() + self._grace_s
        bound = asyncio.timeout_at(self._deadline)
        try:
            async with bound:
                yield
        except TimeoutError:
            if not bound.expired():
                raise  # the block's own TimeoutError, not the grace's
        except HarnessError as exc:
            if not cancelled or exc.code != ErrorCode.LOG_UNAVAILABLE:
                raise  # a cancelled turn's answer is its cancellation, not the log's failure

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
