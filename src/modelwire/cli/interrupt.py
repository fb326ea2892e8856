"""Ctrl-C for one agent turn: SIGINT cancels the turn's task instead of killing the process."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import TypeVar

__all__ = ["run_interruptible"]

T = TypeVar("T")


async def run_interruptible(turn: Coroutine[object, object, T]) -> tuple[T | None, bool]:
    """Run `turn` as a task that SIGINT cancels; `(result, False)`, or `(None, True)` when Ctrl-C
    cancelled it (the agent loop has then committed the interrupted prefix).

    Cancellation from anywhere else propagates as usual. Where the loop has no signal support the
    default SIGINT behaviour stays.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(turn)
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        return await task, False
    except asyncio.CancelledError:
        if not interrupted:
            raise
        return None, True
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
