"""The dev invariant companion: spec §11.10 INV-01..06 (R-INV-1..3, R-EVT-4)."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator

import pytest
from runtime_helpers import ScriptedAdapter, collect, opts

from modelwire.errors import HarnessError
from modelwire.policy import RetryPolicy
from modelwire.runtime import (
    CallNext,
    InvariantError,
    LlmRuntime,
    check_registry,
    install_invariants,
)
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    ConfigurableProvider,
    Finish,
    GenerateOptions,
    ReasoningBlock,
    ReasoningDelta,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)

USAGE = UsageChunk(TokenUsage(1, 1))


def _checked(rt: LlmRuntime, script: list[StreamChunk]) -> LlmRuntime:
    rt.register_adapter(["p"], ScriptedAdapter(script))
    install_invariants(rt)
    return rt


async def test_inv_01_complete_interleaved_grammar_passes_unchanged(rt: LlmRuntime) -> None:
    script: list[StreamChunk] = [
        BlockStart(0, "text"),
        BlockStart(1, "reasoning"),
        TextDelta(0, "a"),
        ReasoningDelta(1, "b"),
        BlockEnd(1, ReasoningBlock("b")),
        BlockEnd(0, TextBlock("a")),
        BlockStart(2, "tool-call"),
        ToolCallDelta(2, "call-1", "{}", name="echo"),
        BlockEnd(2, ToolCallBlock("call-1", "echo", "{}")),
        USAGE,
        Finish(Stop()),
    ]
    assert await collect(_checked(rt, script).stream(opts())) == script


@pytest.mark.parametrize(
    ("script", "match"),
    [
        pytest.param(
            [BlockStart(-1, "text"), Finish(Stop())],
            "non-negative safe integer",
            id="negative_index",
        ),
        pytest.param(
            [BlockStart(0, "text"), BlockStart(0, "text")],
            "repeated block-start",
            id="repeated_start",
        ),
        pytest.param([TextDelta(0, "x")], "requires an open text block", id="delta_without_block"),
        pytest.param(
            [BlockStart(0, "reasoning"), TextDelta(0, "x")], "got reasoning", id="delta_wrong_type"
        ),
        pytest.param([BlockEnd(0, TextBlock("x"))], "has no open block", id="end_without_block"),
        pytest.param(
            [BlockStart(0, "text"), BlockEnd(0, ReasoningBlock("x"))],
            "closes reasoning, expected text",
            id="end_wrong_type",
        ),
        pytest.param([USAGE, USAGE], "usage more than once", id="usage_twice"),
        pytest.param(
            [BlockStart(0, "text"), Finish(Stop())],
            "finished with 1 open block",
            id="open_at_finish",
        ),
        pytest.param([Finish(Stop()), USAGE], "usage after terminal finish", id="after_finish"),
        pytest.param([], "ended without a terminal finish", id="no_finish"),
    ],
)
async def test_inv_02_grammar_violations_raise(
    rt: LlmRuntime, script: list[StreamChunk], match: str
) -> None:
    with pytest.raises(InvariantError, match=match) as caught:
        await collect(_checked(rt, script).stream(opts()))
    assert caught.value.code == "INVARIANT"
    assert caught.value.message.startswith('invariant violated by "modelwire": ')


async def test_inv_03_stream_errors_propagate_unchanged(rt: LlmRuntime) -> None:
    """Adapter errors become finishes at the boundary, so the raising "terminal" of the upstream
    test is a middleware inside the invariant wrapper (middleware errors stay raised)."""
    failure = RuntimeError("provider failed")

    async def raising(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        raise failure
        yield  # pragma: no cover - makes this an async generator

    rt.use(raising)
    install_invariants(rt)
    with pytest.raises(RuntimeError) as caught:
        await collect(rt.stream(opts()))
    assert caught.value is failure


async def test_inv_04_registry_round_trip_has_no_violation(rt: LlmRuntime) -> None:
    install_invariants(rt)
    reg = rt.register_adapter(["p"], ScriptedAdapter())
    rt.register_configurable_providers(
        [ConfigurableProvider(provider="p", display_name="P", settings_ns="llm-p")]
    )
    reg()
    assert rt.list_providers() == []


def test_inv_05_check_without_a_runtime_does_nothing() -> None:
    """No Cordis service container: the companion holds the runtime weakly, so "no `llm` service
    mounted" is the runtime having been collected; the check then does nothing."""
    check_registry(None)
    runtime = LlmRuntime()
    install_invariants(runtime)
    listener = runtime._notifier._listeners[0]
    del runtime
    gc.collect()
    listener()


def test_inv_06_unreadable_registration_raises_from_the_mutating_call() -> None:
    class Unreadable(LlmRuntime):
        def provider_retry_policy(self, provider: str) -> RetryPolicy:
            raise HarnessError("policy store offline", "UNKNOWN")

    rt = Unreadable()
    install_invariants(rt)
    with pytest.raises(InvariantError, match="no readable registration") as caught:
        rt.register_adapter(["ghost"], ScriptedAdapter())
    assert '"ghost"' in caught.value.message


async def test_inv_r3_disposing_the_companion_removes_both_checks(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter([TextDelta(0, "x")]))
    remove = install_invariants(rt)
    remove()
    assert rt._notifier._listeners == []
    assert await collect(rt.stream(opts())) == [TextDelta(0, "x")]
