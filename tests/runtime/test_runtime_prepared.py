"""Prepared calls, middleware routing and replay filtering: spec §11.12 SVC-48..52, 69..73."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import msgspec
import pytest
from runtime_helpers import (
    SCRIPT,
    BlockingResolveAdapter,
    CatalogAdapter,
    ScriptedAdapter,
    collect,
    opts,
    reasoning,
)

from modelwire.errors import LlmError
from modelwire.runtime import CallNext, LlmAdapter, LlmRuntime
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    CallConfig,
    Error,
    Finish,
    GenerateOptions,
    LlmFailure,
    ModelContext,
    ModelSource,
    ReasoningEffortInfo,
    ReplayEnvelope,
    ResolvedModelInfo,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    assistant_message,
    user_message,
)

STANDARD = ReasoningEffortInfo("standard", "Standard")
HIGH = ReasoningEffortInfo("high", "High")


async def test_svc_48_middleware_reroute_resolves_the_routed_model(rt: LlmRuntime) -> None:
    """JS mutation of a hand-built request → `call_next(msgspec.structs.replace(...))`."""
    routed = CatalogAdapter(reasoning={"m": reasoning(STANDARD, default="standard")})
    rt.register_adapter(["initial"], ScriptedAdapter())
    rt.register_adapter(["routed"], routed)

    async def reroute(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        async for chunk in call_next(msgspec.structs.replace(options, provider="routed")):
            yield chunk

    remove = rt.use(reroute)
    await collect(rt.stream(opts("initial")))
    assert routed.received is not None and routed.received.reasoning_effort == "standard"
    remove()
    frozen = opts("routed")
    await collect(rt.stream(frozen))
    received = routed.received
    assert received is not frozen and received.reasoning_effort == "standard"
    with pytest.raises(AttributeError):
        received.model = "other"  # type: ignore[misc]


async def test_svc_49_route_captured_before_resolution_serves_the_call(rt: LlmRuntime) -> None:
    first = BlockingResolveAdapter(reasoning(HIGH, default="high"))
    second = ScriptedAdapter()
    reg = rt.register_adapter(["p"], first)
    task = asyncio.create_task(collect(rt.stream(opts())))
    await first.started.wait()
    reg()
    rt.register_adapter(["p"], second)
    first.release.set()
    assert await task == list(SCRIPT)
    assert first.received is not None and first.received.reasoning_effort == "high"
    assert second.calls == 0


async def test_svc_50_prepared_call_is_one_shot_and_refuses_drift(rt: LlmRuntime) -> None:
    rt.register_adapter(
        ["p"], CatalogAdapter(reasoning={"m": reasoning(STANDARD, default="standard")})
    )
    prepared = await rt.prepare_call(CallConfig(provider="p", model="m"))
    with pytest.raises(AttributeError):
        prepared.config.model = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        prepared.adapter_defaults.max_tokens = True  # type: ignore[misc]
    assert prepared.adapter_defaults == msgspec.convert(
        {"reasoning_effort": True}, type(prepared.adapter_defaults)
    )
    with pytest.raises(LlmError) as drift:
        prepared.stream(opts(model="other", reasoning_effort="standard"))
    assert drift.value.code == "INVALID_PREPARED_CALL"
    matching = opts(reasoning_effort="standard")
    assert await collect(prepared.stream(matching)) == list(SCRIPT)
    with pytest.raises(LlmError, match="only be dispatched once") as again:
        prepared.stream(matching)
    assert again.value.code == "INVALID_PREPARED_CALL"

    # Frozen options cannot change after stream() returned; the Python way a prepared call's
    # config changes late is a middleware re-routing it, which is refused in-band.
    async def reroute(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        async for chunk in call_next(msgspec.structs.replace(options, model="other")):
            yield chunk

    rt.use(reroute)
    late = await rt.prepare_call(CallConfig(provider="p", model="m"))
    assert await collect(late.stream(matching)) == [
        Finish(
            Error(
                LlmFailure(
                    "prepared LLM call config changed before adapter dispatch",
                    "INVALID_PREPARED_CALL",
                )
            )
        )
    ]


class _ContextSource(CatalogAdapter):
    """One mutable context value shared by every model (the upstream context source object)."""

    def __init__(self) -> None:
        super().__init__()
        self.window = 128000

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        self.lookups += 1
        default = None if model == "no-default" else "high"
        return ResolvedModelInfo(
            provider=provider,
            id=model,
            name=model,
            context=ModelContext(self.window),
            reasoning=reasoning(HIGH, default=default),
        )


async def test_svc_51_prepared_call_uses_one_lookup_and_freezes_context(rt: LlmRuntime) -> None:
    adapter = _ContextSource()
    rt.register_adapter(["p"], adapter)
    prepared = await rt.prepare_call(CallConfig(provider="p", model="m"))
    assert prepared.config == CallConfig(provider="p", model="m", reasoning_effort="high")
    adapter.window = 64000
    assert prepared.context == ModelContext(128000)
    await collect(prepared.stream(opts(reasoning_effort="high")))
    assert adapter.lookups == 1
    bare = await rt.prepare_call(CallConfig(provider="p", model="no-default"))
    assert bare.config == CallConfig(provider="p", model="no-default")
    assert bare.context == ModelContext(64000)
    assert adapter.lookups == 2


async def test_svc_52_resolution_failure_and_cancellation_propagate_unchanged(
    rt: LlmRuntime,
) -> None:
    """AbortSignal → task cancellation: the adapter's rejection is the same object the caller
    sees, and cancelling the caller's task cancels the adapter's pending resolution."""
    reason = RuntimeError("aborted by caller")

    class Rejects(CatalogAdapter):
        def __init__(self) -> None:
            super().__init__()
            self.started = asyncio.Event()
            self.cancelled = False

        async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
            if model == "reject":
                raise reason
            self.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
            raise AssertionError("unreachable")

    adapter = Rejects()
    rt.register_adapter(["p"], adapter)
    with pytest.raises(RuntimeError) as caught:
        await rt.resolve_call_config(CallConfig(provider="p", model="reject"))
    assert caught.value is reason
    task = asyncio.create_task(rt.resolve_call_config(CallConfig(provider="p", model="wait")))
    await adapter.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert adapter.cancelled


async def test_svc_69_middleware_prepends_chunks(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter())

    async def prefix(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        yield BlockStart(99, "text")
        yield BlockEnd(99, TextBlock("cached"))
        async for chunk in call_next():
            yield chunk

    rt.use(prefix)
    chunks = await collect(rt.stream(opts()))
    assert len(chunks) == 6 and chunks[0] == BlockStart(99, "text")


async def test_svc_70_lookup_happens_after_middleware(rt: LlmRuntime) -> None:
    routed = ScriptedAdapter()
    rt.register_adapter(["routed"], routed)

    async def reroute(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        async for chunk in call_next(msgspec.structs.replace(options, provider="routed")):
            yield chunk

    rt.use(reroute)
    await collect(rt.stream(opts("unregistered")))
    assert routed.received is not None and routed.received.provider == "routed"


def _historical() -> GenerateOptions:
    envelope = ReplayEnvelope({"response_id": "r1"})
    message = assistant_message(
        [TextBlock("earlier")], ModelSource("historical", "old-model", envelope)
    )
    return opts("target", messages=[message])


async def test_svc_71_same_instance_keeps_replay_state(rt: LlmRuntime) -> None:
    adapter = ScriptedAdapter()
    rt.register_adapter(["historical"], adapter)
    rt.register_adapter(["target"], adapter)
    options = _historical()
    await collect(rt.stream(options))
    assert adapter.received is options
    assert adapter.received.messages[0] is options.messages[0]


async def test_svc_72_other_instance_strips_replay_state(rt: LlmRuntime) -> None:
    target = ScriptedAdapter()
    rt.register_adapter(["historical"], ScriptedAdapter())
    rt.register_adapter(["target"], target)
    await collect(rt.stream(_historical()))
    assert target.received is not None
    assert target.received.messages[0].source == ModelSource("historical", "old-model")


async def test_svc_73_stripped_request_is_a_new_frozen_object(rt: LlmRuntime) -> None:
    target = ScriptedAdapter()
    rt.register_adapter(["target"], target)  # the historical route is not registered at all
    options = _historical()
    await collect(rt.stream(options))
    received = target.received
    assert received is not None and received is not options
    stripped = received.messages[0]
    assert stripped.id == options.messages[0].id and stripped.content == options.messages[0].content
    assert stripped.source == ModelSource("historical", "old-model")
    with pytest.raises(AttributeError):
        received.messages = ()  # type: ignore[misc]


# ---- a prepared call pins the configuration generation it was prepared against ------------


class _Generations(LlmAdapter):
    """An adapter whose configuration is swapped at run time (as `update_config` does): each
    generation offers its own reasoning efforts and answers with its own name."""

    def __init__(self) -> None:
        self.current = {"name": "A", "efforts": ("high",)}

    def pinned(self) -> LlmAdapter:
        return _Pinned(dict(self.current))

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        return _Pinned(dict(self.current)).info(provider, model)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        async for chunk in _Pinned(dict(self.current)).stream(options):
            yield chunk


class _Pinned(LlmAdapter):
    def __init__(self, generation: dict[str, object]) -> None:
        self.generation = generation

    def info(self, provider: str, model: str) -> ResolvedModelInfo:
        efforts = [ReasoningEffortInfo(str(e), str(e)) for e in self.generation["efforts"]]  # type: ignore[attr-defined]
        offered = reasoning(*efforts) if efforts else None
        return ResolvedModelInfo(provider=provider, id=model, name=model, reasoning=offered)

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        return self.info(provider, model)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        efforts = self.generation["efforts"]
        if options.reasoning_effort is not None and options.reasoning_effort not in efforts:  # type: ignore[operator]
            raise LlmError(
                f"effort {options.reasoning_effort} not offered", "UNSUPPORTED_REASONING_EFFORT"
            )
        name = str(self.generation["name"])
        yield BlockStart(0, "text")
        yield TextDelta(0, name)
        yield BlockEnd(0, TextBlock(name))
        yield Finish(Stop())


async def test_prepared_call_pins_the_configuration_generation_it_was_prepared_against() -> None:
    rt = LlmRuntime()
    adapter = _Generations()
    rt.register_adapter(["gen"], adapter)
    config = CallConfig("gen", "m", reasoning_effort="high")
    prepared = await rt.prepare_call(config)
    adapter.current = {"name": "B", "efforts": ()}  # the swap lands between prepare and dispatch
    options = GenerateOptions("gen", "m", (user_message("hi"),), reasoning_effort="high")
    chunks = [c async for c in prepared.stream(options)]
    assert chunks[-1] == Finish(Stop())
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["A"]  # generation A served
    # an unprepared call after the swap sees generation B and its refusal
    fresh = [c async for c in rt.stream(options)]
    assert isinstance(fresh[-1], Finish) and fresh[-1].reason.kind == "error"


async def test_an_adapter_without_generations_is_its_own_pinned_adapter() -> None:
    rt = LlmRuntime()
    adapter = _Pinned({"name": "only", "efforts": ()})
    rt.register_adapter(["one"], adapter)
    prepared = await rt.prepare_call(CallConfig("one", "m"))
    assert prepared.route.adapter is adapter
