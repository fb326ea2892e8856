"""Client-side rate limits on the DeepSeek route, over real loopback HTTP (issue 18).

The server publishes `x-ratelimit-*` / `retry-after` headers; the adapter's limiter, on a fake
clock (assertions are on the sleeps it asked for and the fake time requests arrived at, never on
the wall clock), makes the next call wait before its request. `max_concurrency` holds under 200
concurrent calls, a cancelled waiter sends nothing, the three `[deepseek]` keys are validated as
a providers profile's are, and a wait is logged by an Agent turn and printed by `chat`.
"""

from __future__ import annotations

import asyncio
import math
import re
import tomllib
from pathlib import Path

import pytest
from deepseek_helpers import collect, options
from deepseek_ratelimit_helpers import KEY, T0, Answer, FakeTime, LimitServer, limited
from limit_server import chat_wait_lines

from modelwire import LlmRuntime, TextDelta
from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent, open_runtime
from modelwire.cli.config import CliConfig
from modelwire.cli.routes import Route, RouteSet
from modelwire.errors import HarnessError, LlmError
from modelwire.events_ratelimit import LlmRateLimitWait, RateLimitNotice
from modelwire.runtime.ratewait import listen_for_rate_limit_waits
from modelwire.session import MemoryLog
from modelwire.vocab import StreamChunk
from modelwire.wire.ratelimit import RouteLimits

ROUTE = "deepseek"
MODEL = "deepseek-v4-flash"
OPTIONS = options(provider=ROUTE)
SPENT = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"}


async def call(adapter: DeepSeekAdapter) -> str:
    chunks: list[StreamChunk] = await collect(adapter.stream(OPTIONS))
    return "".join(c.text for c in chunks if isinstance(c, TextDelta))


@pytest.mark.parametrize(
    ("published", "wait"),
    [
        (SPENT, 2.0),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.5"}, 1.5),
        ({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "500ms"}, 0.5),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, 60.0),
    ],
    ids=["requests-2s", "requests-bare-seconds", "tokens-500ms", "capped-at-60s"],
)
async def test_a_spent_budget_makes_the_next_call_wait_exactly_its_reset(
    published: dict[str, str], wait: float
) -> None:
    time = FakeTime()
    async with LimitServer([Answer(headers=published), Answer()], clock=time.clock) as server:
        route = limited(server.url, time)
        assert await call(route) == "hello"
        assert time.sleeps == []  # the first call went at once
        assert await call(route) == "hello"
    assert time.sleeps == [wait]
    assert server.arrivals == [T0, T0 + wait]  # the second request left after the reset


async def test_a_429_retry_after_pauses_the_route_for_that_long() -> None:
    time = FakeTime()
    answers = [Answer(429, {"Retry-After": "7"}), Answer()]
    async with LimitServer(answers, clock=time.clock) as server:
        route = limited(server.url, time)
        with pytest.raises(LlmError) as info:  # the adapter raises; the runtime would finish
            await call(route)
        assert info.value.code == "RATE_LIMIT"
        assert await call(route) == "hello"
    assert time.sleeps == [7.0]
    assert server.arrivals == [T0, T0 + 7.0]


async def test_requests_per_minute_spaces_the_calls_on_the_clock() -> None:
    time = FakeTime()
    async with LimitServer([Answer()], clock=time.clock) as server:
        route = limited(server.url, time, requests_per_minute=1)
        assert [await call(route), await call(route)] == ["hello", "hello"]
    assert time.sleeps == [60.0]
    assert server.arrivals == [T0, T0 + 60.0]


async def test_the_reported_usage_corrects_the_token_estimate() -> None:
    # tokens_per_minute 4: the request's estimate (bytes / 4, far above 4) takes the bucket deep
    # into debt; the usage DeepSeek reports (3 + 1 tokens) settles it, so the next call waits
    # for 4 tokens only (60 s at 4 a minute), not for the estimate's debt.
    time = FakeTime()
    async with LimitServer([Answer()], clock=time.clock) as server:
        route = limited(server.url, time, tokens_per_minute=4)
        assert [await call(route), await call(route)] == ["hello", "hello"]
    assert time.sleeps == [60.0]


async def test_200_concurrent_calls_never_exceed_max_concurrency() -> None:
    time = FakeTime()
    async with LimitServer([Answer()]) as server:
        route = limited(server.url, time, max_concurrency=5)
        limiter = route.rate_limiter
        # hold the replies until every call the limiter let through has reached the server
        server.hold = lambda: server.in_flight < limiter.state(ROUTE).in_flight
        results = await asyncio.gather(*(call(route) for _ in range(200)))
    assert results == ["hello"] * 200
    assert server.arrived == 200
    assert server.max_in_flight == 5  # reached, never exceeded
    assert time.sleeps == []  # concurrency waits on earlier calls, never on the clock
    state = limiter.state(ROUTE)
    assert (state.in_flight, state.waiting) == (0, 0)


async def test_cancelling_a_waiting_call_sends_nothing_and_leaks_no_permit() -> None:
    async with LimitServer([Answer()]) as server:
        server.gate = asyncio.Event()
        route = limited(server.url, FakeTime(), max_concurrency=1)
        limiter = route.rate_limiter
        streaming = asyncio.create_task(call(route))
        while server.arrived < 1:
            await asyncio.sleep(0.001)
        waiting = [asyncio.create_task(call(route)) for _ in range(3)]
        while limiter.state(ROUTE).waiting < 3:
            await asyncio.sleep(0.001)
        for task in waiting:
            task.cancel()
        results = await asyncio.gather(*waiting, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        assert limiter.state(ROUTE).waiting == 0
        server.gate.set()
        assert await streaming == "hello"
        assert await asyncio.wait_for(call(route), 10) == "hello"  # the slot is free
    assert server.arrived == 2  # the cancelled waiters never sent a request
    assert limiter.state(ROUTE).in_flight == 0


async def test_update_config_changes_the_limits_of_the_next_calls() -> None:
    time = FakeTime()
    async with LimitServer([Answer()], clock=time.clock) as server:
        route = limited(server.url, time)
        assert await call(route) == "hello"
        settings = {"api_key": KEY, "base_url": server.url, "requests_per_minute": 1}
        assert route.update_config(settings).rate_limits == RouteLimits(requests_per_minute=1)
        assert [await call(route), await call(route)] == ["hello", "hello"]
    assert time.sleeps == [60.0]  # the first call under the new limit went at once


def test_the_config_keys_become_the_route_limits() -> None:
    adapter = DeepSeekAdapter.from_config(
        {"max_concurrency": 4, "requests_per_minute": 60, "tokens_per_minute": 90_000.5}, env={}
    )
    assert adapter.config.rate_limits == RouteLimits(
        max_concurrency=4, requests_per_minute=60.0, tokens_per_minute=90_000.5
    )
    assert DeepSeekAdapter(env={}).config.rate_limits == RouteLimits()  # no limit by default


def test_the_readme_deepseek_section_configures_the_limits() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", readme, re.S) if "[deepseek]" in b]
    assert len(blocks) == 1, "the README shows one [deepseek] example"
    section = tomllib.loads(re.sub(r"(?m)^  ", "", blocks[0]))["deepseek"]
    limits = DeepSeekAdapter.from_config(section, env={}).config.rate_limits
    assert limits == RouteLimits(
        max_concurrency=8, requests_per_minute=120.0, tokens_per_minute=2_000_000.0
    )


BAD = [
    ("max_concurrency", 0, "integer"),
    ("max_concurrency", -2, "integer"),
    ("max_concurrency", 2.5, "integer"),
    ("max_concurrency", "4", "integer"),
    ("max_concurrency", True, "integer"),
    ("requests_per_minute", 0, "finite number"),
    ("requests_per_minute", -1, "finite number"),
    ("requests_per_minute", True, "finite number"),
    ("tokens_per_minute", math.inf, "finite number"),
    ("tokens_per_minute", math.nan, "finite number"),
    ("tokens_per_minute", "lots", "finite number"),
]


@pytest.mark.parametrize(("key", "value", "kind"), BAD)
def test_a_bad_limit_is_refused_naming_the_field(key: str, value: object, kind: str) -> None:
    expected = f"deepseek.{key} must be a positive {kind}"
    with pytest.raises(LlmError) as info:
        DeepSeekAdapter.from_config({key: value}, env={})
    assert info.value.code == "INVALID_CONFIG"
    assert info.value.message == f"DeepSeek adapter: {expected}"
    adapter = DeepSeekAdapter(env={}, max_concurrency=2)
    with pytest.raises(LlmError, match=expected):  # an update keeps the previous snapshot
        adapter.update_config({key: value})
    assert adapter.config.rate_limits == RouteLimits(max_concurrency=2)


def test_open_runtime_refuses_a_bad_deepseek_limit_naming_the_field(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text("[deepseek]\nrequests_per_minute = -5\n", encoding="utf-8")
    with pytest.raises(HarnessError) as info:
        open_runtime(file, env={})
    assert info.value.code == "INVALID_CONFIG"
    assert "deepseek.requests_per_minute must be a positive finite number" in info.value.message
    assert str(file) in info.value.message


async def test_open_runtime_applies_the_deepseek_section_limits(tmp_path: Path) -> None:
    heard: list[RateLimitNotice] = []

    async def hear(notice: RateLimitNotice) -> None:
        heard.append(notice)

    async with LimitServer([Answer()]) as server:
        server.gate = asyncio.Event()
        file = tmp_path / "config.toml"
        file.write_text(
            f'[deepseek]\nbase_url = "{server.url}"\napi_key = "{KEY}"\nmax_concurrency = 2\n',
            encoding="utf-8",
        )
        file.chmod(0o600)  # it holds a key: private, or open_runtime warns
        runtime = open_runtime(file, env={})

        async def one() -> str:
            chunks = [c async for c in runtime.stream(OPTIONS)]
            return "".join(c.text for c in chunks if isinstance(c, TextDelta))

        with listen_for_rate_limit_waits(hear):
            calls = [asyncio.create_task(one()) for _ in range(3)]
        while server.arrived < 2 or not heard:
            await asyncio.sleep(0.001)
        assert server.arrived == 2  # the third waits while the gate holds both slots
        server.gate.set()
        assert await asyncio.gather(*calls) == ["hello"] * 3
    assert server.max_in_flight == 2
    assert [(n.route, n.reason, n.wait_ms) for n in heard] == [(ROUTE, "concurrency", None)]
    assert heard[0].detail == "2 call(s) in flight, max_concurrency 2"


async def test_an_agent_turn_logs_the_wait_before_its_chunks() -> None:
    time = FakeTime()
    log = MemoryLog()
    async with LimitServer([Answer(headers=SPENT), Answer()]) as server:
        runtime = LlmRuntime()
        runtime.register_adapter([ROUTE], limited(server.url, time))
        agent = Agent(runtime, log, ROUTE, MODEL)
        first = await agent.run_turn("s1", "hello")
        second = await agent.run_turn("s1", "again")
    assert (first.reason.kind, second.reason.kind) == ("completed", "completed")
    assert time.sleeps == [2.0]
    events = await log.read("s1")
    waits = [e for e in events if e.type == "llm/rate-limit-wait"]
    assert [e.data for e in waits] == [
        LlmRateLimitWait(
            turn=2,
            step=1,
            attempt=1,
            provider=ROUTE,
            reason="requests",
            wait_ms=2000.0,
            detail="0 requests remaining until the reset",
        )
    ]
    chunks = [e.seq for e in events if e.type == "assistant/chunk" and e.data.turn == 2]
    assert waits[0].seq < chunks[0]


async def test_chat_prints_the_wait_line_on_stderr() -> None:
    time = FakeTime()
    async with LimitServer([Answer(headers=SPENT), Answer()]) as server:
        adapter = limited(server.url, time)
        routes = RouteSet(
            routes={ROUTE: Route(ROUTE, "DeepSeek", "built-in", adapter, None)},
            config=CliConfig(),
        )
        lines = await chat_wait_lines(routes, ROUTE, MODEL)
    assert lines == [
        "waiting 2s for deepseek rate limit (requests: 0 requests remaining until the reset)"
    ]
