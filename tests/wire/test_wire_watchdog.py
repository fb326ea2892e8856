"""The idle watchdog: validation, expiry as TIMEOUT, pulses, cancellation semantics."""

from __future__ import annotations

import asyncio
import math

import pytest

from modelwire import LlmError
from modelwire.wire.watchdog import MAX_IDLE_TIMEOUT_MS, IdleWatchdog, validate_idle_timeout_ms


@pytest.mark.parametrize(
    "value",
    [0, -1, math.inf, math.nan, MAX_IDLE_TIMEOUT_MS + 1, True, "100"],
    ids=["zero", "negative", "inf", "nan", "over-max", "bool", "string"],
)
def test_b64_idle_timeout_must_be_positive_finite_within_max(value: object) -> None:
    with pytest.raises(LlmError) as info:
        validate_idle_timeout_ms(value)
    assert info.value.code == "INVALID_CONFIG"
    assert "stream_idle_timeout_ms" in info.value.message


async def test_b40_expiry_raises_timeout_with_message() -> None:
    wd = IdleWatchdog(50, message="X stream idle timeout after 50ms")
    with pytest.raises(LlmError) as info:
        await wd.guard(asyncio.sleep(5))
    assert (info.value.code, info.value.message) == ("TIMEOUT", "X stream idle timeout after 50ms")
    wd.close()


async def test_b40_each_guard_rearms_the_budget() -> None:
    wd = IdleWatchdog(80)
    for _ in range(6):
        await wd.guard(asyncio.sleep(0.04))  # 240 ms total, each read within budget
    wd.close()


async def test_b40_time_outside_guards_is_not_counted() -> None:
    wd = IdleWatchdog(50)
    await wd.guard(asyncio.sleep(0))
    await asyncio.sleep(0.15)
    assert await wd.guard(asyncio.sleep(0.01, result=7)) == 7
    wd.close()


async def test_b43_caller_cancellation_stays_cancelled_error() -> None:
    wd = IdleWatchdog(5000)
    task = asyncio.create_task(wd.guard(asyncio.sleep(5)))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    wd.close()
