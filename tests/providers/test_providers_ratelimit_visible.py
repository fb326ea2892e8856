"""A client-side rate-limit wait is visible: the agent logs `llm/rate-limit-wait` for the attempt
that waits (before its chunks), concurrent sessions each log their own, and `modelwire chat`
prints one stderr line for it. The limiter runs on a fake clock throughout."""

from __future__ import annotations

import asyncio

from limit_server import chat_wait_lines
from ratelimit_helpers import Answer, FakeTime, LimitServer, adapter

from modelwire import LlmRuntime
from modelwire.agent import Agent
from modelwire.cli.config import CliConfig
from modelwire.cli.render import event_line
from modelwire.cli.routes import Route, RouteSet
from modelwire.events_ratelimit import LlmRateLimitWait
from modelwire.session import MemoryLog
from modelwire.wire.ratelimit import RateLimiter

SPENT = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"}


async def test_the_agent_logs_the_wait_of_the_attempt_before_its_chunks() -> None:
    time = FakeTime()
    log = MemoryLog()
    async with LimitServer([Answer(headers=SPENT), Answer()]) as server:
        runtime = LlmRuntime()
        adapter(server.url, time.limiter()).register(runtime)
        agent = Agent(runtime, log, "acme", "m")
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
            provider="acme",
            reason="requests",
            wait_ms=2000.0,
            detail="0 requests remaining until the reset",
        )
    ]
    chunks = [e.seq for e in events if e.type == "assistant/chunk" and e.data.turn == 2]
    assert waits[0].seq < chunks[0]
    line = event_line(waits[0]).plain
    assert "llm/rate-limit-wait" in line
    assert "2.1 attempt 1: waiting 2s for acme rate limit (requests: 0 requests" in line


async def test_concurrent_sessions_each_log_only_their_own_wait() -> None:
    limiter = RateLimiter()
    log = MemoryLog()
    async with LimitServer([Answer()]) as server:
        server.gate = asyncio.Event()
        runtime = LlmRuntime()
        adapter(server.url, limiter, max_concurrency=1).register(runtime)
        agent = Agent(runtime, log, "acme", "m")
        first = asyncio.create_task(agent.run_turn("a", "hello"))
        while server.arrived < 1:
            await asyncio.sleep(0.001)
        second = asyncio.create_task(agent.run_turn("b", "hello"))
        while limiter.state("acme").waiting < 1:
            await asyncio.sleep(0.001)
        server.gate.set()
        await asyncio.gather(first, second)
    assert [e.type for e in await log.read("a")].count("llm/rate-limit-wait") == 0
    (wait,) = [e.data for e in await log.read("b") if e.type == "llm/rate-limit-wait"]
    assert isinstance(wait, LlmRateLimitWait)
    assert (wait.reason, wait.wait_ms, wait.turn, wait.attempt) == ("concurrency", None, 1, 1)


async def test_chat_prints_one_stderr_line_when_a_call_waits() -> None:
    time = FakeTime()
    async with LimitServer([Answer(headers=SPENT), Answer()]) as server:
        providers = adapter(server.url, time.limiter())
        routes = RouteSet(
            routes={"acme": Route("acme", "Acme", "config", providers, None)}, config=CliConfig()
        )
        lines = await chat_wait_lines(routes, "acme", "m")
    assert lines == [
        "waiting 2s for acme rate limit (requests: 0 requests remaining until the reset)"
    ]
