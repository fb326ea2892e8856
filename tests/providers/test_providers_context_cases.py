"""Remaining `config.spec`, `context.spec` and `convert.spec` cases (catalogue §8.3-§8.5):
schema materialization, history conversion, image offload, replay restore, event translation."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from providers_fixtures import MockServer, Reply

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.config import resolve_profiles
from modelwire.adapters.providers.context import (
    FOREIGN_API,
    NAssistant,
    NImage,
    NText,
    NThinking,
    NToolCall,
    NToolResult,
    NUser,
    foreign_assistant,
    to_context,
)
from modelwire.adapters.providers.protocols import translate_sse
from modelwire.adapters.providers.protocols.common import classify_error_text
from modelwire.adapters.providers.replay_state import restore_assistant
from modelwire.content import OFFLOADED_IMAGE_TEXT, offload_request_images
from modelwire.errors import LlmError
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Finish,
    GenerateOptions,
    ImageAttachmentRef,
    ImageBlock,
    Message,
    ModelSource,
    ReasoningBlock,
    ReasoningDelta,
    ReplayEnvelope,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    system_message,
    user_message,
)


class PluginBlock(msgspec.Struct, frozen=True):
    """A block type some plugin invented; conversion must ignore it."""

    payload: str


def _image(name: str, mime: str = "image/png") -> ImageBlock:
    return ImageBlock(ImageAttachmentRef(name, mime, 3, 1, 1))  # type: ignore[arg-type]


def _read(block: ImageBlock) -> bytes:
    return block.attachment.attachment_id.encode()


def _b64(name: str) -> str:
    return base64.b64encode(name.encode()).decode()


def _ctx(*messages: Message, read: Any = None, system: str | None = None, tools: Any = ()) -> Any:
    return to_context(
        messages, system=system, tools=tools, restore=restore_assistant, read_image=read
    )


def _assistant(*blocks: Any, source: ModelSource | None = None) -> Message:
    return Message("a1", "assistant", tuple(blocks), source or ModelSource("other", "x"))


CALL = _assistant(ToolCallBlock("c1", "weather", "{}"))


# ---- §8.3 config.spec -----------------------------------------------------------------------


def _declared_model(**entry: Any) -> Any:
    profile = {
        "api": "openai-completions",
        "base_url": "http://h",
        "models": [{"id": "m", **entry}],
    }
    return resolve_profiles({"providers": {"gw": profile}})["gw"].models["m"]


def test_config_108_efforts_false_stays_false_and_absent_stays_absent() -> None:
    disabled = _declared_model(reasoning_efforts=False)
    assert (disabled.reasoning, disabled.levels, disabled.thinking_level_map) == (
        False,
        ("off",),
        None,
    )
    absent = _declared_model()  # not materialized as {} (which would be refused)
    assert (absent.reasoning, absent.thinking_level_map) == (False, None)


def test_config_112_absent_input_is_no_answer_and_route_default_is_text() -> None:
    assert _declared_model().input == ("text",)
    profile = {
        "api": "openai-completions",
        "base_url": "http://h",
        "default_input": ["text", "image"],
        "models": [{"id": "m"}, {"id": "narrow", "input": ["text"]}],
    }
    models = resolve_profiles({"providers": {"gw": profile}})["gw"].models
    assert models["m"].input == ("text", "image")
    assert models["narrow"].input == ("text",)


# ---- §8.4 context.spec ----------------------------------------------------------------------


def test_context_115_image_path_conversion() -> None:
    history = (
        user_message(""),
        user_message([TextBlock("caption"), _image("one"), ReasoningBlock("musing")]),
        CALL,
        user_message([ToolResultBlock("c1", (TextBlock("ok"),))]),
        user_message(
            [ToolResultBlock("zz", (ToolResultBlock("yy", ()), _image("two")), is_error=True)]
        ),
    )
    messages = _ctx(*history, read=_read).messages
    assert messages[0] == NUser("")
    assert messages[1] == NUser((NText("caption"), NImage("image/png", _b64("one"))))
    assert messages[3] == NToolResult(
        tool_call_id="c1", tool_name="weather", content=(NText("ok"),)
    )
    assert messages[4] == NToolResult(
        tool_call_id="zz",
        tool_name="unknown",
        content=(NImage("image/png", _b64("two")),),
        is_error=True,
    )


def test_context_116_nested_tool_result_text_and_images_flatten_into_one_list() -> None:
    nested = ToolResultBlock(
        "c1", (TextBlock("a"), ToolResultBlock("c2", (_image("img"), TextBlock("b"))))
    )
    result = _ctx(CALL, user_message([nested]), read=_read).messages[1]
    assert result == NToolResult(
        tool_call_id="c1",
        tool_name="weather",
        content=(NText("ab"), NImage("image/png", _b64("img"))),
    )


def test_context_117_text_only_path_ignores_plugin_blocks_and_flattens_text() -> None:
    message = Message(
        "u1",
        "user",
        (
            TextBlock("a"),
            PluginBlock("x"),  # type: ignore[arg-type]
            ToolResultBlock("c9", (TextBlock("b"),)),
            TextBlock(""),
            TextBlock("c"),
        ),
        user_message("").source,
    )
    messages = _ctx(message).messages
    assert messages[0] == NUser("ac")
    assert messages[1] == NToolResult(tool_call_id="c9", tool_name="unknown", content=(NText("b"),))


class Store:
    def __init__(self) -> None:
        self.reads: list[str] = []

    async def __call__(self, ref: ImageAttachmentRef) -> bytes:
        self.reads.append(ref.attachment_id)
        return b"png"


ANTHROPIC_TEXT = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}\n\n',
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]


async def _send(bound: int, *history: Message) -> tuple[Store, dict[str, Any]]:
    store = Store()
    async with MockServer([Reply(reads=ANTHROPIC_TEXT)]) as server:
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "gw": {
                        "api": "anthropic-messages",
                        "base_url": server.url,
                        "api_key_env": "K",
                        "max_request_image_bytes": bound,
                        "models": [{"id": "v", "input": ["text", "image"]}],
                    }
                }
            },
            env={"K": "k"},
            read_image=store,
        )
        options = GenerateOptions(provider="gw", model="v", messages=history)
        chunks = [c async for c in adapter.stream(options)]
    assert chunks[-1].reason.kind == "stop"  # type: ignore[union-attr]
    return store, server.bodies[0]


async def test_context_119_single_image_over_the_bound_collapses_to_placeholder() -> None:
    history = (user_message([_image("big")]),)
    assert _ctx(*offload_request_images(history, 3), read=_read).messages == (
        NUser(OFFLOADED_IMAGE_TEXT),
    )
    store, body = await _send(3, *history)
    content = body["messages"][0]["content"]  # the last user turn carries cache_control
    assert [(p["type"], p["text"]) for p in content] == [("text", OFFLOADED_IMAGE_TEXT)]
    assert store.reads == []


async def test_context_120_offload_counts_occurrences_by_position() -> None:
    """The same block twice is two occurrences: the first is replaced, the second kept. Reads
    are deduplicated per attachment id (upstream reads twice; same bytes either way)."""
    same = _image("dup")
    store, body = await _send(4, user_message([same, same]))
    parts = body["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": OFFLOADED_IMAGE_TEXT}
    assert parts[1]["type"] == "image" and parts[1]["source"]["data"] == _b64("png")
    assert store.reads == ["dup"]


def test_context_121_empty_user_message_survives_and_results_only_yields_the_result() -> None:
    empty = Message("u", "user", (), user_message("").source)
    messages = _ctx(empty, user_message([ToolResultBlock("c7", (TextBlock("r"),))])).messages
    assert messages == (
        NUser(""),
        NToolResult(tool_call_id="c7", tool_name="unknown", content=(NText("r"),)),
    )


def test_context_122_text_only_system_and_assistant_history_and_assistant_image() -> None:
    messages = _ctx(system_message("rules"), _assistant(TextBlock("sure")), read=_read).messages
    assert messages[0] == NUser("rules")
    assert isinstance(messages[1], NAssistant) and messages[1].content == (NText("sure"),)
    with pytest.raises(LlmError) as info:
        foreign_assistant(_assistant(_image("out")))
    assert info.value.code == "UNSUPPORTED_CONTENT"
    assert "assistant image output" in info.value.message


# ---- §8.5 convert.spec: history to neutral context -------------------------------------------

TOOLS = (ToolSchema("f", "d", {"type": "object"}),)


def test_convert_123_system_user_text_and_tools_map_directly() -> None:
    ctx = _ctx(user_message("hi"), system="sys", tools=TOOLS)
    assert (ctx.system, ctx.messages, ctx.tools) == ("sys", (NUser("hi"),), TOOLS)


def test_convert_125_image_refs_become_base64_parts_in_order() -> None:
    message = user_message([_image("jpg", "image/jpeg"), _image("png")])
    assert _ctx(message, read=_read).messages[0] == NUser(
        (NImage("image/jpeg", _b64("jpg")), NImage("image/png", _b64("png")))
    )


def test_convert_126_nested_result_images_flatten_in_order_empty_results_vanish() -> None:
    nested = ToolResultBlock(
        "c1",
        (_image("i1"), ToolResultBlock("c2", ()), ToolResultBlock("c3", (_image("i2"),))),
    )
    result = _ctx(CALL, user_message([nested]), read=_read).messages[1]
    assert result.content == (NImage("image/png", _b64("i1")), NImage("image/png", _b64("i2")))


def test_convert_129_130_assistant_without_calls_is_stop_and_foreign() -> None:
    assistant = _ctx(_assistant(TextBlock("hi"), source=ModelSource("prov", "mod"))).messages[0]
    assert assistant == NAssistant(
        content=(NText("hi"),), api=FOREIGN_API, provider="prov", model="mod", stop_reason="stop"
    )


def test_convert_133_134_tool_result_names_unknown_blocks_and_is_error() -> None:
    known = ToolResultBlock("c1", (TextBlock("Sun"), PluginBlock("x"), TextBlock("ny!")))  # type: ignore[arg-type]
    unmatched = ToolResultBlock("nope", (), is_error=True)
    messages = _ctx(CALL, user_message([known, unmatched])).messages
    assert messages[1] == NToolResult(
        tool_call_id="c1", tool_name="weather", content=(NText("Sunny!"),)
    )
    assert messages[2] == NToolResult(
        tool_call_id="nope", tool_name="unknown", content=(NText("(no output)"),), is_error=True
    )


def test_convert_136_plugin_blocks_in_assistant_content_are_skipped() -> None:
    assistant = _ctx(_assistant(TextBlock("a"), PluginBlock("x"), TextBlock("b"))).messages[0]
    assert assistant.content == (NText("a"), NText("b"))


# ---- §8.5 convert.spec: replay restore ---------------------------------------------------------

RESPONSE = {
    "kind": "pi-ai",
    "version": 2,
    "api": "anthropic-messages",
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "response_model": "claude-sonnet-4-5-20250929",
    "response_id": "msg_1",
    "stop_reason": "toolUse",
}
REDACTED = "[Reasoning redacted]"
CONTENT = (
    ReasoningBlock("plan"),
    ReasoningBlock(REDACTED),
    TextBlock("hi"),
    ToolCallBlock("toolu_1", "f", '{"a":1}'),
)
BLOCKS = (
    {"type": "reasoning", "thinking_signature": "sig-plan"},
    {"type": "reasoning", "thinking_signature": "opaque-blob", "redacted": True},
    {"type": "text", "text_signature": "sig-text"},
    {"type": "tool-call", "thought_signature": "sig-tool"},
)


def _native(response: Any = RESPONSE, blocks: Any = BLOCKS, content: Any = CONTENT) -> Message:
    source = ModelSource("anthropic", "claude-sonnet-4-5", ReplayEnvelope(response, blocks))
    return Message("m1", "assistant", content, source)


def test_convert_137_v2_restores_every_signature_including_redacted() -> None:
    """The restore is independent of the target route/model (the builders decide later)."""
    message = _native()
    restored = _ctx(message).messages[0]
    assert (restored.api, restored.response_model, restored.response_id) == (
        "anthropic-messages",
        "claude-sonnet-4-5-20250929",
        "msg_1",
    )
    assert restored.content == (
        NThinking("plan", "sig-plan"),
        NThinking(REDACTED, "opaque-blob", redacted=True),
        NText("hi", "sig-text"),
        NToolCall("toolu_1", "f", {"a": 1}, "sig-tool"),
    )


def test_convert_138_state_without_optional_metadata_restores_plain_blocks() -> None:
    response = {k: v for k, v in RESPONSE.items() if k not in ("response_model", "response_id")}
    blocks = ({"type": "text"},)
    restored = _ctx(_native(response, blocks, (TextBlock("hi"),))).messages[0]
    assert restored.api == "anthropic-messages"
    assert (restored.response_model, restored.response_id) == (None, None)
    assert restored.content == (NText("hi"),)


def _degraded(response: Any, blocks: Any) -> str:
    seen: list[str] = []
    message = _native(response, blocks)
    assert isinstance(message.source, ModelSource)
    restored = restore_assistant(message, message.source, lambda p, m, reason: seen.append(reason))
    assert restored.api == FOREIGN_API
    assert (restored.provider, restored.model) == ("anthropic", "claude-sonnet-4-5")
    return seen[0].removeprefix("invalid pi-ai replay state: ")


def test_convert_143_provider_differing_from_source_degrades() -> None:
    assert (
        _degraded({**RESPONSE, "provider": "openai"}, BLOCKS)
        == "provider does not match assistant source"
    )


@pytest.mark.parametrize(
    ("response", "blocks", "reason"),
    [
        pytest.param(None, None, "expected a replay envelope", id="null-state"),
        pytest.param(None, BLOCKS, "expected a response object", id="null-response"),
        pytest.param([1, 2], BLOCKS, "expected a response object", id="array-response"),
        pytest.param(
            {k: v for k, v in RESPONSE.items() if k != "model"},
            BLOCKS,
            "model must be a non-empty string",
            id="missing-model",
        ),
        pytest.param(
            {**RESPONSE, "response_model": 5},
            BLOCKS,
            "response_model must be a string",
            id="non-string-response-model",
        ),
        pytest.param(RESPONSE, {"0": BLOCKS[0]}, "blocks must be an array", id="object-blocks"),
        pytest.param(RESPONSE, (None, *BLOCKS[1:]), "block 0 must be an object", id="null-block"),
        pytest.param(RESPONSE, ([1], *BLOCKS[1:]), "block 0 must be an object", id="array-block"),
        pytest.param(
            RESPONSE,
            ({"type": "reasoning", "thinking_signature": 7}, *BLOCKS[1:]),
            "block 0 thinking_signature must be a string",
            id="non-string-signature",
        ),
    ],
)
def test_convert_144_malformed_envelopes_degrade_with_reason(
    response: Any, blocks: Any, reason: str
) -> None:
    assert _degraded(response, blocks) == reason


# ---- §8.5 convert.spec: event translation ------------------------------------------------------


def test_convert_146_thinking_events_become_reasoning_chunks() -> None:
    events = [
        {"id": "c", "choices": [{"index": 0, "delta": {"reasoning_content": "let me "}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"reasoning_content": "think"}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]},
    ]
    body = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
    chunks = translate_sse("openai-completions", [body], provider="r", model="m")
    assert chunks[:3] == [
        BlockStart(0, "reasoning"),
        ReasoningDelta(0, "let me "),
        ReasoningDelta(0, "think"),
    ]
    assert BlockEnd(0, ReasoningBlock("let me think")) in chunks
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "stop"


class ReadFailure(Exception):
    """Raised by the byte source mid-body."""


def test_convert_152_error_from_the_byte_source_propagates_as_same_object() -> None:
    """Ported in intent: upstream's SDK iterator is our byte source; an error it raises is not
    wrapped by the translator (the HTTP layer maps transport failures before this point)."""
    failure = ReadFailure("socket gone")

    def reads() -> Iterator[bytes]:
        yield b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
        raise failure

    with pytest.raises(ReadFailure) as info:
        translate_sse("openai-completions", reads(), provider="r", model="m")
    assert info.value is failure


@pytest.mark.parametrize(
    "text",
    [
        "Anthropic stream ended before message_stop",
        "OpenAI Responses stream ended before a terminal response event",
        "Stream ended without finish_reason",
        "stream ended without a done event",
    ],
)
def test_convert_158_stream_ended_variants_are_transport(text: str) -> None:
    assert classify_error_text(text) == "TRANSPORT"
