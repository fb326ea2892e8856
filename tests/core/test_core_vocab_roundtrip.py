"""Every vocabulary type round-trips through JSON (`decode(encode(x), type=T) == x`) and is frozen."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from modelwire import (
    AlwaysRetryPolicy,
    NormalRetryPolicy,
    RetryPolicy,
)
from modelwire.vocab import (
    Aborted,
    AdapterDefaults,
    BlockEnd,
    BlockStart,
    CallConfig,
    ConfigurableProvider,
    ContentBlock,
    DiscoveredModel,
    Error,
    Finish,
    FinishReason,
    GenerateOptions,
    ImageAttachmentRef,
    ImageBlock,
    LlmFailure,
    MaxTokens,
    Message,
    MessageSource,
    ModelContext,
    ModelDiscoveryRequest,
    ModelInfo,
    ModelReasoningInfo,
    ModelSource,
    PluginSource,
    ProviderInfo,
    ReasoningBlock,
    ReasoningDelta,
    ReasoningEffortInfo,
    ReplayEnvelope,
    ResolvedModelInfo,
    SnapshotSection,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolCalls,
    ToolResultBlock,
    ToolSchema,
    ToolSource,
    UsageChunk,
    UserSource,
)

IMAGE_REF = ImageAttachmentRef("sha256:" + "a" * 64, "image/png", 3, 1, 1, name="dot.png")
FAILURE = LlmFailure(
    "busy", "RATE_LIMIT", status=429, provider_retry_after_ms=1500.0, request_id="r"
)
ENVELOPE = ReplayEnvelope({"id": "resp-1", "nested": [1, {"k": None}]}, ({"i": 0}, None))
BLOCKS: list[ContentBlock] = [
    TextBlock("t"),
    ReasoningBlock("r"),
    ImageBlock(IMAGE_REF),
    ToolCallBlock("call-1", "echo", '{"a":1}'),
    ToolResultBlock("call-1", (TextBlock("x"), ImageBlock(IMAGE_REF)), True),
]
SOURCES: list[MessageSource] = [
    UserSource(),
    PluginSource("p"),
    PluginSource("p", form="snapshot", sections=(SnapshotSection("a", "b"),)),
    PluginSource("p", form="notice", summary="one line"),
    ModelSource("deepseek", "deepseek-chat"),
    ModelSource("deepseek", "deepseek-chat", replay_state=ENVELOPE),
    ToolSource("call-1"),
]
FINISHES: list[FinishReason] = [Stop(), ToolCalls(), MaxTokens(), Aborted(FAILURE), Error(FAILURE)]
CHUNKS: list[StreamChunk] = [
    BlockStart(0, "text"),
    TextDelta(0, "hi"),
    ReasoningDelta(1, "hmm"),
    ToolCallDelta(2, "call-1", '{"a":'),
    ToolCallDelta(2, None, "1}", name="echo"),
    BlockEnd(2, ToolCallBlock("call-1", "echo", '{"a":1}')),
    UsageChunk(TokenUsage(1, 2, cache_read_tokens=3, cache_write_tokens=4, reasoning_tokens=1)),
    Finish(Stop()),
    Finish(ToolCalls(), ENVELOPE),
    Finish(Error(FAILURE)),
]
MESSAGE = Message("m-1", "assistant", tuple(BLOCKS), SOURCES[5])

CASES: list[tuple[Any, object]] = [
    *((ContentBlock, b) for b in BLOCKS),
    *((type(b), b) for b in BLOCKS),
    *((MessageSource, s) for s in SOURCES),
    *((FinishReason, f) for f in FINISHES),
    *((StreamChunk, c) for c in CHUNKS),
    (ImageAttachmentRef, IMAGE_REF),
    (LlmFailure, FAILURE),
    (LlmFailure, LlmFailure("m", "UNKNOWN")),
    (TokenUsage, TokenUsage(5, 6)),
    (ReplayEnvelope, ENVELOPE),
    (ReplayEnvelope, ReplayEnvelope(None)),
    (Message, MESSAGE),
    (
        GenerateOptions,
        GenerateOptions(
            provider="deepseek",
            model="deepseek-chat",
            messages=(MESSAGE,),
            system="be brief",
            tools=(ToolSchema("echo", "Echo", {"type": "object", "properties": {}}),),
            temperature=0.2,
            max_tokens=100,
            stop=("END",),
            reasoning_effort="high",
            session_id="s-1",
            purpose="compaction",
        ),
    ),
    (GenerateOptions, GenerateOptions(provider="p", model="m", messages=())),
    (ToolSchema, ToolSchema("t", "d", {"type": "object"})),
    (CallConfig, CallConfig(provider="p", model="m", reasoning_effort="low", stop=("x",))),
    (AdapterDefaults, AdapterDefaults(reasoning_effort=True)),
    (ProviderInfo, ProviderInfo("deepseek", "DeepSeek")),
    (ModelInfo, ModelInfo(provider="p", id="m", name="M", input_modalities=("text", "image"))),
    (ModelContext, ModelContext(128000)),
    (ReasoningEffortInfo, ReasoningEffortInfo("high", "High", "more thinking")),
    (ModelReasoningInfo, ModelReasoningInfo((ReasoningEffortInfo("h", "H"),), default_effort="h")),
    (
        ResolvedModelInfo,
        ResolvedModelInfo(
            provider="p",
            id="m",
            name="M",
            context=ModelContext(8),
            default_max_tokens=4,
            reasoning=ModelReasoningInfo((ReasoningEffortInfo("h", "H"),)),
        ),
    ),
    (
        ConfigurableProvider,
        ConfigurableProvider(
            provider="p", display_name="P", settings_ns="ns", settings_path=("a",), declared=True
        ),
    ),
    (ModelDiscoveryRequest, ModelDiscoveryRequest(base_url="https://example.invalid/v1")),
    (DiscoveredModel, DiscoveredModel(id="m", context_window=8, max_tokens=4)),
    (RetryPolicy, NormalRetryPolicy()),
    (RetryPolicy, AlwaysRetryPolicy(initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0)),
]


def _case_id(case: tuple[Any, object]) -> str:
    typ, value = case
    name = getattr(typ, "__name__", None) or "union"
    return f"{name}-{type(value).__name__}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_vocab_roundtrip(case: tuple[Any, object]) -> None:
    typ, value = case
    encoded = msgspec.json.encode(value)
    decoded = msgspec.json.decode(encoded, type=typ)
    assert decoded == value
    assert type(decoded) is type(value)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_vocab_mutation_raises(case: tuple[Any, object]) -> None:
    _, value = case
    assert isinstance(value, msgspec.Struct)
    for field in value.__struct_fields__:
        with pytest.raises(AttributeError):
            setattr(value, field, getattr(value, field))
    hash(value)  # frozen values are hashable all the way down


def test_vocab_json_uses_snake_case_keys_and_spec_tags() -> None:
    assert msgspec.json.decode(msgspec.json.encode(CHUNKS[4])) == {
        "type": "tool-call-delta",
        "index": 2,
        "id": None,
        "arguments_delta": "1}",
        "name": "echo",
    }
    assert msgspec.json.decode(msgspec.json.encode(Finish(MaxTokens()))) == {
        "type": "finish",
        "reason": {"kind": "max-tokens"},
    }
    assert msgspec.json.decode(msgspec.json.encode(FAILURE)) == {
        "message": "busy",
        "code": "RATE_LIMIT",
        "status": 429,
        "provider_retry_after_ms": 1500.0,
        "request_id": "r",
    }
    assert msgspec.json.decode(msgspec.json.encode(LlmFailure("m", "AUTH"))) == {
        "message": "m",
        "code": "AUTH",
    }


def test_vocab_decode_gives_frozen_json() -> None:
    decoded = msgspec.json.decode(msgspec.json.encode(ENVELOPE), type=ReplayEnvelope)
    with pytest.raises(TypeError):
        decoded.response["id"] = "x"
    assert isinstance(decoded.blocks, tuple)
