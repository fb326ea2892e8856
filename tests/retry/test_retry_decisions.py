"""Spec C.1–C.5 and G.8 `retry.spec` 1–16, 27, 28: what the retry plugin decides and records."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import msgspec
import pytest
from retry_helpers import (
    Downstream,
    Rig,
    ScriptedAdapter,
    check_invariants,
    fail,
    make_rig,
    of_type,
    policy,
    text,
    types,
)

from modelwire.agent import Tool
from modelwire.agent.hooks import RequestHookContext
from modelwire.errors import ErrorCode, HarnessError, LlmError
from modelwire.policy import policy_key
from modelwire.retry import RetryPlugin
from modelwire.session import LlmRetry, LlmRetryStarted, StepStart, event_types
from modelwire.session.events import encode_event_data
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    CallConfig,
    Error,
    Finish,
    LlmFailure,
    ModelSource,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
)

SID = "s1"


def test_g8_01_retry_payload_is_one_shared_event_schema() -> None:
    assert event_types()["llm/retry"] is LlmRetry
    assert event_types()["llm/retry-started"] is LlmRetryStarted
    record = LlmRetry(
        retry_id="r1",
        turn=1,
        step=1,
        provider="p",
        policy_key='["always",1,4,0.1]',
        mode="always",
        failure=LlmFailure("x", "AUTH"),
        retry=3,
        delay_ms=4,
    )
    name, raw = encode_event_data(SID, record)
    assert name == "llm/retry"
    assert "max_retries" not in json.loads(raw)  # always mode: UIs render the budget as ∞
    assert msgspec.json.decode(raw, type=LlmRetry) == record


async def test_g8_02_rate_limit_record_delay_and_recovery() -> None:
    rig = make_rig(policy(max_retries=2, retryable_codes=["SERVER", "RATE_LIMIT"], jitter=0))
    rig.adapter.queue(fail("RATE_LIMIT", "slow down", status=429), text("done"))
    result = await rig.agent(plugin=rig.plugin(0.5)).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    events = await rig.log.read(SID)
    (record,) = of_type(events, "llm/retry")
    assert msgspec.structs.asdict(record) == {
        "retry_id": record.retry_id,
        "turn": 1,
        "step": 1,
        "provider": "mock",
        "policy_key": '["normal",2,["RATE_LIMIT","SERVER"],500,10000,0]',
        "mode": "normal",
        "failure": LlmFailure("slow down", "RATE_LIMIT", status=429),
        "retry": 1,
        "max_retries": 2,
        "delay_ms": 500,
    }
    assert record.retry_id
    assert rig.sleep.delays == [0.5]
    assert rig.sleep.requests_seen == [1]  # no second request before the 500 ms wait
    assert of_type(events, "step/start") == [StepStart(1, 1)]
    (message,) = of_type(events, "assistant/message")
    assert message.message.content == (TextBlock("done"),)
    assert message.message.source == ModelSource("mock", "m1")
    (started,) = of_type(events, "llm/retry-started")
    assert started == LlmRetryStarted(retry_id=record.retry_id, turn=1, step=1, retry=1)
    order = types(events)
    assert order.index("llm/retry") < order.index("llm/retry-started")
    check_invariants(events)


async def test_g8_03_empty_response_is_retried_under_the_default_codes() -> None:
    rig = make_rig()  # no provider policy: the route gets the normal default
    rig.adapter.queue(fail("EMPTY_RESPONSE", "model returned nothing"), text("recovered"))
    result = await rig.agent(plugin=rig.plugin()).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    events = await rig.log.read(SID)
    (message,) = of_type(events, "assistant/message")
    assert (message.turn, message.step, message.attempt) == (1, 1, 2)
    assert message.message.content == (TextBlock("recovered"),)
    check_invariants(events)


async def test_g8_04_partial_output_of_a_failed_attempt_is_logged_but_never_used() -> None:
    rig = make_rig()
    ran: list[object] = []
    tool = Tool("bash", "run", {"type": "object"}, lambda args: ran.append(args) or "ok")
    call = ToolCallBlock("call-1", "bash", '{"cmd":"ls"}')
    rig.adapter.queue(
        [
            BlockStart(0, "text"),
            TextDelta(0, "partial"),
            BlockEnd(0, TextBlock("partial")),
            BlockStart(1, "tool-call"),
            ToolCallDelta(1, "call-1", '{"cmd":"ls"}', name="bash"),
            BlockEnd(1, call),
            LlmError("socket closed", ErrorCode.TRANSPORT),
        ],
        text("final"),
    )
    result = await rig.agent(plugin=rig.plugin(), tools=[tool]).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    events = await rig.log.read(SID)
    retry_seq = next(e.seq for e in events if e.type == "llm/retry")
    failed = [e for e in events if e.type == "assistant/chunk" and e.data.attempt == 1]
    assert len(failed) == 7
    assert all(e.seq < retry_seq for e in failed)
    (message,) = of_type(events, "assistant/message")
    assert not set(message.source_event_seqs) & {e.seq for e in failed}
    assert message.message.content == (TextBlock("final"),)
    assert "tool/call" not in types(events)
    assert ran == []
    check_invariants(events)


async def test_g8_05_jittered_delays_then_budget_exhaustion_ends_with_the_failure() -> None:
    rig = make_rig(policy(max_retries=2))
    rig.adapter.queue(fail("SERVER", "one"), fail("SERVER", "two"), fail("SERVER", "three"))
    result = await rig.agent(plugin=rig.plugin(0, 1)).run_turn(SID, "hi")
    assert rig.sleep.delays_ms == [450, 1100]
    assert result.failure == LlmFailure("three", "SERVER")
    events = await rig.log.read(SID)
    assert [r.retry for r in of_type(events, "llm/retry")] == [1, 2]
    assert len(rig.adapter.requests) == 3
    check_invariants(events)


async def test_g8_06_a_zero_millisecond_delay_is_accepted() -> None:
    rig = make_rig(policy(initial=1, max=1, jitter=1))
    rig.adapter.queue(fail("SERVER"), text("ok"))
    result = await rig.agent(plugin=rig.plugin(0)).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    (record,) = of_type(await rig.log.read(SID), "llm/retry")
    assert record.delay_ms == 0
    assert rig.sleep.delays == [0]


async def test_g8_07_provider_retry_after_within_the_cap_is_used_verbatim() -> None:
    rig = make_rig(policy(jitter=1))
    rig.adapter.queue(fail("RATE_LIMIT", status=429, provider_retry_after_ms=2000), text("ok"))
    result = await rig.agent(plugin=rig.plugin(1)).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    (record,) = of_type(await rig.log.read(SID), "llm/retry")
    assert record.delay_ms == 2000
    assert rig.sleep.delays == [2.0]


async def test_g8_07_provider_retry_after_above_the_cap_delegates_in_normal_mode() -> None:
    rig = make_rig(policy())
    rig.adapter.queue(fail("RATE_LIMIT", status=429, provider_retry_after_ms=10001), text("no"))
    downstream = Downstream()
    agent = rig.agent(plugin=rig.plugin())
    agent.hooks.on_request_error.add(downstream)
    result = await agent.run_turn(SID, "hi")
    assert result.failure is not None and result.failure.code == "RATE_LIMIT"
    assert len(rig.adapter.requests) == 1
    assert len(downstream.calls) == 1
    assert "llm/retry" not in types(await rig.log.read(SID))
    assert rig.sleep.delays == []


@pytest.mark.parametrize("retry_after", [float("nan"), float("inf"), -5.0, 0.0])
async def test_c14_an_unusable_provider_delay_is_ignored(retry_after: float) -> None:
    rig = make_rig(policy(initial=7, max=7, jitter=0))
    failure = LlmFailure("x", "RATE_LIMIT", status=429, provider_retry_after_ms=retry_after)
    rig.adapter.queue([Finish(Error(failure))], text("ok"))
    result = await rig.agent(plugin=rig.plugin()).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    assert rig.sleep.delays_ms == [7]  # local backoff, never the untrusted value


async def test_g8_08_always_mode_ignores_an_over_cap_retry_after() -> None:
    rig = make_rig(policy(mode="always", initial=2, max=4, jitter=0.5))
    rig.adapter.queue(fail("RATE_LIMIT", provider_retry_after_ms=10), text("ok"))
    result = await rig.agent(plugin=rig.plugin(1)).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    (record,) = of_type(await rig.log.read(SID), "llm/retry")
    assert record.delay_ms == 3
    assert record.mode == "always" and record.max_retries is None


async def test_g8_09_a_non_retryable_code_delegates_without_a_timer() -> None:
    rig = make_rig(policy())
    rig.adapter.queue(fail("AUTH", "bad key", status=401))
    downstream = Downstream()
    agent = rig.agent(plugin=rig.plugin())
    agent.hooks.on_request_error.add(downstream)
    result = await agent.run_turn(SID, "hi")
    assert result.failure == LlmFailure("bad key", "AUTH", status=401)
    assert len(downstream.calls) == 1
    assert rig.sleep.delays == []
    assert "llm/retry" not in types(await rig.log.read(SID))


async def test_g8_10_no_serving_registration_delegates_even_with_always_policy() -> None:
    rig = make_rig()
    rig.runtime = type(rig.runtime)()
    registration = rig.runtime.register_adapter(
        ["mock"], ScriptedAdapter(policy=policy(mode="always"))
    )
    registration()  # the route is gone: NO_ADAPTER at dispatch
    downstream = Downstream()
    agent = rig.agent(plugin=rig.plugin())
    agent.hooks.on_request_error.add(downstream)
    result = await agent.run_turn(SID, "hi")
    assert result.failure is not None and result.failure.code == "NO_ADAPTER"
    assert "no adapter registered for provider" in result.failure.message
    (ctx,) = downstream.calls
    assert ctx.retry_policy is None
    assert "llm/retry" not in types(await rig.log.read(SID))


def _two_routes(rig: Rig) -> ScriptedAdapter:
    other = ScriptedAdapter(policy=policy(mode="always", initial=1, max=1, jitter=0))
    rig.runtime.register_adapter(["other"], other)
    return other


async def test_g8_11_the_policy_follows_the_failed_requests_provider() -> None:
    rig = make_rig()  # mock: normal default, AUTH not eligible
    other = _two_routes(rig)
    rig.adapter.queue(fail("AUTH"))
    other.queue(fail("AUTH"), text("ok"))
    plugin = rig.plugin()
    ended = await rig.agent(plugin=plugin).run_turn(SID, "hi")
    assert ended.failure is not None and ended.failure.code == "AUTH"
    retried = await rig.agent(plugin=plugin, provider="other").run_turn("s2", "hi")
    assert retried.reason.kind == "completed"
    (record,) = of_type(await rig.log.read("s2"), "llm/retry")
    assert (record.provider, record.mode) == ("other", "always")


async def test_g8_12_a_rerouted_provider_selects_that_providers_policy() -> None:
    rig = make_rig()
    other = _two_routes(rig)
    other.queue(fail("AUTH"), text("ok"))
    agent = rig.agent(plugin=rig.plugin())

    async def reroute(
        ctx: RequestHookContext, call_next: Callable[[], Awaitable[CallConfig]]
    ) -> CallConfig:
        return CallConfig(provider="other", model="m1")

    agent.hooks.on_request.add(reroute)
    result = await agent.run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    assert rig.adapter.requests == []
    (record,) = of_type(await rig.log.read(SID), "llm/retry")
    assert record.provider == "other" and record.mode == "always"
    check_invariants(await rig.log.read(SID))


async def test_g8_13_switching_provider_after_a_failure_starts_a_new_chain() -> None:
    rig = make_rig()
    other = ScriptedAdapter()
    rig.runtime.register_adapter(["other"], other)
    rig.adapter.queue(fail("SERVER"))
    other.queue(fail("SERVER"), text("ok"))
    agent = rig.agent(plugin=rig.plugin())

    async def switch(
        ctx: RequestHookContext, call_next: Callable[[], Awaitable[CallConfig]]
    ) -> CallConfig:
        return ctx.config if ctx.attempt == 1 else CallConfig(provider="other", model="m1")

    agent.hooks.on_request.add(switch)
    result = await agent.run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    events = await rig.log.read(SID)
    records = of_type(events, "llm/retry")
    assert [(r.provider, r.retry) for r in records] == [("mock", 1), ("other", 1)]
    assert records[0].retry_id != records[1].retry_id
    assert (len(rig.adapter.requests), len(other.requests)) == (1, 2)
    check_invariants(events)


@pytest.mark.parametrize("failure_kind", ["thrown", "in-band"])
async def test_g8_14_the_serving_registrations_policy_is_used_and_a_new_one_restarts(
    failure_kind: str,
) -> None:
    old_policy = policy(mode="always", initial=1, max=1, jitter=0)
    new_policy = policy(mode="always", initial=3, max=3, jitter=0)
    rig = make_rig(old_policy)
    replacement = ScriptedAdapter(policy=new_policy)
    failure: list[object] = (
        [LlmError("down", ErrorCode.SERVER)] if failure_kind == "thrown" else fail("SERVER", "down")
    )
    rig.adapter.queue(failure)  # type: ignore[arg-type]
    replacement.queue(failure, text("ok"))  # type: ignore[arg-type]
    swapped: list[bool] = []

    def swap_route() -> None:  # runs during the first backoff wait
        if not swapped:
            swapped.append(True)
            rig.registration()
            rig.runtime.register_adapter(["mock"], replacement)

    rig.sleep.hook = swap_route
    result = await rig.agent(plugin=rig.plugin()).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    events = await rig.log.read(SID)
    records = of_type(events, "llm/retry")
    assert [(r.retry, r.delay_ms) for r in records] == [(1, 1), (1, 3)]
    assert [r.policy_key for r in records] == [policy_key(old_policy), policy_key(new_policy)]
    assert records[0].retry_id != records[1].retry_id
    assert (len(rig.adapter.requests), len(replacement.requests)) == (1, 2)
    check_invariants(events)


async def test_g8_15_always_mode_is_unbounded() -> None:
    rig = make_rig(policy(mode="always", initial=1, max=4, jitter=0.1))
    rig.adapter.queue(*(fail("AUTH", f"no {i}") for i in range(4)), text("finally"))
    result = await rig.agent(plugin=rig.plugin(1)).run_turn(SID, "hi")
    assert result.reason.kind == "completed" and result.text == "finally"
    assert rig.sleep.delays_ms == [1.1, 2.2, 4, 4]
    events = await rig.log.read(SID)
    records = of_type(events, "llm/retry")
    assert [r.retry for r in records] == [1, 2, 3, 4]
    assert len({r.retry_id for r in records}) == 1
    for event in events:
        if event.type == "llm/retry":
            assert "max_retries" not in json.loads(encode_event_data(SID, event.data)[1])
    check_invariants(events)


async def test_g8_16_error_text_and_partial_output_never_reach_the_retried_request() -> None:
    rig = make_rig()
    rig.adapter.queue(
        [BlockStart(0, "text"), TextDelta(0, "half an ans"), LlmError("secret-diag", "SERVER")],
        text("ok"),
    )
    result = await rig.agent(plugin=rig.plugin()).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    first, second = rig.adapter.requests
    assert first.messages == second.messages
    encoded = msgspec.json.encode(second).decode()
    assert "secret-diag" not in encoded and "half an ans" not in encoded
    (record,) = of_type(await rig.log.read(SID), "llm/retry")
    assert record.failure.message == "secret-diag"


def test_g8_27_a_retry_policy_key_is_refused_with_the_placement_message() -> None:
    with pytest.raises(HarnessError, match="belongs under each provider configuration") as info:
        RetryPlugin(retry_policy={"mode": "always"})
    assert info.value.code == "INVALID_CONFIG"
    with pytest.raises(HarnessError, match="belongs under each provider configuration"):
        RetryPlugin.from_config({"retry_policy": {"mode": "normal"}})


def test_g8_28_any_other_plugin_key_is_refused() -> None:
    with pytest.raises(HarnessError, match='llm-retry: unknown key "retryPolciy"'):
        RetryPlugin.from_config({"retryPolciy": {}})
    with pytest.raises(HarnessError, match='unknown key "max_retries"'):
        RetryPlugin(max_retries=3)
    assert isinstance(RetryPlugin.from_config(None), RetryPlugin)
    assert isinstance(RetryPlugin.from_config({}), RetryPlugin)
