"""The one cancellable wait, shared by the agent and the retry plugin.

The agent waits the rest of a retry a dead process decided (`resume_turn`); the retry plugin
waits its backoff. Both sleep through an injected `sleep(seconds)` (default `asyncio.sleep`), so
a test passes a fake one and never waits in real time, and both are cut short by any of their
cancellations (the turn's signal, the plugin's lifetime). Every helper task is cancelled and
drained before the wait returns: no timer outlives it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeAlias

__all__ = ["Cancellation", "Sleep", "wait_cancellably"]

Sleep: TypeAlias = Callable[[float], Awaitable[object]]
"""Waits a number of seconds (`asyncio.sleep`, or a test's fake)."""


class Cancellation(Protocol):
    """Something a wait can be cancelled by: `wait()` returns once it fires (`TurnSignal`,
    `asyncio.Event`)."""

    def wait(self) -> Awaitable[object]:
        """Return once cancelled."""
        ...


async def wait_cancellably(
    delay_ms: float, *cancellations: Cancellation, sleep: Sleep = asyncio.sleep
) -> bool:
    """Sleep `delay_ms` (also 0: the sleep is called once); False when a cancellation fired
    first (or together with the end of the sleep), True when the whole delay passed.

    Cancelling the waiting task raises `CancelledError` as usual; a failing `sleep` raises its
    error. Either way no helper task is left running.
    """
    sleeper = asyncio.ensure_future(sleep(delay_ms / 1000.0))
    watchers = [asyncio.ensure_future(cancellation.wait()) for cancellation in cancellations]
    try:
        await asyncio.wait((sleeper, *watchers), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sleeper, *watchers):
            task.cancel()
        await asyncio.gather(sleeper, *watchers, return_exceptions=True)
    if sleeper.cancelled() or any(not w.cancelled() for w in watchers):
        return False
    sleeper.result()  # an injected sleep that failed raises here
    return True
