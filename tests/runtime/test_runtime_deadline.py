"""The call deadlines at the failure boundary (`runtime.deadline`), on any adapter.

Each adapter here stalls on a future nothing ever resolves, so only the deadline under test can
end the call; outcomes only (which budget fired, which code), never elapsed time. The deadlines
are small and the other budgets absent or far larger; `asyncio.wait_for` is only a hang guard.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from modelwire.errors import LlmError
from modelwire.runtime import LlmAdapter, LlmRuntime
from modelwire.vocab import (
    BlockStart,
    Error,
    FinishReason,
    GenerateOptions,
    ResolvedModelInfo,
    StreamChunk,
    TextDelta,
    user_message,
)

GUARD = 30.0


class Stalling(LlmAdapter):
    """Yields `before` chunks, then waits forever; `swallow` turns the cancellation into an
    ordinary error (as a careless adapter might)."""

    def __init__(self, before: int = 0, swallow: bool = False, default_ms: int | None = None):
        self.before = before
        self.swallow = swallow
        self.default_ms = default_ms
        self.cancelled = 0

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        return ResolvedModelInfo(
            provider=provider, id=model, name=model, default_timeout_ms=self.default_ms
        )

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        if self.before:
            yield BlockStart(0, "text")
        for _ in range(self.before - 1):
            yield TextDelta(0, "x")
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            self.cancelled += 1
            if self.swallow:
                raise LlmError("the socket went away", "NETWORK") from None
            raise


def _runtime(adapter: LlmAdapter) -> LlmRuntime:
    rt = LlmRuntime()
    rt.register_adapter(["p"], adapter)
    return rt


async def _finish(rt: LlmRuntime, **fields: object) -> FinishReason:
    options = GenerateOptions("p", "m", (user_message("hi"),), **fields)  # type: ignore[arg-type]
    return (await asyncio.wait_for(rt.generate(options), GUARD)).finish


def _failure(finish: FinishReason) -> tuple[str, str]:
    assert isinstance(finish, Error), finish
    return finish.failure.code, finish.failure.message


async def test_a_custom_adapter_gets_the_total_deadline_too() -> None:
    adapter = Stalling()
    code, message = _failure(await _finish(_runtime(adapter), timeout_ms=30))
    assert code == "TIMEOUT"
    assert (
        message
        == 'provider "p" model "m": the call exceeded its total deadline of 30ms (timeout_ms)'
    )
    assert adapter.cancelled == 1  # the pending pull was cancelled for real


async def test_the_deadline_wins_over_an_adapter_that_turns_cancellation_into_an_error() -> None:
    adapter = Stalling(swallow=True)
    code, message = _failure(await _finish(_runtime(adapter), timeout_ms=30))
    assert code == "TIMEOUT" and "(timeout_ms)" in message


async def test_the_first_chunk_clears_the_first_token_deadline() -> None:
    """First-token 500 ms (room for a loaded machine before the first chunk), total 1 s, a stall
    after the first chunks: the total fires."""
    rt = _runtime(Stalling(before=2))
    code, message = _failure(await _finish(rt, first_token_timeout_ms=500, timeout_ms=1000))
    assert code == "TIMEOUT" and "(timeout_ms)" in message


async def test_no_first_chunk_is_the_first_token_deadline() -> None:
    rt = _runtime(Stalling())
    code, message = _failure(await _finish(rt, first_token_timeout_ms=20, timeout_ms=600_000))
    assert code == "TIMEOUT"
    assert message.endswith("no first token within 20ms (first_token_timeout_ms)")


async def test_the_routes_default_applies_when_the_call_sets_none() -> None:
    """(0 turning it off is pinned in `test_options_matrix`, where the idle budget witnesses.)"""
    code, message = _failure(await _finish(_runtime(Stalling(default_ms=30))))
    assert code == "TIMEOUT" and "of 30ms (timeout_ms)" in message


async def test_the_callers_cancellation_stays_cancelled_error_under_a_deadline() -> None:
    rt = _runtime(Stalling())
    options = GenerateOptions("p", "m", (user_message("hi"),), timeout_ms=3_600_000)
    with pytest.raises(TimeoutError):  # wait_for's own: the call's deadline is an hour away
        await asyncio.wait_for(rt.generate(options), 0.05)
