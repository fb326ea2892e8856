"""The stream idle watchdog: a per-read time budget that is only counted while a read is pending.

`IdleWatchdog.guard(awaitable)` runs one read (or the request up to its headers) under the idle
budget. Time the consumer spends between reads is never counted, and every completed read re-arms
the budget, so any bytes at all (including ``: keep-alive`` comments) keep a stream alive. Expiry
cancels the pending read for real and raises `LlmError` code ``TIMEOUT``; a caller's own
cancellation stays `asyncio.CancelledError`.

One event-loop timer serves the whole stream: a read only records its deadline, and the timer,
when it fires early, re-schedules itself for the latest deadline. That keeps the per-read cost to
a clock read and two attribute stores (``asyncio.timeout`` per read would allocate a timer each).

Two deadlines may sit beside the idle budget, both counted from the first guarded await (the
request): `total_ms`, the whole call's budget, and `first_token_ms`, the budget until the pump
reports the first chunk (`first_output`). Bytes that produce no chunk (keep-alive comments)
re-arm only the idle budget, so a relay that pulses forever still meets the total deadline. Each
expiry says which budget fired.
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


_IDLE: Final = 0  # the budget that fired: the idle one, ...
_FIRST: Final = 1  # ... the first-token deadline, or ...
_TOTAL: Final = 2  # ... the whole call's


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
        "_first_at",
        "_first_message",
        "_first_ms",
        "_first_s",
        "_handle",
        "_loop",
        "_message",
        "_reason",
        "_started",
        "_task",
        "_timeout_s",
        "_total_at",
        "_total_message",
        "_total_ms",
        "_total_s",
        "timeout_ms",
    )

    def __init__(
        self,
        timeout_ms: float,
        *,
        message: str | None = None,
        total_ms: float | None = None,
        total_message: str | None = None,
        first_token_ms: float | None = None,
        first_token_message: str | None = None,
    ) -> None:
        self.timeout_ms = validate_idle_timeout_ms(timeout_ms)
        self._timeout_s = self.timeout_ms / 1000.0
        # The texts are built when an error needs them (a stream mostly never does).
        self._message = message
        self._total_s = math.inf if total_ms is None else total_ms / 1000.0
        self._total_message = total_message
        self._total_ms = total_ms or 0
        self._first_s = math.inf if first_token_ms is None else first_token_ms / 1000.0
        self._first_message = first_token_message
        self._first_ms = first_token_ms or 0
        self._total_at = math.inf  # absolute loop times, set on the first guarded await
        self._first_at = math.inf
        self._reason = _IDLE  # which budget the pending read is under
        self._started = False
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

    def first_output(self) -> None:
        """The stream produced its first chunk: the first-token deadline no longer applies."""
        self._first_at = math.inf

    async def guard(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable` within the idle budget; expiry raises `LlmError` code ``TIMEOUT``."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()  # an async generator may be driven by another task
        if self._fired:
            raise self._error(None)
        now = loop.time()
        if not self._started:  # the request: both call deadlines count from here
            self._started = True
            self._total_at = now + self._total_s
            self._first_at = now + self._first_s
        deadline = now + self._timeout_s
        reason = _IDLE
        if self._first_at < deadline:
            deadline, reason = self._first_at, _FIRST
        if self._total_at <= deadline:
            deadline, reason = self._total_at, _TOTAL
        if deadline <= now:
            self._reason = reason
            self._fired = True
            raise self._error(None)
        self._deadline = deadline
        self._reason = reason
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
        return LlmError(self._text(), ErrorCode.TIMEOUT, cause=cause)

    def _text(self) -> str:
        if self._reason == _FIRST:
            return self._first_message or f"no first token within {ms_text(self._first_ms)}ms"
        if self._reason == _TOTAL:
            return self._total_message or (
                f"call exceeded its total deadline of {ms_text(self._total_ms)}ms"
            )
        return self.message

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
