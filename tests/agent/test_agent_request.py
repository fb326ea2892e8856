"""Spec F.3 and G.16 `request-reconstruction`: every request is a pure function of the log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import msgspec
import pytest
from agent_helpers import (
    Hang,
    RetryTimes,
    Rig,
    ScriptedAdapter,
    attempt_groups,
    error_script,
    of_type,
    text_script,
    tool_script,
    types,
)

from modelwire.agent import RequestErrorContext, RequestHookContext, Retry, Tool
from modelwire.agent.request import derive_messages
from modelwire.errors import LlmError
from modelwire.session import AbortCause, EpochHeader, RequestContext, TurnAborted, UserMessage
from modelwire.vocab import (
    AdapterDefaults,
    CallConfig,
    GenerateOptions,
    LlmFailure,
    ModelContext,
    ModelReasoningInfo,
    ReasoningEffortInfo,
    ResolvedModelInfo,
    StreamChunk,
    user_message,
)

SID = "s1"

EFFORTS = ModelReasoningInfo(
    (ReasoningEffortInfo("low", "Low"), ReasoningEffortInfo("high", "High")), "high"
)


def _info(**kwargs: object) -> ResolvedModelInfo:
    return ResolvedModelInfo(provider="x", id="x", name="x", **kwargs)  # type: ignore[arg-type]


async def _headers(rig: Rig) -> list[tuple[str, EpochHeader]]:
    return [(h.reason, h.header) for h in of_type(await rig.log.read(SID), "request/header")]


def _switch_provider_on_turn(
    turn: int, provider: str
) -> Callable[[RequestHookContext, Callable[[], Awaitable[CallConfig]]], Awaitable[CallConfig]]:
    async def listener(
        ctx: RequestHookContext, call_next: Callable[[], Awaitable[CallConfig]]
    ) -> CallConfig:
        config = await call_next()
        if ctx.turn >= turn:
            return CallConfig(provider=provider, model="m2", max_tokens=config.max_tokens)
        return config

    return listener


async def test_g16_25_steps_append_extend_and_requests_are_frozen(rig: Rig) -> None:
    rig.adapter.queue(tool_script("c1", "t", "{}"), text_script("done"))
    tool = Tool("t", "d", {"type": "object"}, lambda a: "r")
    await rig.agent(tools=[tool]).run_turn(SID, "hi")
    first, second = rig.adapter.requests
    assert second.messages[: len(first.messages)] == first.messages
    assert len(second.messages) == len(first.messages) + 2  # assistant call + tool result
    with pytest.raises(AttributeError):
        first.messages = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        first.messages[0].content = ()  # type: ignore[misc]
    assert [r for r, _ in await _headers(rig)] == ["initial"]


async def test_g16_26_a_later_turn_append_extends_the_earlier_one(rig: Rig) -> None:
    rig.adapter.queue(text_script("a"), text_script("b"))
    agent = rig.agent()
    await agent.run_turn(SID, "one")
    await agent.run_turn(SID, "two")
    first, second = rig.adapter.requests
    assert second.messages[:2] == (*first.messages, second.messages[1])
    assert [m.role for m in second.messages] == ["user", "assistant", "user"]


async def test_g16_27_adapter_default_effort_override_and_resume(rig: Rig) -> None:
    rig.adapter.info = _info(reasoning=EFFORTS)
    rig.adapter.queue(*(text_script(str(i)) for i in range(4)))
    agent = rig.agent()
    await agent.run_turn(SID, "one")
    reason, header = (await _headers(rig))[0]
    assert (reason, header.config.reasoning_effort) == ("initial", "high")
    assert header.adapter_defaults == AdapterDefaults(reasoning_effort=True)

    async def low_effort(
        ctx: RequestHookContext, call_next: Callable[[], Awaitable[CallConfig]]
    ) -> CallConfig:
        config = await call_next()
        return msgspec.structs.replace(config, reasoning_effort="low") if ctx.turn == 2 else config

    dispose = agent.hooks.on_request.add(low_effort)
    await agent.run_turn(SID, "two")
    dispose()
    reason, header = (await _headers(rig))[-1]
    assert (reason, header.config.reasoning_effort, header.adapter_defaults) == (
        "change",
        "low",
        None,
    )
    assert rig.adapter.requests[1].reasoning_effort == "low"
    # a fresh loop restores the explicit effort for the same model ...
    await rig.agent().run_turn(SID, "three")
    reason, header = (await _headers(rig))[-1]
    assert (reason, header.config.reasoning_effort) == ("resume", "low")
    # ... but not for another model
    await rig.agent(model="m-other").run_turn(SID, "four")
    reason, header = (await _headers(rig))[-1]
    assert (reason, header.config.model, header.config.reasoning_effort) == (
        "resume",
        "m-other",
        "high",
    )
    assert header.adapter_defaults == AdapterDefaults(reasoning_effort=True)


async def test_g16_28_adapter_max_tokens_default_is_logged_before_dispatch(rig: Rig) -> None:
    rig.adapter.info = _info(default_max_tokens=4096)
    rig.adapter.queue(text_script("ok"))
    await rig.agent().run_turn(SID, "hi")
    events = await rig.log.read(SID)
    (header,) = of_type(events, "request/header")
    assert header.header.config.max_tokens == 4096
    assert header.header.adapter_defaults == AdapterDefaults(max_tokens=True)
    first_chunk = next(e.seq for e in events if e.type == "assistant/chunk")
    header_seq = next(e.seq for e in events if e.type == "request/header")
    assert header_seq < first_chunk
    assert rig.adapter.requests[0].max_tokens == 4096


async def test_g16_29_provider_switch_rematerializes_the_new_default(rig: Rig) -> None:
    rig.adapter.info = _info(default_max_tokens=1000)
    other = ScriptedAdapter(info=_info(default_max_tokens=2000))
    rig.runtime.register_adapter(["other"], other)
    rig.adapter.queue(text_script("a"))
    other.queue(text_script("b"))
    agent = rig.agent()
    agent.hooks.on_request.add(_switch_provider_on_turn(2, "other"))
    await agent.run_turn(SID, "one")
    await agent.run_turn(SID, "two")
    (_, h1), (r2, h2) = await _headers(rig)
    assert (h1.config.max_tokens, h2.config.max_tokens, r2) == (1000, 2000, "change")
    assert h2.adapter_defaults == AdapterDefaults(max_tokens=True)
    assert other.requests[0].max_tokens == 2000


async def test_g16_30_explicit_max_tokens_survives_a_provider_switch(rig: Rig) -> None:
    rig.adapter.info = _info(default_max_tokens=1000)
    other = ScriptedAdapter(info=_info(default_max_tokens=2000))
    rig.runtime.register_adapter(["other"], other)
    rig.adapter.queue(text_script("a"))
    other.queue(text_script("b"))
    agent = rig.agent(max_tokens=77)
    agent.hooks.on_request.add(_switch_provider_on_turn(2, "other"))
    await agent.run_turn(SID, "one")
    await agent.run_turn(SID, "two")
    (_, h1), (_, h2) = await _headers(rig)
    assert (h1.config.max_tokens, h2.config.max_tokens) == (77, 77)
    assert h1.adapter_defaults is None and h2.adapter_defaults is None
    assert other.requests[0].max_tokens == 77


async def test_g16_31_dispatch_stays_on_the_registration_captured_at_prepare(rig: Rig) -> None:
    replacement = ScriptedAdapter(info=_info(context=ModelContext(999)))
    original = ScriptedAdapter(info=_info(context=ModelContext(111)))
    rig.runtime = type(rig.runtime)()
    reg = rig.runtime.register_adapter(["scripted"], original)
    original.queue(text_script("from original"))
    replacement.queue(text_script("from replacement"))
    agent = rig.agent()
    # replace the route while the model lookup of the prepared call is in flight
    real_resolve = original.resolve_model

    async def resolve_then_replace(provider: str, model: str) -> ResolvedModelInfo:
        info = await real_resolve(provider, model)
        reg()
        rig.runtime.register_adapter(["scripted"], replacement)
        return info

    original.resolve_model = resolve_then_replace  # type: ignore[method-assign]
    result = await agent.run_turn(SID, "hi")
    assert result.text == "from original"
    assert replacement.requests == []
    (ctx,) = of_type(await rig.log.read(SID), "request/context")
    assert ctx.context_window == 111


async def test_g16_32_disposing_the_agent_aborts_a_blocked_model_lookup(rig: Rig) -> None:
    hang = Hang()

    async def blocked(provider: str, model: str) -> ResolvedModelInfo:
        hang.reached.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    rig.adapter.resolve_model = blocked  # type: ignore[method-assign]
    agent = rig.agent()
    task = asyncio.create_task(agent.run_turn(SID, "hi"))
    await hang.reached.wait()
    await agent.close()
    with pytest.raises(asyncio.CancelledError):
        await task
    events = await rig.log.read(SID)
    assert "request/header" not in types(events)
    assert rig.adapter.requests == []
    assert of_type(events, "turn/end")[0].reason == TurnAborted(AbortCause("disposed"))


@pytest.mark.parametrize(
    ("error", "failure"),
    [
        (RuntimeError("lookup failed"), LlmFailure("lookup failed", "UNKNOWN")),
        (LlmError("no such model", "UNKNOWN_MODEL"), LlmFailure("no such model", "UNKNOWN_MODEL")),
    ],
    ids=["plain-error", "llm-error"],
)
async def test_g16_33_model_resolution_errors_end_the_turn(
    rig: Rig, error: BaseException, failure: LlmFailure
) -> None:
    rig.adapter.resolve_error = error
    plugin = RetryTimes(3)
    result = await rig.agent(plugins=[plugin]).run_turn(SID, "hi")
    assert result.failure == failure
    assert rig.adapter.requests == []
    assert plugin.calls == []  # F20: never offered to request recovery
    assert "request/header" not in types(await rig.log.read(SID))


async def test_g16_34_a_short_circuiting_middleware_owns_an_unregistered_route(rig: Rig) -> None:
    async def owner(
        options: GenerateOptions, call_next: Callable[..., AsyncIterator[StreamChunk]]
    ) -> AsyncIterator[StreamChunk]:
        if options.provider != "virtual":
            async for chunk in call_next():
                yield chunk
            return
        for chunk in text_script("virtual answer"):
            yield chunk

    rig.runtime.use(owner)
    result = await rig.agent(provider="virtual", model="v1").run_turn(SID, "hi")
    assert result.text == "virtual answer"
    ((reason, header),) = await _headers(rig)
    assert (reason, header.config.provider, header.config.model) == ("initial", "virtual", "v1")


async def test_g16_35_a_log_replacement_changes_messages_without_a_new_header(rig: Rig) -> None:
    rig.adapter.queue(text_script("a"), text_script("b"))
    agent = rig.agent()
    await agent.run_turn(SID, "one")
    note = user_message("a plugin note between turns")
    await rig.log.append(SID, UserMessage(note))
    await agent.run_turn(SID, "two")
    assert note in rig.adapter.requests[1].messages
    assert [r for r, _ in await _headers(rig)] == ["initial"]


async def test_g16_36_a_real_system_change_logs_one_change_header(rig: Rig) -> None:
    rig.adapter.queue(*(text_script(str(i)) for i in range(4)))
    agent = rig.agent(system="v1")
    await agent.run_turn(SID, "a")
    await agent.run_turn(SID, "b")  # identical re-render: nothing
    agent.system = "v2"
    await agent.run_turn(SID, "c")
    await agent.run_turn(SID, "d")
    assert [(r, h.system) for r, h in await _headers(rig)] == [("initial", "v1"), ("change", "v2")]


async def test_the_request_seed_is_frozen_for_the_turn(rig: Rig) -> None:
    """Spec F4: a Step's retries reuse its system prompt and tools; a change takes effect with
    the next turn (the step object's seed is frozen when the turn starts)."""
    rig.adapter.queue(error_script("SERVER"), text_script("a"), text_script("b"))
    agent = rig.agent(system="v1")

    async def change_then_retry(
        ctx: RequestErrorContext, call_next: Callable[[], Awaitable[Retry | None]]
    ) -> Retry:
        agent.system = "v2"
        return Retry()

    dispose = agent.hooks.on_request_error.add(change_then_retry)
    await agent.run_turn(SID, "one")
    dispose()
    await agent.run_turn(SID, "two")
    assert [r.system for r in rig.adapter.requests] == ["v1", "v1", "v2"]
    assert [(r, h.system) for r, h in await _headers(rig)] == [("initial", "v1"), ("change", "v2")]


async def test_g16_37_an_inject_during_on_request_joins_the_next_request_only(rig: Rig) -> None:
    rig.adapter.queue(text_script("a"), text_script("b"))
    agent = rig.agent()
    injected = user_message("by the way")

    async def inject(
        ctx: RequestHookContext, call_next: Callable[[], Awaitable[CallConfig]]
    ) -> CallConfig:
        if ctx.step == 1:
            agent.inject(ctx.session_id, injected)
        return await call_next()

    agent.hooks.on_request.add(inject)
    await agent.run_turn(SID, "hi")
    first, second = rig.adapter.requests
    assert injected not in first.messages
    assert second.messages[-1] == injected


async def test_g16_38_mutating_the_frozen_request_in_middleware_fails_loudly(rig: Rig) -> None:
    rig.adapter.queue(text_script("never"))

    async def mutate(
        options: GenerateOptions, call_next: Callable[..., AsyncIterator[StreamChunk]]
    ) -> AsyncIterator[StreamChunk]:
        options.messages = ()  # type: ignore[misc]
        async for chunk in call_next():
            yield chunk

    rig.runtime.use(mutate)
    result = await rig.agent().run_turn(SID, "hi")
    assert result.reason.kind == "error"
    assert result.failure is not None and result.failure.code == "UNKNOWN"
    assert rig.adapter.requests == []


async def test_g16_39_a_fresh_loop_over_a_seeded_log_resumes_prefix_aligned(rig: Rig) -> None:
    rig.adapter.queue(text_script("a"), text_script("b"))
    await rig.agent().run_turn(SID, "one")
    await rig.agent().run_turn(SID, "two")
    assert [r for r, _ in await _headers(rig)] == ["initial", "resume"]
    first, second = rig.adapter.requests
    assert second.messages[: len(first.messages) + 1][:-1] == first.messages


async def test_g16_40_the_seed_is_frozen_and_a_pass_through_logs_no_change(rig: Rig) -> None:
    rig.adapter.queue(text_script("a"), text_script("b"))
    agent = rig.agent()
    errors: list[Exception] = []

    async def poke(
        ctx: RequestHookContext, call_next: Callable[[], Awaitable[CallConfig]]
    ) -> CallConfig:
        seed = await call_next()
        try:
            seed.model = "hijacked"  # type: ignore[misc]
        except AttributeError as exc:
            errors.append(exc)
        return seed

    agent.hooks.on_request.add(poke)
    await agent.run_turn(SID, "one")
    await agent.run_turn(SID, "two")
    assert len(errors) == 2
    assert [r for r, _ in await _headers(rig)] == ["initial"]


async def test_g16_41_every_request_rebuilds_equal_from_the_log_alone(rig: Rig) -> None:
    rig.adapter.info = _info(default_max_tokens=500, reasoning=EFFORTS)
    rig.adapter.queue(
        tool_script("c1", "t", '{"n":1}', text="calling"),
        error_script("SERVER"),
        text_script("done"),
        text_script("next turn"),
    )
    tool = Tool("t", "d", {"type": "object"}, lambda a: f"got {a['n']}")
    agent = rig.agent(system="sys", tools=[tool], temperature=0.5, plugins=[RetryTimes(1)])
    await agent.run_turn(SID, "one")
    await agent.run_turn(SID, "two")
    events = await rig.log.read(SID)
    groups = attempt_groups(events)
    assert len(groups) == len(rig.adapter.requests) == 4
    for key, request in zip(groups, rig.adapter.requests, strict=True):
        first = next(
            e.seq
            for e in events
            if e.type == "assistant/chunk" and (e.data.turn, e.data.step, e.data.attempt) == key
        )
        before = events[:first]
        assert derive_messages(before) == request.messages
        header = [e.data.header for e in before if e.type == "request/header"][-1]
        cfg = header.config
        assert (cfg.provider, cfg.model, cfg.reasoning_effort, cfg.temperature) == (
            request.provider,
            request.model,
            request.reasoning_effort,
            request.temperature,
        )
        assert (cfg.max_tokens, cfg.stop) == (request.max_tokens, request.stop)
        assert (header.system, header.tools) == (request.system, request.tools)


async def test_g16_42_capacity_is_recorded_once_and_not_on_the_surface(rig: Rig) -> None:
    rig.adapter.info = _info(context=ModelContext(64000))
    rig.adapter.queue(text_script("a"), text_script("b"))
    agent = rig.agent()
    await agent.run_turn(SID, "one")
    await agent.run_turn(SID, "two")
    events = await rig.log.read(SID)
    assert of_type(events, "request/context") == [RequestContext("scripted", "m1", 64000)]
    assert all(m.role != "system" for m in derive_messages(events))
    assert len(rig.adapter.requests[1].messages) == 3


async def test_g16_43_a_route_change_records_a_second_capacity(rig: Rig) -> None:
    rig.adapter.info = _info(context=ModelContext(64000))
    other = ScriptedAdapter(info=_info(context=ModelContext(8000)))
    rig.runtime.register_adapter(["other"], other)
    rig.adapter.queue(text_script("a"))
    other.queue(text_script("b"))
    agent = rig.agent()
    agent.hooks.on_request.add(_switch_provider_on_turn(2, "other"))
    await agent.run_turn(SID, "one")
    await agent.run_turn(SID, "two")
    assert of_type(await rig.log.read(SID), "request/context") == [
        RequestContext("scripted", "m1", 64000),
        RequestContext("other", "m2", 8000),
    ]


async def test_g16_44_a_route_without_capacity_is_recorded_and_deduplicated(rig: Rig) -> None:
    rig.adapter.queue(text_script("a"), text_script("b"))
    agent = rig.agent()
    await agent.run_turn(SID, "one")
    await agent.run_turn(SID, "two")
    (ctx,) = of_type(await rig.log.read(SID), "request/context")
    assert ctx == RequestContext("scripted", "m1")
    assert ctx.context_window is None


async def test_g16_45_a_later_route_without_capacity_clears_the_earlier_one(rig: Rig) -> None:
    rig.adapter.info = _info(context=ModelContext(64000))
    other = ScriptedAdapter()
    rig.runtime.register_adapter(["other"], other)
    rig.adapter.queue(text_script("a"))
    other.queue(text_script("b"))
    agent = rig.agent()
    agent.hooks.on_request.add(_switch_provider_on_turn(2, "other"))
    await agent.run_turn(SID, "one")
    await agent.run_turn(SID, "two")
    contexts = of_type(await rig.log.read(SID), "request/context")
    assert contexts == [RequestContext("scripted", "m1", 64000), RequestContext("other", "m2")]


async def test_f09_a_config_without_provider_ends_the_turn_in_error(rig: Rig) -> None:
    agent = rig.agent()

    async def blank(
        ctx: RequestHookContext, call_next: Callable[[], Awaitable[CallConfig]]
    ) -> CallConfig:
        return CallConfig(provider="", model="m")

    agent.hooks.on_request.add(blank)
    result = await agent.run_turn(SID, "hi")
    assert result.failure is not None and result.failure.code == "INVALID_CONFIG"
    assert rig.adapter.requests == []


async def test_f10_unsupported_effort_is_a_turn_error_without_request(rig: Rig) -> None:
    rig.adapter.info = _info(reasoning=EFFORTS)
    plugin = RetryTimes(2)
    result = await rig.agent(reasoning_effort="extreme", plugins=[plugin]).run_turn(SID, "hi")
    assert result.failure is not None
    assert result.failure.code == "UNSUPPORTED_REASONING_EFFORT"
    assert rig.adapter.requests == [] and plugin.calls == []


async def test_f10_no_adapter_without_owner_fails_in_band_and_is_offered(rig: Rig) -> None:
    offered: list[RequestErrorContext] = []
    agent = rig.agent(provider="nobody")

    async def observe(
        ctx: RequestErrorContext, call_next: Callable[[], Awaitable[Retry | None]]
    ) -> Retry | None:
        offered.append(ctx)
        return None

    agent.hooks.on_request_error.add(observe)
    result = await agent.run_turn(SID, "hi")
    assert result.failure is not None and result.failure.code == "NO_ADAPTER"
    (ctx,) = offered
    assert ctx.retry_policy is None  # no registration served the attempt
    assert ctx.provider == "nobody"
