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
    """Await `awaitable` for at most `timeout_s`. On the deadline it is cancelled, `abandon()`
    drops the connection without waiting for the server, and `Stalled` is raised naming the log
    (`where`) and what it was doing (`action`). Cancelling the caller cancels the operation."""
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout_s)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if done:
        return task.result()
    task.add_done_callback(_retrieve)
    task.cancel()
    abandon()
    raise Stalled(
        f"session log {where}: no answer within {timeout_s:g} s while trying to {action}: the "
        "database server (or the network to it) is stalled",
        ErrorCode.LOG_UNAVAILABLE,
    )


def _retrieve(task: asyncio.Future[_T]) -> None:
    if not task.cancelled():
        task.exception()
