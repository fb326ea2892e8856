"""Client-side rate limits on providers routes, over real loopback HTTP.

The server publishes the providers' rate-limit headers; the adapter's limiter (on a fake clock:
assertions are on the sleep it asked for) makes the next call wait before its request. The
concurrency limit holds under 200 concurrent calls, cancellation leaks no permit, and the three
profile fields are validated like every other one.
"""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime
from email.utils import formatdate

import pytest
from ratelimit_helpers import ANTHROPIC_TEXT, T0, Answer, FakeTime, LimitServer, acme, adapter

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.config import resolve_profiles
from modelwire.errors import HarnessError, LlmError
from modelwire.vocab import GenerateOptions, StreamChunk, TextDelta, user_message
from modelwire.wire.ratelimit import RateLimiter, RouteLimits

OPTIONS = GenerateOptions(provider="acme", model="m", messages=(user_message("hello"),))


async def call(adapter: ProvidersAdapter) -> list[StreamChunk]:
    return [chunk async for chunk in adapter.stream(OPTIONS)]


def text(chunks: list[StreamChunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextDelta))


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


async def test_zero_remaining_requests_with_a_2s_reset_makes_the_next_call_wait_2s() -> None:
    time = FakeTime()
    published = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"}
    async with LimitServer([Answer(headers=published), Answer()]) as server:
        route = adapter(server.url, time.limiter())
        assert text(await call(route)) == "hi"
        assert time.sleeps == []  # the first call went at once
        assert text(await call(route)) == "hi"
    assert time.sleeps == [2.0]  # then proceeded after the published reset
    assert server.arrived == 2


async def test_anthropic_published_limits_make_the_next_call_wait_until_their_reset() -> None:
    time = FakeTime()
    published = {
        "Date": formatdate(T0, usegmt=True),
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": rfc3339(T0 + 1),
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": rfc3339(T0 + 3),
    }
    answers = [Answer(headers=published, reads=ANTHROPIC_TEXT), Answer(reads=ANTHROPIC_TEXT)]
    async with LimitServer(answers) as server:
        route = adapter(server.url, time.limiter(), api="anthropic-messages")
        await call(route)
        assert text(await call(route)) == "hi"
    assert time.sleeps == [3.0]


async def test_a_429_retry_after_blocks_the_route_for_that_long() -> None:
    time = FakeTime()
    async with LimitServer([Answer(429, {"Retry-After": "7"}), Answer()]) as server:
        route = adapter(server.url, time.limiter())
        with pytest.raises(LlmError) as info:  # the adapter raises; the runtime would finish
            await call(route)
        assert info.value.code == "RATE_LIMIT"
        assert text(await call(route)) == "hi"
    assert time.sleeps == [7.0]


async def test_200_concurrent_calls_never_exceed_the_configured_concurrency() -> None:
    limiter = RateLimiter()  # only concurrency waits: nothing waits on a clock
    async with LimitServer([Answer()]) as server:
        # hold the replies until every call the limiter let through has reached the server
        server.hold = lambda: server.in_flight < limiter.state("acme").in_flight
        route = adapter(server.url, limiter, max_concurrency=5)
        results = await asyncio.gather(*(call(route) for _ in range(200)))
    assert [text(chunks) for chunks in results] == ["hi"] * 200
    assert server.arrived == 200
    assert server.max_in_flight == 5  # reached, never exceeded
    state = limiter.state("acme")
    assert (state.in_flight, state.waiting) == (0, 0)


async def test_cancelling_calls_while_they_wait_or_stream_leaks_no_permit() -> None:
    limiter = RateLimiter()
    async with LimitServer([Answer()]) as server:
        server.gate = asyncio.Event()
        route = adapter(server.url, limiter, max_concurrency=1)
        streaming = asyncio.create_task(call(route))
        while server.arrived < 1:
            await asyncio.sleep(0.001)
        waiting = [asyncio.create_task(call(route)) for _ in range(3)]
        while limiter.state("acme").waiting < 3:
            await asyncio.sleep(0.001)
        for task in waiting:
            task.cancel()
        streaming.cancel()
        await asyncio.gather(streaming, *waiting, return_exceptions=True)
        state = limiter.state("acme")
        assert (state.in_flight, state.waiting) == (0, 0)
        server.gate.set()
        assert text(await asyncio.wait_for(call(route), 10)) == "hi"  # the slot is free
    assert limiter.state("acme").in_flight == 0
    assert server.arrived == 2  # the cancelled waiters never sent a request


async def test_a_call_that_fails_before_its_request_holds_no_permit() -> None:
    limiter = RateLimiter()
    route = ProvidersAdapter.from_config(
        acme("http://127.0.0.1:9", max_concurrency=1), env={}, rate_limiter=limiter
    )
    with pytest.raises(LlmError) as info:  # no key: refused before any I/O
        await call(route)
    assert info.value.code == "MISSING_CREDENTIAL"
    assert limiter.state("acme").in_flight == 0


async def test_the_route_limits_land_on_the_resolved_profile() -> None:
    profiles = resolve_profiles(
        acme("http://x", max_concurrency=4, requests_per_minute=60, tokens_per_minute=90_000.5)
    )
    assert profiles["acme"].rate_limits == RouteLimits(
        max_concurrency=4, requests_per_minute=60.0, tokens_per_minute=90_000.5
    )
    assert resolve_profiles(acme("http://x"))["acme"].rate_limits == RouteLimits()


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("max_concurrency", 0, "integer"),
        ("max_concurrency", -2, "integer"),
        ("max_concurrency", 2.5, "integer"),
        ("max_concurrency", "4", "integer"),
        ("requests_per_minute", -1, "finite number"),
        ("requests_per_minute", 0, "finite number"),
        ("requests_per_minute", True, "finite number"),
        ("tokens_per_minute", -1000, "finite number"),
        ("tokens_per_minute", math.inf, "finite number"),
    ],
)
def test_bad_limit_values_are_invalid_config_naming_the_field(
    field: str, value: object, kind: str
) -> None:
    with pytest.raises(HarnessError) as info:
        resolve_profiles(acme("http://x", **{field: value}))
    assert info.value.code == "INVALID_CONFIG"
    assert info.value.message == (
        f'providers: provider "acme" providers.acme.{field} must be a positive {kind}'
    )
