"""The token meter's cost: hand-computed tables over recorded streams served on loopback HTTP
through the real adapters, the prices logged in `request/context`, tiers, unknown prices, and
the cost of a session derived from its log alone (SQLite file, another process).

Every expected amount is written out by hand from the list prices (USD per million tokens) and
the token counts of the recording; the arithmetic is in the comment beside it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest
from aiohttp import web
from catchall import serve_all

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.agent import Agent, Tool
from modelwire.meter import TokenMeter
from modelwire.retry import RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import (
    AssistantChunk,
    MemoryLog,
    RequestContext,
    SessionLog,
    StepStart,
    TurnStart,
    open_log,
)
from modelwire.session.export import export_session, import_session
from modelwire.vocab import TokenUsage, UsageChunk
from modelwire.wire.http import close_sessions

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures"
SRC = Path(__file__).resolve().parents[2] / "src"
POLICY = {"mode": "normal", "backoff": {"initial_delay_ms": 1, "max_delay_ms": 1}}


async def _no_wait(seconds: float) -> None:
    """The agent's retry wait, without waiting (no test sleeps in real time)."""


def _fixture(folder: str, name: str) -> bytes:
    path = FIXTURES / folder / name
    if not path.exists():
        pytest.fail(f"recorded fixture {path} is absent (expected beside the repository)")
    return path.read_bytes()


def _sse(*payloads: dict[str, object]) -> bytes:
    return "".join(f"data: {json.dumps(p)}\n\n" for p in payloads).encode()


@asynccontextmanager
async def serve(bodies: Sequence[bytes]) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A real 127.0.0.1 server answering each POST (any path) with the next SSE body."""
    left = list(bodies)

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(left.pop(0))
        await response.write_eof()
        return response

    runner, base_url = await serve_all(handle)
    try:
        yield base_url, left
    finally:
        await close_sessions()
        await runner.cleanup()


# ---- a retried step on the meter's recorded DeepSeek fixtures ---------------------------------

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


def _retried_bodies() -> list[bytes]:
    return [
        FAILED_ATTEMPT,
        _fixture("deepseek-chat", "ds-reasoner-tool-cache-hit.sse"),
        _fixture("deepseek-chat", "ds-reasoner-strawberry.sse"),
        TURN_TWO,
    ]


async def _retried_session(log: SessionLog, url: str, model: str) -> str:
    """Two turns on DeepSeek `model`: turn 1 retries its first step, then calls a tool."""
    runtime = LlmRuntime()
    adapter = DeepSeekAdapter(
        api_key="sk-meter-0123456789", base_url=url, env={}, retry_policy=POLICY
    )
    runtime.register_adapter(["deepseek"], adapter)
    weather = Tool("weather", "weather by location", {"type": "object"}, lambda args: "sunny")
    agent = Agent(
        runtime=runtime,
        log=log,
        provider="deepseek",
        model=model,
        tools=[weather],
        plugins=[RetryPlugin()],
        sleep=_no_wait,
    )
    sid = f"cost-{uuid.uuid4()}"
    first = await agent.run_turn(sid, "Weather in San Francisco? And the r's in strawberry.")
    assert first.reason.kind == "completed"
    assert (await agent.run_turn(sid, "bye")).text == "Bye."
    await agent.close()
    return sid


# deepseek-v4-pro list prices (pi-ai): input 0.435, output 0.87, cache read 0.003625 per 1M.
#   call     uncached cache-read output   arithmetic (USD per 1M × tokens, then / 1,000,000)
#   (1,1,1)     60       40        7      60×0.435 + 40×0.003625 + 7×0.87  = 26.1 + 0.145 + 6.09
#                                         = 32.335        → 0.000032335  (failed attempt, billed)
#   (1,1,2)     19      320       83      8.265 + 1.16 + 72.21   = 81.635 → 0.000081635
#   (1,2,1)     18        0      219      7.83 + 0 + 190.53      = 198.36 → 0.00019836
#   (2,1,1)     50        0        5      21.75 + 4.35           = 26.1   → 0.0000261
#   turn 1: 32.335 + 81.635 + 198.36 = 312.33 → 0.00031233;  total: 312.33 + 26.1 = 338.43
RETRIED_CALLS = {
    (1, 1, 1): Decimal("0.000032335"),
    (1, 1, 2): Decimal("0.000081635"),
    (1, 2, 1): Decimal("0.00019836"),
    (2, 1, 1): Decimal("0.0000261"),
}
RETRIED_TURNS = {1: Decimal("0.00031233"), 2: Decimal("0.0000261")}
RETRIED_TOTAL = Decimal("0.00033843")


async def test_a_retried_step_costs_every_attempt_by_hand() -> None:
    log = MemoryLog()
    async with serve(_retried_bodies()) as (url, left):
        sid = await _retried_session(log, url, "deepseek-v4-pro")
    assert left == []
    events = await log.read(sid)
    assert [e.type for e in events].count("llm/retry") == 1
    (context,) = [e.data for e in events if isinstance(e.data, RequestContext)]
    assert context.pricing is not None and context.pricing.input == Decimal("0.435")
    report = TokenMeter.project(events)
    assert report.calls[(1, 1, 1)] == TokenUsage(60, 7, 40, 0, 0)  # the failed attempt
    assert dict(report.calls_cost) == RETRIED_CALLS
    assert report.call_cost(1, 1, 1) == RETRIED_CALLS[(1, 1, 1)]
    assert report.call_cost(1, 1) == RETRIED_CALLS[(1, 1, 1)]  # attempt 1 by default
    assert report.call_cost(3, 1) is None  # no such call
    assert dict(report.turns_cost) == RETRIED_TURNS
    assert report.cost == RETRIED_TOTAL
    # incremental: folding the events one by one agrees with the projection at every seq
    meter = TokenMeter()
    for event in events:
        meter.apply(event)
    assert meter.report() == report


async def test_a_model_the_catalog_does_not_price_costs_none() -> None:
    log = MemoryLog()
    async with serve(_retried_bodies()) as (url, _):
        sid = await _retried_session(log, url, "deepseek-reasoner")  # no catalog entry
    report = TokenMeter.project(await log.read(sid))
    assert report.total.total_tokens == 821  # the usage is there…
    assert set(report.calls_cost.values()) == {None}  # …but never priced at 0
    assert dict(report.turns_cost) == {1: None, 2: None}
    assert report.cost is None


# ---- a cache-heavy Anthropic stream through the providers adapter ------------------------------


async def test_a_cache_heavy_anthropic_turn_by_hand() -> None:
    bodies = [
        _fixture("anthropic-messages", "crush-anth-sonnet46-parallel-cache.sse"),
        _fixture("anthropic-messages", "crush-anth-sonnet46-final-cache-read.sse"),
    ]
    log = MemoryLog()
    async with serve(bodies) as (url, left):
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "anthropic": {
                        "base_url": url,
                        "api_key_env": "FIXTURE_KEY",
                        "models": [{"id": "claude-sonnet-4-6"}],  # catalog prices
                    }
                }
            },
            env={"FIXTURE_KEY": "sk-ant-fixture"},
        )
        runtime = LlmRuntime()
        adapter.register(runtime)
        tools = [
            Tool("glob", "find files", {"type": "object"}, lambda args: "main.go"),
            Tool("ls", "list a directory", {"type": "object"}, lambda args: "main.go go.mod"),
        ]
        agent = Agent(
            runtime=runtime, log=log, provider="anthropic", model="claude-sonnet-4-6", tools=tools
        )
        result = await agent.run_turn("anth", "List the Go files.")
        await agent.close()
    assert result.reason.kind == "completed" and left == []
    report = TokenMeter.project(await log.read("anth"))
    assert dict(report.calls) == {
        (1, 1, 1): TokenUsage(3, 110, 3733, 4564, 0),
        (1, 2, 1): TokenUsage(1, 5, 8288, 121, 0),
    }
    # claude-sonnet-4-6 (pi-ai): input 3, output 15, cache read 0.3, cache write 3.75 per 1M
    #   (1,1,1): 3×3 + 110×15 + 3733×0.3 + 4564×3.75 = 9 + 1650 + 1119.9 + 17115 = 19893.9
    #   (1,2,1): 1×3 + 5×15 + 8288×0.3 + 121×3.75    = 3 + 75 + 2486.4 + 453.75   = 3018.15
    #   total: 19893.9 + 3018.15 = 22912.05 → 0.02291205 USD (cache writes dominate)
    assert dict(report.calls_cost) == {
        (1, 1, 1): Decimal("0.0198939"),
        (1, 2, 1): Decimal("0.00301815"),
    }
    assert report.cost == Decimal("0.02291205") == report.turns_cost[1]


# ---- a reasoning model: reasoning is inside output, billed once --------------------------------


async def test_a_reasoning_model_bills_reasoning_as_output_once() -> None:
    log = MemoryLog()
    body = _fixture("deepseek-chat", "crush-ds4-flash-reasoning-stop.sse")
    async with serve([body]) as (url, _):
        runtime = LlmRuntime()
        runtime.register_adapter(
            ["deepseek"], DeepSeekAdapter(api_key="sk-x", base_url=url, env={})
        )
        agent = Agent(runtime=runtime, log=log, provider="deepseek", model="deepseek-v4-flash")
        assert (await agent.run_turn("r", "Title this edit.")).text == "Update greeting in main.go"
        await agent.close()
    report = TokenMeter.project(await log.read("r"))
    assert report.call(1, 1) == TokenUsage(168, 10, 0, 0, 3)  # 3 reasoning tokens of the 10
    # deepseek-v4-flash (pi-ai): input 0.14, output 0.28 per 1M
    #   168×0.14 + 10×0.28 = 23.52 + 2.8 = 26.32 → 0.00002632 (not 13×0.28: reasoning is output)
    assert report.call_cost(1, 1) == Decimal("0.00002632") == report.cost


# ---- an unpriced route ------------------------------------------------------------------------

TEXT = (
    _sse(
        {
            "id": "c1",
            "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}],
        },
        {"id": "c1", "choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 2}},
    )
    + b"data: [DONE]\n\n"
)


async def test_a_declared_route_without_cost_is_unpriced_and_makes_the_total_unknown() -> None:
    log = MemoryLog()
    async with serve([TEXT, TEXT]) as (url, _):
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "acme": {  # not a catalog provider, no `cost`: prices unknown
                        "api": "openai-completions",
                        "base_url": url,
                        "api_key_env": "ACME_KEY",
                        "models": [{"id": "acme-1"}],
                    }
                }
            },
            env={"ACME_KEY": "sk-acme"},
        )
        runtime = LlmRuntime()
        adapter.register(runtime)
        runtime.register_adapter(
            ["deepseek"], DeepSeekAdapter(api_key="sk-x", base_url=url, env={})
        )
        priced = Agent(runtime=runtime, log=log, provider="deepseek", model="deepseek-v4-flash")
        await priced.run_turn("mixed", "one")
        await priced.close()
        unpriced = Agent(runtime=runtime, log=log, provider="acme", model="acme-1")
        await unpriced.run_turn("mixed", "two")
        await unpriced.close()
    events = await log.read("mixed")
    contexts = [e.data for e in events if isinstance(e.data, RequestContext)]
    assert [(c.provider, c.pricing is None) for c in contexts] == [
        ("deepseek", False),
        ("acme", True),
    ]
    report = TokenMeter.project(events)
    # turn 1 on deepseek-v4-flash: 30×0.14 + 2×0.28 = 4.2 + 0.56 = 4.76 → 0.00000476
    assert dict(report.calls_cost) == {(1, 1, 1): Decimal("0.00000476"), (2, 1, 1): None}
    assert dict(report.turns_cost) == {1: Decimal("0.00000476"), 2: None}
    assert report.cost is None  # one billed call with an unknown price: no total, never a guess
    before = TokenMeter.project(events[: next(e.seq for e in events if e.data == contexts[1])])
    assert before.cost == Decimal("0.00000476")  # as of turn 1 the total was known


# ---- the cost comes from the log alone --------------------------------------------------------

PROBE = """
import asyncio, json, sys
from modelwire.meter import TokenMeter
from modelwire.session import open_log

async def main():
    log = await open_log(sys.argv[1])
    try:
        report = (await TokenMeter.from_log(log, sys.argv[2])).report()
    finally:
        await log.close()
    loaded = sorted(m for m in sys.modules if m.startswith("modelwire.adapters"))
    print(json.dumps({
        "cost": None if report.cost is None else str(report.cost),
        "calls": {".".join(map(str, k)): None if v is None else str(v)
                  for k, v in sorted(report.calls_cost.items())},
        "adapters": loaded,
    }))

asyncio.run(main())
"""


def _probe(url: str, sid: str) -> dict[str, object]:
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, url, sid],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


async def test_the_cost_is_derived_from_a_sqlite_log_alone_in_another_process(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    log = await open_log(url)
    try:
        async with serve(_retried_bodies()) as (server, _):
            sid = await _retried_session(log, server, "deepseek-v4-pro")
    finally:
        await log.close()
    reopened = await open_log(url)
    try:
        fresh = (await TokenMeter.from_log(reopened, sid)).report()
        assert fresh.cost == RETRIED_TOTAL and dict(fresh.calls_cost) == RETRIED_CALLS
        exported = tmp_path / "session.jsonl"
        await export_session(reopened, sid, exported)
    finally:
        await reopened.close()
    other = _probe(url, sid)  # no adapter, no catalog: only the log
    assert isinstance(other["cost"], str) and Decimal(other["cost"]) == RETRIED_TOTAL
    calls = other["calls"]
    assert isinstance(calls, dict)
    assert {k: Decimal(v) for k, v in calls.items()} == {
        "1.1.1": Decimal("0.000032335"),
        "1.1.2": Decimal("0.000081635"),
        "1.2.1": Decimal("0.00019836"),
        "2.1.1": Decimal("0.0000261"),
    }
    assert other["adapters"] == []
    # an exported session keeps its prices: imported elsewhere, the same cost
    target = await open_log(f"sqlite:///{tmp_path / 'imported.db'}")
    try:
        copied = await import_session(target, exported)
        assert (await TokenMeter.from_log(target, copied)).report().cost == RETRIED_TOTAL
    finally:
        await target.close()


async def test_an_old_log_without_prices_has_no_cost(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    log = await open_log(url)
    try:
        # what `request/context` looked like before prices were logged, and a priced usage
        old = RequestContext("deepseek", "deepseek-v4-pro", 1_000_000)
        assert msgspec.json.encode(old) == (
            b'{"provider":"deepseek","model":"deepseek-v4-pro","context_window":1000000}'
        )
        await log.append_many(
            "old",
            [
                TurnStart(1),
                StepStart(1, 1),
                old,
                AssistantChunk(1, 1, 1, UsageChunk(TokenUsage(100, 10))),
            ],
        )
    finally:
        await log.close()
    assert _probe(url, "old") == {"cost": None, "calls": {"1.1.1": None}, "adapters": []}
