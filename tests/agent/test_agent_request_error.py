"""Spec F.4 and G.16 `request-error`: the request-error waterfall inside one Step."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agent_helpers import RetryTimes, Rig, error_script, of_type, text_script, types

from modelwire.agent import (
    GiveUp,
    RequestErrorContext,
    RequestErrorWaterfall,
    RequestHookContext,
    Retry,
    TurnSignal,
    Waterfall,
)
from modelwire.policy import NormalRetryPolicy
from modelwire.session import AbortCause, StepStart, TurnAborted
from modelwire.vocab import CallConfig, LlmFailure

SID = "s1"

NextRetry = Callable[[], Awaitable[Retry | None]]


async def test_g16_01_on_request_error_is_not_offered_a_request_hook_failure(rig: Rig) -> None:
    agent = rig.agent()
    plugin = RetryTimes(3)
    agent.use(plugin)

    async def broken(
        ctx: RequestHookContext, call_next: Callable[[], Awaitable[CallConfig]]
    ) -> CallConfig:
        raise RuntimeError("request listener failed")

    agent.hooks.on_request.add(broken)
    result = await agent.run_turn(SID, "hi")
    assert result.failure == LlmFailure("request listener failed", "UNKNOWN")
    assert plugin.calls == []
    assert rig.adapter.requests == []


async def test_g16_02_each_failure_reaches_the_waterfall_at_the_same_step(rig: Rig) -> None:
    rig.adapter.queue(
        error_script("RATE_LIMIT", status=429),
        error_script("SERVICE_UNAVAILABLE", status=503),
        text_script("third time lucky"),
    )
    plugin = RetryTimes(2)
    result = await rig.agent(plugins=[plugin]).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    assert [(c.turn, c.step, c.attempt, c.failure.code) for c in plugin.calls] == [
        (1, 1, 1, "RATE_LIMIT"),
        (1, 1, 2, "SERVICE_UNAVAILABLE"),
    ]
    assert all(isinstance(c.retry_policy, NormalRetryPolicy) for c in plugin.calls)
    events = await rig.log.read(SID)
    assert types(events).count("turn/start") == 1
    assert of_type(events, "step/start") == [StepStart(1, 1)]
    assert len(of_type(events, "assistant/message")) == 1


async def test_g16_03_cancelling_inside_the_waterfall_beats_a_retry(rig: Rig) -> None:
    rig.adapter.queue(error_script("SERVER"), text_script("never"))
    agent = rig.agent()

    async def cancel_and_retry(ctx: RequestErrorContext, call_next: NextRetry) -> Retry | None:
        ctx.signal.cancel()
        return Retry()

    agent.hooks.on_request_error.add(cancel_and_retry)
    result = await agent.run_turn(SID, "hi")
    assert result.reason == TurnAborted(AbortCause("user"))
    assert len(rig.adapter.requests) == 1
    assert "assistant/message" not in types(await rig.log.read(SID))


async def test_g16_04_a_throwing_recovery_listener_means_no_retry_and_an_error(rig: Rig) -> None:
    rig.adapter.queue(error_script("SERVER"), text_script("never"))
    agent = rig.agent()

    async def throws(ctx: RequestErrorContext, call_next: NextRetry) -> Retry | None:
        raise ValueError("recovery crashed")

    agent.hooks.on_request_error.add(throws)
    result = await agent.run_turn(SID, "hi")
    assert result.reason.kind == "error"
    assert result.failure == LlmFailure("recovery crashed", "UNKNOWN")
    assert len(rig.adapter.requests) == 1


async def test_f15_the_payload_names_the_attempt_the_session_and_the_policy(rig: Rig) -> None:
    failure = LlmFailure("busy", "SERVER", status=500, request_id="r-1")
    rig.adapter.queue(error_script("SERVER", "busy", status=500, request_id="r-1"))
    plugin = RetryTimes(0)
    result = await rig.agent(plugins=[plugin]).run_turn(SID, "hi")
    (ctx,) = plugin.calls
    assert (ctx.session_id, ctx.turn, ctx.step, ctx.attempt) == (SID, 1, 1, 1)
    assert (ctx.provider, ctx.failure) == ("scripted", failure)
    assert ctx.log is rig.log
    assert ctx.retry_policy == rig.runtime.provider_retry_policy("scripted")
    assert not ctx.signal.cancelled
    assert result.failure == failure


async def test_f16_first_registered_runs_first_and_reaches_later_ones(rig: Rig) -> None:
    rig.adapter.queue(error_script("SERVER"), text_script("ok"))
    agent = rig.agent()
    order: list[str] = []

    async def outer(ctx: RequestErrorContext, call_next: NextRetry) -> Retry | None:
        order.append("outer-before")
        decision = await call_next()  # downstream first
        order.append(f"outer-after:{decision is not None}")
        return decision

    async def inner(ctx: RequestErrorContext, call_next: NextRetry) -> Retry | None:
        order.append("inner")
        return Retry()

    agent.hooks.on_request_error.add(outer)
    agent.hooks.on_request_error.add(inner)
    result = await agent.run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    assert order == ["outer-before", "inner", "outer-after:True"]


async def test_f16_waterfall_default_and_disposal() -> None:
    chain: Waterfall[int, str] = Waterfall("test", lambda n: f"default:{n}")
    assert await chain.run(1) == "default:1"

    async def double(n: int, call_next: Callable[[], Awaitable[str]]) -> str:
        return "x2:" + await call_next()

    async def own(n: int, call_next: Callable[[], Awaitable[str]]) -> str:
        return "owned"

    dispose_double = chain.add(double)
    dispose_own = chain.add(own)
    assert await chain.run(2) == "x2:owned"
    dispose_own()
    assert await chain.run(3) == "x2:default:3"
    dispose_double()
    dispose_double()  # idempotent
    assert len(chain) == 0


async def test_f18_a_listener_returning_none_ends_the_turn_with_the_failure(rig: Rig) -> None:
    rig.adapter.queue(error_script("QUOTA", "out of credit", status=402))
    result = await rig.agent().run_turn(SID, "hi")
    assert result.failure == LlmFailure("out of credit", "QUOTA", status=402)
    end = of_type(await rig.log.read(SID), "turn/end")[0]
    assert end.reason.failure == result.failure


# ---- the decision: Retry() | GiveUp(), None = "no decision" ---------------------------------


def _failed_attempt(rig: Rig) -> RequestErrorContext:
    return RequestErrorContext(
        agent=rig.agent(),
        session_id=SID,
        log=rig.log,
        turn=1,
        step=1,
        attempt=1,
        provider="scripted",
        failure=LlmFailure("down", "SERVER"),
        retry_policy=None,
        signal=TurnSignal(None),
    )


async def test_request_error_waterfall_result_is_an_explicit_decision(rig: Rig) -> None:
    chain = RequestErrorWaterfall("agent/request-error")
    ctx = _failed_attempt(rig)
    assert await chain.run(ctx) == GiveUp()  # nobody listening: give up

    async def undecided(ctx: RequestErrorContext, call_next: NextRetry) -> Retry | None:
        return None

    dispose = chain.add(undecided)
    assert await chain.run(ctx) == GiveUp()  # nobody deciding: give up

    async def retry(ctx: RequestErrorContext, call_next: NextRetry) -> Retry:
        return Retry()

    chain.add(retry)
    assert await chain.run(ctx) == Retry()
    dispose()
    assert len(chain) == 1 and await chain.run(ctx) == Retry()
    assert (Retry.kind, GiveUp.kind) == ("retry", "give-up")


async def test_request_error_hook_giving_up_stops_the_chain(rig: Rig) -> None:
    rig.adapter.queue(error_script("SERVER", "down"), text_script("never"))
    agent = rig.agent()

    async def give_up(ctx: RequestErrorContext, call_next: NextRetry) -> GiveUp:
        return GiveUp()

    agent.hooks.on_request_error.add(give_up)
    later = RetryTimes(1)
    agent.use(later)
    result = await agent.run_turn(SID, "hi")
    assert result.failure == LlmFailure("down", "SERVER")
    assert later.calls == []  # a later listener is never asked
    assert len(rig.adapter.requests) == 1


async def test_request_error_listener_returning_none_lets_the_later_listeners_decide(
    rig: Rig,
) -> None:
    rig.adapter.queue(error_script("SERVER"), text_script("ok"))
    agent = rig.agent()
    seen: list[int] = []

    async def undecided(ctx: RequestErrorContext, call_next: NextRetry) -> None:
        seen.append(ctx.attempt)  # an observer that never calls call_next()

    agent.hooks.on_request_error.add(undecided)
    later = RetryTimes(1)
    agent.use(later)
    result = await agent.run_turn(SID, "hi")
    assert (result.reason.kind, result.text) == ("completed", "ok")
    assert seen == [1] and len(later.calls) == 1
    assert len(rig.adapter.requests) == 2


async def test_request_error_call_next_runs_the_rest_of_the_chain_once(rig: Rig) -> None:
    rig.adapter.queue(error_script("SERVER"), text_script("ok"))
    agent = rig.agent()
    answers: list[Retry | None] = []

    async def asks_twice_then_abstains(
        ctx: RequestErrorContext, call_next: NextRetry
    ) -> Retry | None:
        answers.append(await call_next())
        answers.append(await call_next())
        return None  # no decision of its own: the later listeners' Retry() stands

    agent.hooks.on_request_error.add(asks_twice_then_abstains)
    later = RetryTimes(1)
    agent.use(later)
    result = await agent.run_turn(SID, "hi")
    assert result.text == "ok"
    assert answers == [Retry(), Retry()]
    assert len(later.calls) == 1  # asked once, not once per call_next()
    assert len(rig.adapter.requests) == 2


async def test_request_error_call_next_answers_none_when_the_rest_gives_up(rig: Rig) -> None:
    rig.adapter.queue(error_script("AUTH", "bad key", status=401))
    agent = rig.agent()
    answers: list[Retry | None] = []

    async def outer(ctx: RequestErrorContext, call_next: NextRetry) -> None:
        answers.append(await call_next())

    async def refuse(ctx: RequestErrorContext, call_next: NextRetry) -> GiveUp:
        return GiveUp()

    agent.hooks.on_request_error.add(outer)
    agent.hooks.on_request_error.add(refuse)
    result = await agent.run_turn(SID, "hi")
    assert answers == [None]  # what listeners written before GiveUp expect
    assert result.failure == LlmFailure("bad key", "AUTH", status=401)
    assert len(rig.adapter.requests) == 1


async def test_request_error_an_outer_retry_overrides_a_later_give_up(rig: Rig) -> None:
    rig.adapter.queue(error_script("SERVER"), text_script("ok"))
    agent = rig.agent()

    async def outer(ctx: RequestErrorContext, call_next: NextRetry) -> Retry:
        assert await call_next() is None
        return Retry()

    async def refuse(ctx: RequestErrorContext, call_next: NextRetry) -> GiveUp:
        return GiveUp()

    agent.hooks.on_request_error.add(outer)
    agent.hooks.on_request_error.add(refuse)
    result = await agent.run_turn(SID, "hi")
    assert (result.reason.kind, result.text) == ("completed", "ok")
    assert len(rig.adapter.requests) == 2
