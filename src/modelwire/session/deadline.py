"""The client-side deadline of a storage operation: a stalled database server (or network) is
reported as `LOG_UNAVAILABLE`, never waited for forever."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from ..errors import ErrorCode, HarnessError
from ..vocab.typing import Coro

__all__ = ["Stalled", "within"]

_T = TypeVar("_T")


class Stalled(HarnessError):
    """`LOG_UNAVAILABLE`: a storage operation passed its client-side deadline."""


async def within(
    awaitable: Coro[_T],
    timeout_s: float,
    *,
    where: str,
    action: str,
    abandon: Callable[[], None],
) -> _T:
    """Await `awaitable` for at most `timeout_s`. On the deadline `abandon()` drops the
    connection without waiting for the server, the operation is cancelled, and `Stalled` is
    raised naming the log (`where`) and what it was doing (`action`). Cancelling the caller
    cancels the operation. Runs in the caller's task (one timer, no task per operation)."""
    task = asyncio.current_task()
    assert task is not None, "within() runs inside a task"
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        abandon()  # first: whatever the cancelled driver does next fails fast, never waits
        task.cancel()

    timer = asyncio.get_running_loop().call_later(timeout_s, expire)
    try:
        return await awaitable
    except asyncio.CancelledError:
        if expired and task.uncancel() == 0:
            raise Stalled(
                f"session log {where}: no answer within {timeout_s:g} s while trying to "
                f"{action}: the database server (or the network to it) is stalled",
                ErrorCode.LOG_UNAVAILABLE,
            ) from None
        raise
    finally:
        timer.cancel()
