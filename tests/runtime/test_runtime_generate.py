"""`generate`, the `llm/generate` chain, `stream_blocks` and the light `import modelwire`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable

import msgspec
import pytest
from runtime_helpers import ScriptedAdapter, ThrowingAdapter, opts

import modelwire as mw
from modelwire.errors import LlmError
from modelwire.runtime import GenerateNext, GenerateResult, LlmRuntime
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    GenerateOptions,
    LlmFailure,
    MaxTokens,
    ModelSource,
    ReplayEnvelope,
    Stop,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolCalls,
    UsageChunk,
)

ENVELOPE = ReplayEnvelope({"id": "resp-1"})
TOOL_SCRIPT = (
    BlockStart(0, "text"),
    TextDelta(0, "let me check"),
    BlockEnd(0, TextBlock("let me check")),
    ToolCallDelta(1, "call-1", '{"q":1}', name="lookup"),
    UsageChunk(TokenUsage(10, 5)),
    Finish(ToolCalls(), ENVELOPE),
)


async def test_generate_assembles_message_usage_finish_and_replay_state(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter(TOOL_SCRIPT))
    result = await rt.generate(opts())
    assert result.finish == ToolCalls()
    assert result.usage == TokenUsage(10, 5)
    assert result.replay_state is ENVELOPE
    assert result.message.role == "assistant"
    assert result.message.content == (
        TextBlock("let me check"),
        ToolCallBlock("call-1", "lookup", '{"q":1}'),
    )
    assert result.message.source == ModelSource("p", "m", ENVELOPE)


async def test_generate_failure_keeps_the_failure_and_discards_partial_output(
    rt: LlmRuntime,
) -> None:
    rt.register_adapter(["p"], ThrowingAdapter(LlmError("down", "SERVER", status=503)))
    result = await rt.generate(opts())
    assert result.finish == Error(LlmFailure("down", "SERVER", status=503))
    assert result.message.content == () and result.replay_state is None
    assert result.message.source == ModelSource("p", "m")


async def test_use_generate_wraps_and_reroutes_non_streaming_calls(rt: LlmRuntime) -> None:
    rt.register_adapter(["routed"], ScriptedAdapter())
    seen: list[str] = []

    async def route(options: GenerateOptions, call_next: GenerateNext) -> GenerateResult:
        seen.append(options.provider)
        result = await call_next(msgspec.structs.replace(options, provider="routed"))
        seen.append(result.finish.kind)
        return result

    def cached(options: GenerateOptions, call_next: GenerateNext) -> Awaitable[GenerateResult]:
        seen.append("inner")
        return call_next()

    remove_outer = rt.use_generate(route)
    rt.use_generate(cached)
    result = await rt.generate(opts("unregistered"))
    assert seen == ["unregistered", "inner", "stop"]
    assert result.message.source == ModelSource("routed", "m")
    remove_outer()
    assert (await rt.generate(opts("unregistered"))).finish.kind == "error"


async def test_stream_blocks_yields_completed_blocks_and_holds_tool_calls(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter(TOOL_SCRIPT))
    blocks = [block async for block in rt.stream_blocks(opts())]
    assert blocks == [TextBlock("let me check"), ToolCallBlock("call-1", "lookup", '{"q":1}')]


async def test_stream_blocks_max_tokens_drops_tool_calls(rt: LlmRuntime) -> None:
    script = (*TOOL_SCRIPT[:4], Finish(MaxTokens()))
    rt.register_adapter(["p"], ScriptedAdapter(script))
    assert [b async for b in rt.stream_blocks(opts())] == [TextBlock("let me check")]


async def test_stream_blocks_raises_the_failure(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ThrowingAdapter(LlmError("limited", "RATE_LIMIT")))
    with pytest.raises(LlmError) as caught:
        [b async for b in rt.stream_blocks(opts())]
    assert caught.value.failure == LlmFailure("limited", "RATE_LIMIT")


async def test_stream_blocks_yields_delta_only_blocks_at_the_finish(rt: LlmRuntime) -> None:
    rt.register_adapter(
        ["p"], ScriptedAdapter((TextDelta(0, "a"), TextDelta(0, "b"), Finish(Stop())))
    )
    assert [b async for b in rt.stream_blocks(opts())] == [TextBlock("ab")]


def test_public_names_are_exported() -> None:
    for name in (
        "LlmRuntime",
        "LlmAdapter",
        "Registration",
        "PreparedCall",
        "GenerateResult",
        "Scope",
    ):
        assert name in mw.__all__ and hasattr(mw, name)


def test_import_modelwire_stays_light() -> None:
    probe = (
        "import sys, modelwire\n"
        "heavy = sorted(m for m in sys.modules if m in ('aiohttp', 'asyncio') or m.startswith(("
        "'aiohttp.', 'asyncio.', 'modelwire.adapters', 'modelwire.cli', 'modelwire.wire', "
        "'modelwire.runtime')))\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""  # the runtime (and asyncio) load on first use


def test_runtime_names_load_on_first_use() -> None:
    probe = (
        "import sys, modelwire\n"
        "from modelwire import LlmRuntime\n"
        "print(LlmRuntime.__module__, 'modelwire.runtime' in sys.modules, modelwire.Scope.__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["modelwire.runtime.runtime", "True", "Scope"]
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = mw.Nope  # type: ignore[attr-defined]
