"""`wait_cancellably`: the one cancellable wait of the agent (resume) and the retry plugin."""

from __future__ import annotations

import asyncio

import pytest

from modelwire.agent import TurnSignal, wait_cancellably


class FakeSleep:
    """Records each delay (seconds); with `hold`, blocks until cancelled instead of returning."""

    def __init__(self, *, hold: bool = False, error: BaseException | None = None) -> None:
        self.hold = hold
        self.error = error
        self.delays: list[float] = []
        self.entered = asyncio.Event()
        self.cancelled = False

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.entered.set()
        if self.error is not None:
            raise self.error
        if self.hold:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise


def _other_tasks() -> set[asyncio.Task[object]]:
    current = asyncio.current_task()
    return {t for t in asyncio.all_tasks() if t is not current and not t.done()}


async def test_wait_cancellably_sleeps_the_delay_on_the_injected_sleep() -> None:
    sleep = FakeSleep()
    assert await wait_cancellably(1500, TurnSignal(None), asyncio.Event(), sleep=sleep)
    assert await wait_cancellably(0, sleep=sleep)  # a zero wait still calls the sleep once
    assert sleep.delays == [1.5, 0.0]
    assert _other_tasks() == set()


@pytest.mark.parametrize("which", ["turn-signal", "event"])
async def test_wait_cancellably_a_cancellation_ends_the_wait_and_its_timer(which: str) -> None:
    sleep = FakeSleep(hold=True)
    signal, lifetime = TurnSignal(None), asyncio.Event()
    waiting = asyncio.create_task(wait_cancellably(60_000, signal, lifetime, sleep=sleep))
    await asyncio.wait_for(sleep.entered.wait(), 5)
    if which == "turn-signal":
        signal.cancel()
    else:
        lifetime.set()
    assert await asyncio.wait_for(waiting, 5) is False
    assert sleep.cancelled  # the timer was cancelled, not left to run out
    assert _other_tasks() == set()


async def test_wait_cancellably_an_already_fired_cancellation_wins() -> None:
    lifetime = asyncio.Event()
    lifetime.set()
    assert await wait_cancellably(0, lifetime, sleep=FakeSleep()) is False


async def test_wait_cancellably_cancelling_the_waiting_task_leaves_no_timer() -> None:
    sleep = FakeSleep(hold=True)
    waiting = asyncio.create_task(wait_cancellably(60_000, TurnSignal(None), sleep=sleep))
    await asyncio.wait_for(sleep.entered.wait(), 5)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert sleep.cancelled
    assert _other_tasks() == set()


async def test_wait_cancellably_a_failing_sleep_raises() -> None:
    with pytest.raises(RuntimeError, match="clock broke"):
        await wait_cancellably(
            10, TurnSignal(None), sleep=FakeSleep(error=RuntimeError("clock broke"))
        )
    assert _other_tasks() == set()
