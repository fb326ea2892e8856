"""A call's deadlines, enforced once in the failure boundary for every adapter (`CallDeadline`).

`timeout_ms` is the whole call's budget and `first_token_timeout_ms` the budget until the
adapter yields its first chunk; both count from the boundary's first pull (the request) and come
from the call (`GenerateOptions`), else from the route (`ResolvedModelInfo.default_*`); 0 means
none. Only the wait on the adapter is guarded: the boundary awaits each pull under
`CallDeadline.guard`, and the deadline passed while a pull is pending cancels that pull for real
(whatever it awaits: a socket, a replay's pause or hang) and raises `LlmError` ``TIMEOUT``
naming the budget, the route and the model. A deadline that passed while the consumer held a
chunk fires at the next pull. The caller's own cancellation stays `asyncio.CancelledError`.

One event-loop timer serves the whole call, armed at the earlier deadline and moved once when the
first chunk clears the first-token budget; a pull costs a clock read and two attribute stores.
A call without deadlines has no `CallDeadline` at all (the boundary pays nothing).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable
from typing import Final, TypeVar

from ..errors import ErrorCode, LlmError
from ..vocab import GenerateOptions, ResolvedModelInfo

__all__ = ["CallDeadline", "call_deadline"]

T = TypeVar("T")

_TOTAL: Final = "timeout_ms"
_FIRST: Final = "first_token_timeout_ms"


def call_deadline(options: GenerateOptions, info: ResolvedModelInfo | None) -> CallDeadline | None:
    """The call's deadlines (its own, else the route's), or None when it has none."""
    total = options.timeout_ms
    if total is None and info is not None:
        total = info.default_timeout_ms
    first = options.first_token_timeout_ms
    if first is None and info is not None:
        first = info.default_first_token_timeout_ms
    if not total and not first:
        return None
    return CallDeadline(
        total or None, first or None, f'provider "{options.provider}" model "{options.model}"'
    )


class CallDeadline:
    """The total and first-token deadlines of one call (ms, None = none); `where` names the
    route and model in the `TIMEOUT` text. Create one per call; use it from the task that
    consumes the call."""

    __slots__ = (
        "_cancelling",
        "_fired",
        "_first_at",
        "_first_ms",
        "_handle",
        "_pending",
        "_task",
        "_total_at",
        "_total_ms",
        "_where",
        "_which",
    )

    def __init__(self, total_ms: int | None, first_ms: int | None, where: str) -> None:
        self._total_ms = total_ms
        self._first_ms = first_ms
        self._where = where
        self._total_at = math.inf  # loop times, set at the first pull
        self._first_at = math.inf
        self._handle: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[object] | None = None
        self._pending = False
        self._fired = False
        self._which = _TOTAL
        self._cancelling = 0

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        if self._total_ms is not None:
            self._total_at = now + self._total_ms / 1000.0
        if self._first_ms is not None:
            self._first_at = now + self._first_ms / 1000.0
        self._arm(loop)

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        at = min(self._total_at, self._first_at)
        if at != math.inf:
            self._handle = loop.call_at(at, self._on_timer)

    def first_output(self) -> None:
        """The adapter yielded its first chunk: the first-token deadline no longer applies."""
        if self._first_at != math.inf:
            self._first_at = math.inf
            if self._handle is not None:
                self._arm(asyncio.get_running_loop())

    def _expired(self, now: float) -> str | None:
        if self._first_at <= now:
            return _FIRST
        if self._total_at <= now:
            return _TOTAL
        return None

    async def guard(self, pull: Awaitable[T]) -> T:
        """Await one pull of the adapter within the deadlines (`TIMEOUT` once one passed)."""
        loop = asyncio.get_running_loop()
        if self._task is None:
            self._start(loop)
        task = self._task = asyncio.current_task()
        which = self._expired(loop.time())
        if which is not None:
            if asyncio.iscoroutine(pull):
                pull.close()  # never started: nothing to clean up
            raise self._error(which, None)
        self._pending = True
        try:
            got = await pull
        except BaseException as exc:
            if not self._fired:
                raise
            raise self._timeout(task, exc) from None
        finally:
            self._pending = False
        if self._fired:  # the adapter swallowed the cancellation: the deadline still wins
            raise self._timeout(task, None)
        return got

    def _timeout(
        self, task: asyncio.Task[object] | None, exc: BaseException | None
    ) -> BaseException:
        """After the timer cancelled the pull: TIMEOUT, unless the caller cancels the task too."""
        self._fired = False
        if task is not None and task.uncancel() > self._cancelling:
            return exc if isinstance(exc, asyncio.CancelledError) else asyncio.CancelledError()
        return self._error(self._which, exc)

    def close(self) -> None:
        """Release the timer (idempotent); the boundary calls it when the call ends."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _error(self, which: str, cause: BaseException | None) -> LlmError:
        if which == _FIRST:
            text = f"no first token within {self._first_ms}ms ({_FIRST})"
        else:
            text = f"the call exceeded its total deadline of {self._total_ms}ms ({_TOTAL})"
        return LlmError(f"{self._where}: {text}", ErrorCode.TIMEOUT, cause=cause)

    def _on_timer(self) -> None:
        self._handle = None
        task = self._task
        if not self._pending or task is None or task.done():
            return  # the next pull finds the deadline passed
        self._fired = True
        self._which = _FIRST if self._first_at <= self._total_at else _TOTAL
        self._cancelling = task.cancelling()
        task.cancel()
