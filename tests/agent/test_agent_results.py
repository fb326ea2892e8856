"""What a turn hands back (issue 30): `raise_for_failure()` on `TurnResult` and `GenerateResult`,
the turn's `usage` and `cost` (the meter's figures, failed attempts included, resumed turns too),
and `Agent.stream_turn` — the turn's chunks in an `async for`, then its result."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest
from agent_helpers import (
    Hang,
    RetryTimes,
    Rig,
    error_script,
    of_type,
    text_script,
    tool_script,
)
from test_agent_resume import SID, _after, _dead, _is

import modelwire as mw
from modelwire.agent import Agent, Block, RunContext, TurnStream
from modelwire.errors import HarnessError, LlmError, RateLimitError, TurnLimitError
from modelwire.meter import TokenMeter
from modelwire.vocab import (
    Error,
    Finish,
    LlmFailure,
    MaxTokens,
    ModelPricing,
    ResolvedModelInfo,
    StreamChunk,
    TextDelta,
    TokenUsage,
    UsageChunk,
)

PRICES = ModelPricing(input=Decimal("2"), output=Decimal("8"), cache_read=Decimal("0.5"))


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _tool_call_with_usage(arguments: str, usage: TokenUsage) -> list[StreamChunk]:
    *chunks, finish = tool_script("c1", "add", arguments)
    return [*chunks, UsageChunk(usage), finish]


def _priced(rig: Rig) -> None:
    rig.adapter.info = ResolvedModelInfo(provider="scripted", id="m1", name="m1", pricing=PRICES)


# ---- raise_for_failure -------------------------------------------------------------------------


async def test_a_completed_turn_returns_itself_from_raise_for_failure(rig: Rig) -> None:
    rig.adapter.queue(text_script("hi"))
    result = await rig.agent().run_turn("ok", "hello")
    assert result.raise_for_failure() is result and result.output == "hi"


async def test_a_failed_turn_raises_the_category_of_its_code(rig: Rig) -> None:
    rig.adapter.queue(error_script("RATE_LIMIT", "slow down", status=429))
    result = await rig.agent().run_turn("limited", "hello")
    with pytest.raises(RateLimitError) as info:
        result.raise_for_failure()
    assert (info.value.code, info.value.status, info.value.message) == (
        "RATE_LIMIT",
        429,
        "slow down",
    )


async def test_a_cut_off_answer_raises_a_turn_limit_error(rig: Rig) -> None:
    rig.adapter.queue(text_script("partial", reason=MaxTokens()))
    result = await rig.agent().run_turn("cut", "hello")
    assert (result.reason.kind, result.output) == ("max-tokens", None)
    with pytest.raises(TurnLimitError, match="output-token limit") as info:
        result.raise_for_failure()
    assert info.value.code == "TURN_LIMIT" and isinstance(info.value, mw.LlmError)


async def test_a_blocked_and_a_cancelled_turn_raise_with_their_codes(rig: Rig) -> None:
    agent = rig.agent()

    async def block(ctx: object, call_next: object) -> Block:
        return Block()

    agent.hooks.on_pre_step.add(block)
    blocked = await agent.run_turn("blocked", "hello")
    with pytest.raises(LlmError) as info:
        blocked.raise_for_failure()
    assert info.value.code == "TURN_BLOCKED"

    async def stop(ctx: RunContext) -> str:
        ctx.signal.cancel("user", "the tool gave up")
        return "stopping"

    rig.adapter.queue(tool_script("c1", "stop", "{}"), text_script("never"))
    cancelled = await rig.agent(tools=[stop]).run_turn("cancelled", "hello")
    with pytest.raises(LlmError, match=r"cancelled \(user: the tool gave up\)") as info:
        cancelled.raise_for_failure()
    assert info.value.code == "ABORTED"


async def test_generate_results_raise_their_failure_and_return_themselves_otherwise(
    rig: Rig,
) -> None:
    rig.adapter.queue(
        error_script("MISSING_CREDENTIAL", "SCRIPTED_KEY is not set"), text_script("ok")
    )
    ask = mw.GenerateOptions("scripted", "m1", (mw.user_message("hi"),))
    failed = await rig.runtime.generate(ask)
    assert failed.failure == LlmFailure("SCRIPTED_KEY is not set", "MISSING_CREDENTIAL")
    with pytest.raises(mw.AuthError, match="SCRIPTED_KEY"):
        failed.raise_for_failure()
    done = await rig.runtime.generate(ask)
    assert done.raise_for_failure() is done and done.failure is None


# ---- usage and cost ----------------------------------------------------------------------------


async def test_usage_and_cost_are_the_meters_figures_for_the_turn_failed_attempt_included(
    rig: Rig,
) -> None:
    _priced(rig)
    failed = [UsageChunk(TokenUsage(40, 2)), Finish(Error(LlmFailure("busy", "SERVER")))]
    rig.adapter.queue(
        text_script("first", usage=TokenUsage(10, 1)),  # turn 1: not counted in turn 2
        failed,
        _tool_call_with_usage('{"a": 2, "b": 40}', TokenUsage(100, 10)),
        text_script("42", usage=TokenUsage(120, 5, cache_read_tokens=30)),
    )
    agent = rig.agent(tools=[add], plugins=[RetryTimes(1)])
    await agent.run_turn("costs", "warm up")
    result = await agent.run_turn("costs", "2 + 40?")
    report = TokenMeter.project(await rig.log.read("costs"))
    assert result.usage == report.turns[2] == TokenUsage(260, 17, 30, 0, 0)
    assert result.cost == report.turns_cost[2]
    expected = (Decimal(260) * 2 + Decimal(17) * 8 + Decimal(30) * Decimal("0.5")) / 10**6
    assert result.cost == expected


async def test_an_unpriced_turn_has_usage_and_no_cost(rig: Rig) -> None:
    rig.adapter.queue(text_script("hi", usage=TokenUsage(7, 3)))
    result = await rig.agent().run_turn("unpriced", "hello")
    assert (result.usage.total_tokens, result.cost) == (10, None)


async def test_a_turn_without_calls_reports_zero_usage(rig: Rig) -> None:
    result = await rig.agent().run_turn("empty", None)
    assert (result.usage, result.cost) == (TokenUsage(0, 0, 0, 0, 0), None)


async def test_a_resumed_turn_counts_the_calls_the_dead_process_made(rig: Rig) -> None:
    _priced(rig)
    rig.adapter.queue(
        _tool_call_with_usage('{"a": 1, "b": 2}', TokenUsage(50, 5)),
        text_script("3", usage=TokenUsage(60, 2)),
    )
    await rig.agent(tools=[add]).run_turn("source", "1 + 2?")
    events = await rig.log.read("source")
    keep = _after(events, _is("step/end"), nth=1)  # died after its first step
    dead = await _dead(events, keep)
    rig.adapter.queue(text_script("3", usage=TokenUsage(60, 2)))
    resumed = await Agent(rig.runtime, dead, "scripted", "m1", tools=[add]).resume_turn(SID)
    report = TokenMeter.project(await dead.read(SID))
    assert resumed.usage == report.turns[1] == TokenUsage(110, 7, 0, 0, 0)
    assert resumed.cost == report.turns_cost[1] is not None


# ---- streaming ---------------------------------------------------------------------------------


async def test_stream_turn_yields_every_attempts_chunks_then_gives_the_result(rig: Rig) -> None:
    rig.adapter.queue(
        [*text_script("no")[:-1], Finish(Error(LlmFailure("busy", "SERVER")))],
        text_script("yes"),
    )
    agent = rig.agent(plugins=[RetryTimes(1)])
    stream = agent.stream_turn("streamed", "hello")
    assert isinstance(stream, TurnStream)
    chunks = [chunk async for chunk in stream]
    finishes = [c.reason.kind for c in chunks if isinstance(c, Finish)]
    assert finishes == ["error", "stop"]  # the failed attempt, then the retry
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "noyes"
    result = await stream
    assert (result.reason.kind, result.output) == ("completed", "yes")
    logged = [e.data.chunk for e in await rig.log.read("streamed") if e.type == "assistant/chunk"]
    assert logged == chunks  # what streamed is what the log holds


async def test_stream_turn_text_yields_the_answer_and_runs_tools_between_steps(
    rig: Rig,
) -> None:
    rig.adapter.queue(tool_script("c1", "add", '{"a": 2, "b": 40}'), text_script("42"))
    stream = rig.agent(tools=[add]).stream_turn("texts", "2 + 40?")
    assert [piece async for piece in stream.text()] == ["4", "2"]
    result = await stream
    assert result.output == "42" and len(of_type(await rig.log.read("texts"), "tool/result")) == 1


async def test_a_stream_left_early_runs_on_and_awaiting_it_gives_the_result(rig: Rig) -> None:
    rig.adapter.queue(text_script("long answer"))
    stream = rig.agent().stream_turn("left", "hello")
    async for _ in stream:
        break
    assert (await stream).output == "long answer"
    with pytest.raises(HarnessError, match="iterated once"):
        async for _ in stream:
            pass


async def test_cancelling_the_iterating_task_cancels_the_turn(rig: Rig) -> None:
    hang = Hang()
    rig.adapter.queue([*text_script("x")[:2], hang])
    stream = rig.agent().stream_turn("gone", "hello")

    async def consume() -> None:
        async for _ in stream:
            pass

    task = asyncio.ensure_future(consume())
    await hang.reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(asyncio.CancelledError):
        await stream
    ends = of_type(await rig.log.read("gone"), "turn/end")
    assert [end.reason.kind for end in ends] == ["aborted"]
