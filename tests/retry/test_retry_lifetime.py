"""Spec C13, C16–C21 and G.8 `retry.spec` 17–26: downstream-first, cancellation and disposal."""

from __future__ import annotations

import asyncio

import pytest
from retry_helpers import (
    Downstream,
    NextRetry,
    RecordingSleep,
    TraceLog,
    check_invariants,
    fail,
    make_rig,
    of_type,
    other_tasks,
    policy,
    text,
    types,
)

from modelwire.agent import RequestErrorContext, Retry
from modelwire.retry import RetryPlugin
from modelwire.session import AbortCause, MemoryLog, TurnAborted, TurnEnd

SID = "s1"
ALWAYS = {"mode": "always", "initial": 1, "max": 1, "jitter": 0}
LONG = {"initial": 60_000, "max": 60_000, "jitter": 0}


async def _until(condition: asyncio.Event) -> None:
    await asyncio.wait_for(condition.wait(), 5)


async def test_g8_17_a_downstream_retry_wins_in_always_mode() -> None:
    rig = make_rig(policy(**ALWAYS))
    rig.adapter.queue(fail("AUTH"), text("ok"))
    downstream = Downstream(Retry())
    agent = rig.agent(plugin=rig.plugin())
    agent.hooks.on_request_error.add(downstream)
    result = await agent.run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    assert len(rig.adapter.requests) == 2
    assert len(downstream.calls) == 1
    assert "llm/retry" not in types(await rig.log.read(SID))


@pytest.mark.parametrize("how", ["sync-throw", "async-throw"])
async def test_g8_18_a_failing_downstream_listener_falls_back_to_the_always_retry(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    rig = make_rig(policy(**ALWAYS))
    rig.adapter.queue(fail("AUTH"), text("ok"))
    agent = rig.agent(plugin=rig.plugin())
    if how == "sync-throw":

        def sync_listener(ctx: RequestErrorContext, call_next: NextRetry) -> object:
            raise RuntimeError("downstream exploded")

        agent.hooks.on_request_error.add(sync_listener)  # type: ignore[arg-type]
    else:
        agent.hooks.on_request_error.add(Downstream(error=RuntimeError("downstream exploded")))
    result = await agent.run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    (record,) = of_type(await rig.log.read(SID), "llm/retry")
    assert record.mode == "always"
    assert "downstream exploded" in caplog.text


async def test_g8_19_disposing_during_backoff_aborts_and_drains() -> None:
    rig = make_rig(policy(**LONG))
    rig.sleep = RecordingSleep(rig.adapter, real=True)
    rig.adapter.queue(fail("SERVER", "down"), text("never"))
    plugin = rig.plugin()
    agent = rig.agent()
    dispose = plugin.install(agent)
    turn = asyncio.create_task(agent.run_turn(SID, "hi"))
    await _until(rig.sleep.entered)
    await dispose()
    result = await turn
    assert result.failure is not None and result.failure.code == "SERVER"
    assert len(rig.adapter.requests) == 1
    events = await rig.log.read(SID)
    assert len(of_type(events, "step/start")) == 1
    assert "llm/retry-started" not in types(events)
    assert other_tasks() == set()
    check_invariants(events)


async def test_g8_20_disposal_waits_for_a_pending_downstream_recovery() -> None:
    rig = make_rig(policy(**ALWAYS))
    rig.adapter.queue(fail("AUTH"), text("never"))
    plugin = rig.plugin()
    agent = rig.agent()
    dispose = plugin.install(agent)
    downstream = Downstream(Retry())
    downstream.release = asyncio.Event()
    agent.hooks.on_request_error.add(downstream)
    turn = asyncio.create_task(agent.run_turn(SID, "hi"))
    await _until(downstream.entered)
    disposing = asyncio.create_task(dispose())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not disposing.done()  # the delegated recovery is still pending
    downstream.release.set()
    await disposing
    result = await turn
    assert result.failure is not None and result.failure.code == "AUTH"  # the abort wins
    assert len(rig.adapter.requests) == 1
    assert "llm/retry" not in types(await rig.log.read(SID))


async def test_g8_21_turn_cancellation_during_delegated_recovery_ends_aborted() -> None:
    rig = make_rig(policy(**ALWAYS))
    rig.adapter.queue(fail("AUTH"), text("never"))
    plugin = rig.plugin()
    agent = rig.agent()
    dispose = plugin.install(agent)
    downstream = Downstream(Retry())
    downstream.release = asyncio.Event()
    agent.hooks.on_request_error.add(downstream)
    turn = asyncio.create_task(agent.run_turn(SID, "hi"))
    await _until(downstream.entered)
    assert agent.cancel(SID)
    with pytest.raises(asyncio.CancelledError):
        await turn
    await asyncio.wait_for(dispose(), 5)  # nothing left in flight
    events = await rig.log.read(SID)
    assert of_type(events, "turn/end") == [TurnEnd(1, TurnAborted(AbortCause("user")))]
    assert len(rig.adapter.requests) == 1
    assert "llm/retry" not in types(events)


async def test_g8_22_downstream_cancelling_then_returning_retry_does_not_retry() -> None:
    rig = make_rig(policy(**ALWAYS))
    rig.adapter.queue(fail("AUTH"), text("never"))
    downstream = Downstream(Retry())
    downstream.before = lambda ctx: ctx.signal.cancel()
    agent = rig.agent(plugin=rig.plugin())
    agent.hooks.on_request_error.add(downstream)
    result = await agent.run_turn(SID, "hi")
    assert result.reason == TurnAborted(AbortCause("user"))
    assert len(rig.adapter.requests) == 1
    assert "llm/retry" not in types(await rig.log.read(SID))


async def test_g8_23_a_listener_invoked_after_disposal_does_not_enter_downstream() -> None:
    rig = make_rig(policy(**ALWAYS))
    rig.adapter.queue(fail("AUTH"), text("never"))
    plugin = rig.plugin()
    agent = rig.agent()
    disposers: list[object] = []

    async def dispose_first(ctx: RequestErrorContext, call_next: NextRetry) -> Retry | None:
        await plugin.aclose()  # the waterfall already captured the plugin's listener
        return await call_next()

    agent.hooks.on_request_error.add(dispose_first)
    disposers.append(plugin.install(agent))
    downstream = Downstream(Retry())
    agent.hooks.on_request_error.add(downstream)
    result = await agent.run_turn(SID, "hi")
    assert result.failure is not None and result.failure.code == "AUTH"
    assert downstream.calls == []
    assert len(rig.adapter.requests) == 1


@pytest.mark.parametrize("cause", ["user", "parent"])
async def test_g8_24_cancellation_during_backoff_ends_the_turn_aborted(cause: str) -> None:
    rig = make_rig(policy(**LONG))
    rig.sleep = RecordingSleep(rig.adapter, real=True)
    rig.adapter.queue(fail("SERVER"), text("never"))
    agent = rig.agent(plugin=rig.plugin())
    turn = asyncio.create_task(agent.run_turn(SID, "hi"))
    await _until(rig.sleep.entered)
    assert agent.cancel(SID, AbortCause(cause))  # type: ignore[arg-type]
    with pytest.raises(asyncio.CancelledError):
        await turn
    events = await rig.log.read(SID)
    assert len(rig.adapter.requests) == 1
    assert len(of_type(events, "llm/retry")) == 1
    assert "llm/retry-started" not in types(events)
    assert of_type(events, "turn/end") == [TurnEnd(1, TurnAborted(AbortCause(cause)))]  # type: ignore[arg-type]
    assert other_tasks() == set()
    check_invariants(events)


@pytest.mark.parametrize("mode", ["normal", "always"])
async def test_g8_25_an_earlier_listener_cancelling_then_delegating_prevents_a_retry(
    mode: str,
) -> None:
    rig = make_rig(policy(**ALWAYS) if mode == "always" else policy())
    rig.adapter.queue(fail("SERVER"), text("never"))
    agent = rig.agent()

    async def cancel_then_delegate(ctx: RequestErrorContext, call_next: NextRetry) -> Retry | None:
        ctx.signal.cancel()
        return await call_next()

    agent.hooks.on_request_error.add(cancel_then_delegate)
    agent.use(rig.plugin())
    result = await agent.run_turn(SID, "hi")
    assert result.reason == TurnAborted(AbortCause("user"))
    assert "llm/retry" not in types(await rig.log.read(SID))
    assert rig.sleep.delays == []
    assert len(rig.adapter.requests) == 1


async def test_g8_26_cancelling_from_the_retry_record_observer_leaves_no_timer() -> None:
    log = TraceLog(MemoryLog())
    rig = make_rig(policy(), log=log)
    rig.adapter.queue(fail("SERVER"), text("never"))
    agent = rig.agent(plugin=rig.plugin())
    log.on_append = lambda name: name == "llm/retry" and agent.cancel(SID)  # type: ignore[func-returns-value]
    result = await agent.run_turn(SID, "hi")
    assert result.reason == TurnAborted(AbortCause("user"))
    events = await rig.log.read(SID)
    assert len(of_type(events, "llm/retry")) == 1
    assert "llm/retry-started" not in types(events)
    assert rig.sleep.delays == []  # no timer was ever started
    assert len(rig.adapter.requests) == 1
    assert other_tasks() == set()


async def test_c19_agent_close_disposes_the_plugin_and_drains_its_wait() -> None:
    rig = make_rig(policy(**LONG))
    rig.sleep = RecordingSleep(rig.adapter, real=True)
    rig.adapter.queue(fail("SERVER"), text("never"))
    agent = rig.agent(plugin=RetryPlugin(sleep=rig.sleep))
    turn = asyncio.create_task(agent.run_turn(SID, "hi"))
    await _until(rig.sleep.entered)
    await asyncio.wait_for(agent.close(), 5)
    with pytest.raises(asyncio.CancelledError):
        await turn
    events = await rig.log.read(SID)
    assert of_type(events, "turn/end")[-1].reason == TurnAborted(AbortCause("disposed"))
    assert other_tasks() == set()


async def test_c19_a_downstream_listener_disposing_the_plugin_does_not_deadlock() -> None:
    rig = make_rig(policy(**ALWAYS))
    rig.adapter.queue(fail("AUTH"), text("never"))
    plugin = rig.plugin()
    agent = rig.agent()
    plugin.install(agent)

    async def dispose_from_downstream(ctx: RequestErrorContext, call_next: NextRetry) -> Retry:
        await plugin.aclose()  # runs inside the plugin's own active invocation
        return Retry()

    agent.hooks.on_request_error.add(dispose_from_downstream)
    result = await asyncio.wait_for(agent.run_turn(SID, "hi"), 5)
    assert result.failure is not None and result.failure.code == "AUTH"  # the abort wins
    assert len(rig.adapter.requests) == 1
