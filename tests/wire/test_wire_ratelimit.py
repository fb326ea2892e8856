"""The client-side rate limiter on its own: budgets, published state, FIFO, cancellation.

Time is a fake: `FakeTime.sleep` records the seconds the limiter asked for and moves the fake
clock on by them, so every assertion is on the sleep requested, never on elapsed time.
"""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime
from email.utils import formatdate

import pytest
from limit_server import T0, FakeTime

from modelwire.events_ratelimit import RateLimitNotice
from modelwire.runtime.ratewait import listen_for_rate_limit_waits
from modelwire.wire.ratelimit import Permit, RateLimiter, RouteLimits, route_limits
from modelwire.wire.ratelimit_headers import parse_duration_s, parse_rate_limit_headers


class StuckTime(FakeTime):
    """A sleep that never ends by itself (only a kick or a cancellation ends the wait)."""

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await asyncio.Event().wait()


async def settle() -> None:
    """Let every ready task run until it waits (a few loop turns)."""
    for _ in range(10):
        await asyncio.sleep(0)


def limiter(time: FakeTime, **kw: float) -> RateLimiter:
    return RateLimiter(clock=time.clock, sleep=time.sleep, **kw)


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


async def heard(coro: object) -> tuple[object, list[RateLimitNotice]]:
    notices: list[RateLimitNotice] = []

    async def listen(notice: RateLimitNotice) -> None:
        notices.append(notice)

    with listen_for_rate_limit_waits(listen):
        result = await coro  # type: ignore[misc]
    return result, notices


async def test_a_route_without_limits_or_published_state_never_waits() -> None:
    time = FakeTime()
    lim = limiter(time)
    permits = [await lim.acquire("acme", 10_000) for _ in range(50)]
    assert time.sleeps == [] and lim.state("acme").in_flight == 50
    for permit in permits:
        lim.release(permit, 10)
    assert lim.state("acme").in_flight == 0


async def test_openai_zero_remaining_requests_waits_for_the_published_reset() -> None:
    time = FakeTime()
    lim = limiter(time)
    lim.observe("acme", {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"})
    permit, notices = await heard(lim.acquire("acme"))
    assert time.sleeps == [2.0]
    assert notices == [
        RateLimitNotice(
            route="acme",
            reason="requests",
            wait_ms=2000.0,
            detail="0 requests remaining until the reset",
        )
    ]
    assert isinstance(permit, Permit) and lim.state("acme").remaining_requests is None


async def test_published_remaining_requests_count_down_with_each_granted_call() -> None:
    time = FakeTime()
    lim = limiter(time)
    lim.observe(
        "acme", {"x-ratelimit-remaining-requests": "2", "x-ratelimit-reset-requests": "6m0s"}
    )
    await lim.acquire("acme")
    await lim.acquire("acme")
    assert time.sleeps == []
    await lim.acquire("acme")
    assert time.sleeps == [60.0]  # 6 minutes published, cut to max_wait_s


async def test_openai_remaining_tokens_below_the_estimate_waits_for_the_token_reset() -> None:
    time = FakeTime()
    lim = limiter(time)
    lim.observe(
        "acme",
        {"X-RateLimit-Remaining-Tokens": "500", "X-RateLimit-Reset-Tokens": "20ms"},
    )
    await lim.acquire("acme", 400)  # fits: 100 left
    _, notices = await heard(lim.acquire("acme", 400))
    assert time.sleeps == [pytest.approx(0.02)]
    assert [n.reason for n in notices] == ["tokens"]
    assert notices[0].detail == "100 tokens remaining until the reset, about 400 needed"


async def test_anthropic_reset_times_hold_the_route_until_then() -> None:
    time = FakeTime()
    lim = limiter(time)
    lim.observe(
        "claude",
        {
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": rfc3339(T0 + 3),
            "anthropic-ratelimit-tokens-remaining": "90000",
            "anthropic-ratelimit-tokens-reset": rfc3339(T0 + 1),
        },
    )
    _, notices = await heard(lim.acquire("claude", 1000))
    assert time.sleeps == [3.0]
    assert [(n.reason, n.wait_ms) for n in notices] == [("requests", 3000.0)]


async def test_anthropic_input_tokens_stand_in_when_no_combined_token_limit_is_sent() -> None:
    facts = parse_rate_limit_headers(
        {
            "anthropic-ratelimit-input-tokens-remaining": "10",
            "anthropic-ratelimit-input-tokens-reset": rfc3339(T0 + 4),
        },
        now=T0,
    )
    assert facts is not None
    assert (facts.remaining_tokens, facts.tokens_reset_s) == (10.0, 4.0)


async def test_an_anthropic_reset_is_measured_by_the_server_date_when_our_clock_is_skewed() -> None:
    server_now = T0 - 100  # the server's clock is 100 s behind ours
    headers = {
        "Date": formatdate(server_now, usegmt=True),
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": rfc3339(server_now + 5),
    }
    facts = parse_rate_limit_headers(headers, now=T0)
    assert facts is not None and facts.requests_reset_s == 5.0
    near = dict(headers, Date=formatdate(T0 - 1, usegmt=True))  # within the skew: our clock
    near["anthropic-ratelimit-requests-reset"] = rfc3339(T0 + 5)
    facts = parse_rate_limit_headers(near, now=T0)
    assert facts is not None and facts.requests_reset_s == 5.0


async def test_retry_after_blocks_the_route_for_that_long() -> None:
    time = FakeTime()
    lim = limiter(time)
    lim.observe("acme", {"Retry-After": "3"})
    _, notices = await heard(lim.acquire("acme"))
    assert time.sleeps == [3.0]
    assert [(n.reason, n.wait_ms) for n in notices] == [("retry-after", 3000.0)]
    await lim.acquire("acme")
    assert time.sleeps == [3.0]  # the pause is over


async def test_a_published_wait_longer_than_max_wait_is_cut_to_it() -> None:
    time = FakeTime()
    lim = limiter(time, max_wait_s=30)
    lim.observe("acme", {"retry-after": "3600"})
    await lim.acquire("acme")
    assert time.sleeps == [30.0]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("0.5s", 0.5),
        ("2", 2.0),
        (str(T0 + 7), 7.0),
        ("soon", None),
        ("", None),
        ("-1s", None),
        ("1s junk", None),
        (None, None),
    ],
)
def test_openai_reset_durations_parse_in_go_format(text: str | None, seconds: float | None) -> None:
    got = parse_duration_s(text, now=T0)
    assert got == (None if seconds is None else pytest.approx(seconds))


@pytest.mark.parametrize(
    "headers",
    [
        {"x-ratelimit-remaining-requests": "none", "x-ratelimit-reset-requests": "2s"},
        {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "later"},
        {"x-ratelimit-remaining-requests": "0"},  # no reset: nothing says how long
        {"x-ratelimit-remaining-requests": "-3", "x-ratelimit-reset-requests": "2s"},
        {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "x"},
        {"retry-after": "-5"},
        {"retry-after": "nan"},
        {"content-type": "text/event-stream"},
    ],
)
async def test_unusable_rate_limit_headers_are_ignored(headers: dict[str, str]) -> None:
    time = FakeTime()
    lim = limiter(time)
    lim.observe("acme", headers)
    await lim.acquire("acme")
    assert time.sleeps == []


async def test_requests_per_minute_lets_a_minute_burst_through_then_paces() -> None:
    time = FakeTime()
    lim = limiter(time)
    limits = RouteLimits(requests_per_minute=2)
    await lim.acquire("acme", limits=limits)
    await lim.acquire("acme", limits=limits)
    assert time.sleeps == []
    _, notices = await heard(lim.acquire("acme", limits=limits))
    assert time.sleeps == [pytest.approx(30.0)]
    assert [(n.reason, n.detail) for n in notices] == [("requests", "requests_per_minute 2")]


async def test_tokens_per_minute_takes_the_estimate_and_release_corrects_it() -> None:
    time = FakeTime()
    lim = limiter(time)
    limits = RouteLimits(tokens_per_minute=1000)
    first = await lim.acquire("acme", 800, limits=limits)
    lim.release(first, used_tokens=100)  # 200 + 700 back
    await lim.acquire("acme", 500, limits=limits)
    assert time.sleeps == []
    await lim.acquire("acme", 600, limits=limits)  # 400 left: 200 short at 1000/60 per second
    assert time.sleeps == [pytest.approx(12.0)]


async def test_an_estimate_above_the_whole_budget_waits_only_for_a_full_bucket() -> None:
    time = FakeTime()
    lim = limiter(time)
    limits = RouteLimits(tokens_per_minute=600)
    await lim.acquire("acme", 5_000, limits=limits)  # a full bucket is enough to go
    assert time.sleeps == []


async def test_concurrency_is_granted_first_come_first_served() -> None:
    time = FakeTime()
    lim = limiter(time)
    limits = RouteLimits(max_concurrency=1)
    first = await lim.acquire("acme", limits=limits)
    order: list[str] = []

    async def call(name: str) -> Permit:
        permit = await lim.acquire("acme", limits=limits)
        order.append(name)
        return permit

    tasks = [asyncio.create_task(call(n)) for n in "abc"]
    await settle()
    assert lim.state("acme").waiting == 3
    lim.release(first)
    held = await tasks[0]
    await settle()
    assert order == ["a"]  # b and c still wait: one slot
    lim.release(held)
    lim.release(await tasks[1])
    lim.release(await tasks[2])
    assert order == ["a", "b", "c"] and time.sleeps == []
    assert lim.state("acme").in_flight == 0


async def test_a_later_call_never_overtakes_a_waiting_one() -> None:
    time = StuckTime()
    lim = RateLimiter(clock=time.clock, sleep=time.sleep)
    lim.observe("acme", {"retry-after": "5"})
    waiting = asyncio.create_task(lim.acquire("acme"))
    await settle()
    later = asyncio.create_task(lim.acquire("acme"))
    await settle()
    assert lim.state("acme").waiting == 2
    time.now += 5  # the pause is over, but the head's sleep has not ended: nobody goes yet
    await settle()
    assert not later.done()
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    lim.release(await later)
    assert lim.state("acme").waiting == 0


async def test_queued_and_concurrency_waits_are_announced_once_without_a_duration() -> None:
    time = FakeTime()
    lim = limiter(time)
    limits = RouteLimits(max_concurrency=1)
    first = await lim.acquire("acme", limits=limits)
    notices: list[RateLimitNotice] = []

    async def listen(notice: RateLimitNotice) -> None:
        notices.append(notice)

    with listen_for_rate_limit_waits(listen):
        head = asyncio.create_task(lim.acquire("acme", limits=limits))
        behind = asyncio.create_task(lim.acquire("acme", limits=limits))
    await settle()
    assert [(n.reason, n.wait_ms) for n in notices] == [("concurrency", None), ("queue", None)]
    assert notices[0].detail == "1 call(s) in flight, max_concurrency 1"
    assert notices[1].detail == "behind 1 earlier call(s)"
    lim.release(first)
    lim.release(await head)
    lim.release(await behind)
    assert len(notices) == 2  # the one behind became head: not announced again


async def test_a_publication_wakes_a_waiting_call_before_its_timer() -> None:
    time = StuckTime()
    lim = RateLimiter(clock=time.clock, sleep=time.sleep)
    lim.observe(
        "acme", {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "30s"}
    )
    task = asyncio.create_task(lim.acquire("acme"))
    await settle()
    assert time.sleeps == [30.0] and not task.done()
    lim.observe(
        "acme", {"x-ratelimit-remaining-requests": "9", "x-ratelimit-reset-requests": "30s"}
    )
    permit = await asyncio.wait_for(task, 5)
    lim.release(permit)
    assert lim.state("acme").remaining_requests == 8


async def test_cancelling_a_waiting_call_leaves_the_queue_and_holds_no_permit() -> None:
    time = StuckTime()
    lim = RateLimiter(clock=time.clock, sleep=time.sleep)
    limits = RouteLimits(max_concurrency=1)
    held = await lim.acquire("acme", limits=limits)
    on_slot = asyncio.create_task(lim.acquire("acme", limits=limits))
    await settle()
    on_slot.cancel()
    with pytest.raises(asyncio.CancelledError):
        await on_slot
    lim.observe("acme", {"retry-after": "5"})
    lim.release(held)
    on_timer = asyncio.create_task(lim.acquire("acme", limits=limits))
    await settle()
    assert time.sleeps == [5.0]
    on_timer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await on_timer
    state = lim.state("acme")
    assert (state.in_flight, state.waiting) == (0, 0)
    lim.release(held)  # a second release does nothing
    assert lim.state("acme").in_flight == 0
    time.now += 5
    free = await lim.acquire("acme", limits=limits)  # the slot is free: nothing leaked
    assert lim.state("acme").in_flight == 1
    lim.release(free)


async def test_a_listener_that_fails_does_not_fail_the_wait() -> None:
    time = FakeTime()
    lim = limiter(time)
    lim.observe("acme", {"retry-after": "1"})

    async def broken(notice: RateLimitNotice) -> None:
        raise RuntimeError("listener bug")

    with listen_for_rate_limit_waits(broken):
        await lim.acquire("acme")
    assert time.sleeps == [1.0]


async def test_changed_limits_apply_to_the_next_call() -> None:
    time = FakeTime()
    lim = limiter(time)
    first = await lim.acquire("acme", limits=RouteLimits(max_concurrency=2))
    second = await lim.acquire("acme", limits=RouteLimits(max_concurrency=2))
    blocked = asyncio.create_task(lim.acquire("acme", limits=RouteLimits(max_concurrency=2)))
    await settle()
    assert not blocked.done()
    lim.release(first)
    lim.release(await blocked)
    lim.release(second)
    await lim.acquire("acme", limits=RouteLimits())  # no limit any more
    assert time.sleeps == []


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("max_concurrency", 0, "must be a positive integer"),
        ("max_concurrency", -1, "must be a positive integer"),
        ("max_concurrency", 1.5, "must be a positive integer"),
        ("max_concurrency", True, "must be a positive integer"),
        ("requests_per_minute", -5, "must be a positive finite number"),
        ("requests_per_minute", 0, "must be a positive finite number"),
        ("tokens_per_minute", math.inf, "must be a positive finite number"),
        ("tokens_per_minute", math.nan, "must be a positive finite number"),
        ("tokens_per_minute", "1000", "must be a positive finite number"),
    ],
)
def test_route_limits_refuse_bad_values_naming_the_field(
    field: str, value: object, problem: str
) -> None:
    with pytest.raises(ValueError, match=rf"^providers\.acme\.{field} {problem}$"):
        route_limits({field: value}, "providers.acme")


def test_route_limits_read_the_three_fields() -> None:
    got = route_limits(
        {"max_concurrency": 4, "requests_per_minute": 60, "tokens_per_minute": 1.5e5}, "x"
    )
    assert got == RouteLimits(max_concurrency=4, requests_per_minute=60.0, tokens_per_minute=1.5e5)
    assert route_limits({}, "x") == RouteLimits()
