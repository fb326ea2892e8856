"""An agent's model-call deadline (issue #32): `Agent(..., timeout_ms=)` bounds each model call
of every turn, `run_turn(..., timeout_ms=)` overrides it for one turn, and a malformed value is
refused before anything happens.

The route is the real `DeepSeekAdapter` against a 127.0.0.1 server that sends its headers and
then stalls until the test ends, so only the deadline under test can end the call (the idle
budget is set far larger). Outcomes only: no elapsed time is asserted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent
from modelwire.errors import HarnessError
from modelwire.runtime import LlmRuntime
from modelwire.session import MemoryLog
from modelwire.wire.http import close_sessions

ROUTE = "deepseek-official"
MODEL = "deepseek-v4-flash"


@pytest.fixture
async def stalling_url() -> AsyncIterator[str]:
    release = asyncio.Event()

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await release.wait()
        return response

    app = web.Application()
    app.router.add_post("/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        release.set()
        await runner.cleanup()
        await close_sessions()


def _agent(url: str, **options: object) -> Agent[str]:
    runtime = LlmRuntime()
    adapter = DeepSeekAdapter(
        api_key="sk-deadline", base_url=url, env={}, stream_idle_timeout_ms=600_000
    )
    runtime.register_adapter([ROUTE], adapter)
    return Agent(runtime, MemoryLog(), ROUTE, MODEL, lease_ms=None, **options)  # type: ignore[arg-type]


async def test_agent_timeout_ms_bounds_each_model_call(stalling_url: str) -> None:
    agent = _agent(stalling_url, timeout_ms=60)
    result = await asyncio.wait_for(agent.run_turn("s1", "hello"), 30)  # hang guard
    assert result.reason.kind == "error"
    failure = result.failure
    assert failure is not None and failure.code == "TIMEOUT"
    assert "total deadline of 60ms (timeout_ms)" in failure.message


async def test_run_turn_timeout_ms_overrides_the_agents_for_one_turn(stalling_url: str) -> None:
    agent = _agent(stalling_url, timeout_ms=3_600_000)  # an hour: never the one that fires
    result = await asyncio.wait_for(agent.run_turn("s1", "hello", timeout_ms=60), 30)
    failure = result.failure
    assert failure is not None and failure.code == "TIMEOUT"
    assert "total deadline of 60ms" in failure.message


@pytest.mark.parametrize("value", [-1, 2.5, "100", True])
def test_a_malformed_agent_timeout_is_invalid_config(value: object) -> None:
    with pytest.raises(HarnessError) as info:
        _agent("http://127.0.0.1:9", timeout_ms=value)
    assert info.value.code == "INVALID_CONFIG" and "timeout_ms" in info.value.message


async def test_a_malformed_turn_timeout_is_refused_before_the_turn(stalling_url: str) -> None:
    agent = _agent(stalling_url)
    log = agent.log
    with pytest.raises(HarnessError) as info:
        await agent.run_turn("s1", "hello", timeout_ms=-5)
    assert info.value.code == "INVALID_CONFIG"
    with pytest.raises(HarnessError) as missing:  # nothing was written: no session at all
        await log.read("s1")
    assert missing.value.code == "SESSION_NOT_FOUND"
