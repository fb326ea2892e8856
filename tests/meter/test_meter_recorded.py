"""The token meter over a recorded session with a retried step: real DeepSeek adapter, loopback
server replaying recorded DeepSeek streams (`../shared/fixtures/deepseek-chat`), a hand-computed
usage table."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent, Tool
from modelwire.meter import TokenMeter
from modelwire.retry import RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import MemoryLog
from modelwire.vocab import TokenUsage
from modelwire.wire.http import close_sessions

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "deepseek-chat"
ROUTE = "deepseek-official"


def _fixture(name: str) -> bytes:
    path = FIXTURES / name
    if not path.exists():
        pytest.fail(f"recorded fixture {path} is absent (expected beside the repository)")
    return path.read_bytes()


def _sse(*payloads: dict[str, object]) -> bytes:
    return "".join(f"data: {json.dumps(p)}\n\n" for p in payloads).encode()


# Attempt 1 of (1, 1): some text, DeepSeek's usage, then an in-band 503 error (no [DONE]).
FAILED_ATTEMPT = _sse(
    {"choices": [{"index": 0, "delta": {"content": "Let me"}, "finish_reason": None}]},
    {
        "choices": [],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 7,
            "prompt_cache_hit_tokens": 40,
            "prompt_cache_miss_tokens": 60,
        },
    },
    {"error": {"code": 503, "message": "server overloaded"}},
)
TURN_TWO = (
    _sse(
        {"choices": [{"index": 0, "delta": {"content": "Bye."}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 5}},
    )
    + b"data: [DONE]\n\n"
)


@pytest.fixture
async def replay_server() -> AsyncIterator[tuple[str, list[bytes]]]:
    bodies = [
        FAILED_ATTEMPT,
        _fixture("ds-reasoner-tool-cache-hit.sse"),
        _fixture("ds-reasoner-strawberry.sse"),
        TURN_TWO,
    ]

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(bodies.pop(0))
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/chat/completions", handle)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", bodies
    finally:
        await close_sessions()
        await runner.cleanup()


async def test_meter_hand_computed_table_for_a_recorded_session_with_a_retried_step(
    replay_server: tuple[str, list[bytes]],
) -> None:
    url, remaining = replay_server
    runtime = LlmRuntime()
    policy = {
        "mode": "normal",
        "backoff": {"initial_delay_ms": 10, "max_delay_ms": 10, "jitter_ratio": 0},
    }
    runtime.register_adapter(
        [ROUTE],
        DeepSeekAdapter(api_key="sk-meter-0123456789", base_url=url, env={}, retry_policy=policy),
    )
    weather = Tool("weather", "weather by location", {"type": "object"}, lambda args: "sunny, 18C")
    log = MemoryLog()
    sid = f"meter-{uuid.uuid4()}"
    agent = Agent(
        runtime=runtime,
        log=log,
        provider=ROUTE,
        model="deepseek-reasoner",
        tools=[weather],
        plugins=[RetryPlugin()],
    )
    meter = TokenMeter()
    first = await agent.run_turn(sid, "Weather in San Francisco? And count the r's in strawberry.")
    assert first.reason.kind == "completed"
    assert await meter.catch_up(log, sid)  # incremental, between turns
    second = await agent.run_turn(sid, "bye")
    assert second.text == "Bye."
    await meter.catch_up(log, sid)
    assert remaining == []
    events = await log.read(sid)
    assert [e.type for e in events].count("llm/retry") == 1

    # Hand-computed from the streams: DeepSeek reports prompt tokens including cache hits,
    # so uncached input = prompt_cache_miss_tokens; reasoning is inside completion_tokens.
    #   call        uncached  cache-read  cache-write  output  (reasoning)
    #   (1,1,1)         60         40          0           7       0   failed attempt, kept
    #   (1,1,2)         19        320          0          83      39   tool call (fixture)
    #   (1,2,1)         18          0          0         219     205   strawberry (fixture)
    #   (2,1,1)         50          0          0           5       0
    #   turn 1          97        360          0         309     244
    #   total          147        360          0         314     244   → 821 billed tokens
    report = meter.report()
    assert dict(report.calls) == {
        (1, 1, 1): TokenUsage(60, 7, 40, 0, 0),
        (1, 1, 2): TokenUsage(19, 83, 320, 0, 39),
        (1, 2, 1): TokenUsage(18, 219, 0, 0, 205),
        (2, 1, 1): TokenUsage(50, 5, 0, 0, 0),
    }
    assert dict(report.turns) == {
        1: TokenUsage(97, 309, 360, 0, 244),
        2: TokenUsage(50, 5, 0, 0, 0),
    }
    assert report.total == TokenUsage(147, 314, 360, 0, 244)
    assert report.total.total_tokens == 821
    assert report == TokenMeter.project(events)
    # Rebuildable at any seq: before the retry's final message only the failed call is counted
    # (plus the retry's early usage chunk once it is logged).
    retry_seq = next(e.seq for e in events if e.type == "llm/retry")
    assert TokenMeter.project(events[:retry_seq]).total == TokenUsage(60, 7, 40, 0, 0)
