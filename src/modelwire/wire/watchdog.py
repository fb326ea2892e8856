"""The stream idle watchdog: a per-read time budget that is only counted while a read is pending.

`IdleWatchdog.guard(awaitable)` runs one read (or the request up to its headers) under the idle
budget. Time the consumer spends between reads is never counted, and every completed read re-arms
the budget, so any bytes at all (including ``: keep-alive`` comments) keep a stream alive. Expiry
cancels the pending read for real and raises `LlmError` code ``TIMEOUT``; a caller's own
cancellation stays `asyncio.CancelledError`.

One event-loop timer serves the whole stream: a read only records its deadline, and the timer,
when it fires early, re-schedules itself for the latest deadline. That keeps the per-read cost to
a clock read and two attribute stores (``asyncio.timeout`` per read would allocate a timer each).

The call's own deadlines (`timeout_ms`, `first_token_timeout_ms`) are not the watchdog's: the
runtime's failure boundary enforces them for every adapter (`runtime.deadline`).
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Awaitable
from typing import Final, TypeVar

from ..errors import ErrorCode, LlmError

__all__ = [
    "MAX_IDLE_TIMEOUT_MS",
    "IdleWatchdog",
    "idle_text",
    "ms_text",
    "validate_idle_timeout_ms",
]

MAX_IDLE_TIMEOUT_MS: Final = 2_147_483_647
"""The largest accepted idle budget (2^31 - 1 ms)."""

T = TypeVar("T")


def validate_idle_timeout_ms(value: object, *, field: str = "stream_idle_timeout_ms") -> float:
    """Return `value` as a float if it is a positive finite number of ms within the maximum.

    Otherwise raise `LlmError` code ``INVALID_CONFIG`` naming `field`.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise LlmError(f"{field} must be a positive finite number of ms", ErrorCode.INVALID_CONFIG)
    if value <= 0:
        raise LlmError(f"{field} must be a positive finite number of ms", ErrorCode.INVALID_CONFIG)
    if value > MAX_IDLE_TIMEOUT_MS:
        raise LlmError(
            f"{field} must be no greater than {MAX_IDLE_TIMEOUT_MS} ms", ErrorCode.INVALID_CONFIG
        )
    return float(value)


def ms_text(ms: float) -> str:
    """A budget in ms as a failure message writes it (`1500`, `0.5`)."""
    return str(int(ms)) if float(ms).is_integer() else repr(ms)


@functools.lru_cache(maxsize=64)
def idle_text(ms: float, prefix: str = "stream ") -> str:
    """The idle `TIMEOUT` text of a budget, `<prefix>idle timeout after <ms>ms` (one string per
    budget and prefix, shared by every stream that has it)."""
    return f"{prefix}idle timeout after {ms_text(ms)}ms"


class IdleWatchdog:
    """Applies an idle budget of `timeout_ms` to each guarded await of the current task.

    `message` is the `TIMEOUT` error text; it defaults to ``stream idle timeout after <ms>ms``.
    Create one per stream, inside the task that reads the stream.
    """

    __slots__ = (
        "_armed",
        "_cancelling",
        "_deadline",
        "_fired",
        "_handle",
        "_loop",
        "_message",
        "_task",
        "_timeout_s",
        "timeout_ms",
    )

    def __init__(self, timeout_ms: float, *, message: str | None = None) -> None:
        self.timeout_ms = validate_idle_timeout_ms(timeout_ms)
        self._timeout_s = self.timeout_ms / 1000.0
        self._message = message  # the text is built when an error needs it (mostly never)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[object] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._armed = False
        self._fired = False
        self._cancelling = 0

    @property
    def message(self) -> str:
        """The text of the idle `TIMEOUT` error this watchdog raises."""
        return self._message or idle_text(self.timeout_ms)

    async def guard(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable` within the idle budget; expiry raises `LlmError` code ``TIMEOUT``."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()  # an async generator may be driven by another task
        if self._fired:
            raise self._error(None)
        self._deadline = loop.time() + self._timeout_s
        self._armed = True
        if self._handle is None:
            self._handle = loop.call_at(self._deadline, self._on_timer)
        try:
            return await awaitable
        except asyncio.CancelledError as exc:
            task = self._task
            if self._fired and task is not None and task.uncancel() <= self._cancelling:
                raise self._error(exc) from None
            raise
        finally:
            self._armed = False

    def close(self) -> None:
        """Release the timer (idempotent); call when the stream ends for any reason."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _error(self, cause: BaseException | None) -> LlmError:
        return LlmError(self.message, ErrorCode.TIMEOUT, cause=cause)

    def _on_timer(self) -> None:
        self._handle = None
        if not self._armed or self._loop is None:
            return  # re-armed by the next guarded read
        if self._deadline - self._loop.time() > 0.001:
            self._handle = self._loop.call_at(self._deadline, self._on_timer)
            return
        task = self._task
        if task is None or task.done():
            return
        self._fired = True
        self._cancelling = task.cancelling()
        task.cancel()
