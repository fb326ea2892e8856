"""Spec G.1 (serialize.spec, 39): DeepSeek request serialization, rules A1-A25.

The image path (G.1 25-36) is replaced by modelwire's rule: every image is rejected with
UNSUPPORTED_CONTENT before flattening; those cases pin that no image is ever dropped silently.
`reasoning_content` follows DESIGN §7: tool-call turns by default, every turn on request.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelwire import (
    AudioBlock,
    DocumentBlock,
    GenerateOptions,
    ImageAttachmentRef,
    ImageBlock,
    LlmError,
    Message,
    ModelSource,
    PluginSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    UserSource,
    assistant_message,
    user_message,
)
from modelwire.adapters.deepseek.models import resolve_deepseek_config
from modelwire.adapters.deepseek.serialize import build_body

SRC = ModelSource("deepseek-official", "deepseek-v4-pro")


def body(messages: list[Message], /, *, cfg: dict[str, Any] | None = None, **opts: Any) -> Any:
    config = resolve_deepseek_config(env={}, **(cfg or {}))
    options = GenerateOptions(
        provider="deepseek-official",
        model=opts.pop("model", "deepseek-v4-pro"),
        messages=tuple(messages),
        **opts,
    )
    raw = build_body(options, config)
    return json.loads(raw)


def wire(messages: list[Message], **kw: Any) -> list[Any]:
    return body(messages, **kw)["messages"]


def msg(role: str, *blocks: Any) -> Message:
    return Message(f"m-{role}", role, tuple(blocks), UserSource())  # type: ignore[arg-type]


def image(media: str = "image/png") -> ImageBlock:
    return ImageBlock(ImageAttachmentRef("att-1", media, 3, 1, 1))  # type: ignore[arg-type]


def reject(messages: list[Message]) -> LlmError:
    with pytest.raises(LlmError) as info:
        body(messages)
    assert info.value.code == "UNSUPPORTED_CONTENT"
    assert "does not support image content" in info.value.message
    return info.value


def test_g1_01_user_text_blocks_join_without_separator() -> None:
    assert wire([msg("user", TextBlock("a"), TextBlock("b"))]) == [
        {"role": "user", "content": "ab"}
    ]


def test_g1_02_system_history_message_becomes_system_wire_message() -> None:
    assert wire([msg("system", TextBlock("rules"), TextBlock("!"))]) == [
        {"role": "system", "content": "rules!"}
    ]


@pytest.mark.parametrize(
    ("passback", "expected"),
    [
        pytest.param("tool-turns", {"role": "assistant", "content": "hi"}, id="tool-turns-default"),
        pytest.param(
            "every-turn",
            {"role": "assistant", "content": "hi", "reasoning_content": "think"},
            id="every-turn",
        ),
    ],
)
def test_g1_03_reasoning_on_tool_free_turn_follows_passback_option(
    passback: str, expected: Any
) -> None:
    m = assistant_message([ReasoningBlock("think"), TextBlock("hi")], SRC)
    assert wire([m], cfg={"reasoning_passback": passback}) == [expected]


def test_g1_04_reasoning_and_tool_call_turn_carries_reasoning_content() -> None:
    m = assistant_message([ReasoningBlock("r"), ToolCallBlock("c1", "ls", '{"p":1}')], SRC)
    assert wire([m]) == [
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "r",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"p":1}'}}
            ],
        }
    ]


def test_g1_05_parallel_tool_calls_keep_block_order() -> None:
    m = assistant_message([ToolCallBlock("b", "two", "{}"), ToolCallBlock("a", "one", "{ }")], SRC)
    calls = wire([m])[0]["tool_calls"]
    assert [(c["id"], c["function"]["arguments"]) for c in calls] == [("b", "{}"), ("a", "{ }")]


def test_g1_06_tool_result_becomes_tool_message() -> None:
    m = msg("user", ToolResultBlock("c1", (TextBlock("out"),)))
    assert wire([m]) == [{"role": "tool", "tool_call_id": "c1", "content": "out"}]


def test_g1_07_empty_tool_result_is_no_output() -> None:
    m = msg("user", ToolResultBlock("c1", ()))
    assert wire([m]) == [{"role": "tool", "tool_call_id": "c1", "content": "(no output)"}]


def test_g1_08_mixed_user_text_then_tool_message() -> None:
    m = msg("user", ToolResultBlock("c1", (TextBlock("r"),)), TextBlock("t"))
    assert wire([m]) == [
        {"role": "user", "content": "t"},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]


def test_g1_09_plugin_block_types_skipped() -> None:
    m = msg(
        "user", TextBlock("a"), ReasoningBlock("x"), ToolCallBlock("i", "n", "{}"), TextBlock("b")
    )
    assert wire([m]) == [{"role": "user", "content": "ab"}]


def test_g1_10_image_block_raises_unsupported_content() -> None:
    reject([msg("user", TextBlock("see"), image())])


def test_g1_11_block_less_user_message_kept_empty() -> None:
    assert wire([msg("user")]) == [{"role": "user", "content": ""}]


def test_g1_12_minimal_request_exact_body() -> None:
    raw = build_body(
        GenerateOptions(provider="p", model="m", messages=(user_message("x"),)),
        resolve_deepseek_config(env={}),
    )
    assert raw == (
        b'{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,'
        b'"stream_options":{"include_usage":true}}'
    )


def test_g1_13_system_prompt_first() -> None:
    assert wire([user_message("u")], system="S")[0] == {"role": "system", "content": "S"}
    assert wire([user_message("u")], system="")[0] == {"role": "system", "content": ""}


def test_g1_14_temperature_max_tokens_stop_map() -> None:
    b = body([user_message("u")], temperature=0.0, max_tokens=5, stop=("x",))
    assert (b["temperature"], b["max_tokens"], b["stop"]) == (0, 5, ["x"])
    assert body([user_message("u")], stop=())["stop"] == []


def test_g1_15_tools_map_to_function_specs_in_order() -> None:
    tools = (
        ToolSchema("a", "A", {"type": "object", "properties": {}}),
        ToolSchema("b", "B", {"type": "object"}),
    )
    assert body([user_message("u")], tools=tools)["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "a",
                "description": "A",
                "parameters": {"type": "object", "properties": {}},
            },
        },
        {
            "type": "function",
            "function": {"name": "b", "description": "B", "parameters": {"type": "object"}},
        },
    ]


def test_g1_16_empty_tools_omitted() -> None:
    assert "tools" not in body([user_message("u")], tools=())


ENABLED_HIGH = {"reasoning": {"thinking": "enabled", "effort": "high"}}


@pytest.mark.parametrize("effort", ["low", "high", "max"])
def test_g1_17_request_effort_enables_thinking(effort: str) -> None:
    b = body([user_message("u")], cfg=ENABLED_HIGH, reasoning_effort=effort)
    assert (b["thinking"], b["reasoning_effort"]) == ({"type": "enabled"}, effort)


def test_g1_18_request_off_over_max_default_disables() -> None:
    b = body([user_message("u")], cfg={"reasoning": {"effort": "max"}}, reasoning_effort="off")
    assert b["thinking"] == {"type": "disabled"} and "reasoning_effort" not in b


def test_g1_19_request_max_over_off_default_reenables() -> None:
    b = body([user_message("u")], cfg={"reasoning": {"effort": "off"}}, reasoning_effort="max")
    assert (b["thinking"], b["reasoning_effort"]) == ({"type": "enabled"}, "max")


def test_g1_20_locked_disabled_rejects_high() -> None:
    with pytest.raises(LlmError) as info:
        body(
            [user_message("u")],
            cfg={"reasoning": {"thinking": "disabled"}},
            reasoning_effort="high",
        )
    assert info.value.code == "UNSUPPORTED_REASONING_EFFORT"


def test_g1_21_session_title_forces_thinking_disabled() -> None:
    b = body(
        [user_message("u")],
        cfg={"reasoning": {"thinking": "enabled", "effort": "max"}},
        reasoning_effort="max",
        purpose="session-title",
    )
    assert b["thinking"] == {"type": "disabled"} and "reasoning_effort" not in b


def test_g1_22_no_defaults_no_effort_no_thinking_fields() -> None:
    b = body([user_message("u")])
    assert "thinking" not in b and "reasoning_effort" not in b


def test_g1_23_thinking_enabled_default_alone() -> None:
    b = body([user_message("u")], cfg={"reasoning": {"thinking": "enabled"}})
    assert b["thinking"] == {"type": "enabled"} and "reasoning_effort" not in b


def test_g1_24_unknown_effort_rejected() -> None:
    with pytest.raises(LlmError) as info:
        body([user_message("u")], reasoning_effort="medium")
    assert info.value.code == "UNSUPPORTED_REASONING_EFFORT"
    assert '"medium"' in info.value.message


@pytest.mark.parametrize("media", ["image/png", "image/jpeg", "image/webp", "image/gif"])
def test_g1_25_images_of_every_media_type_rejected_not_flattened(media: str) -> None:
    reject([msg("user", TextBlock("a"), image(media), TextBlock("b"))])


def test_g1_26_image_only_user_content_rejected() -> None:
    reject([msg("user", image())])


def test_g1_27_tool_result_images_rejected() -> None:
    reject([msg("user", ToolResultBlock("c", (image(), TextBlock("caption"))))])


def test_g1_28_empty_text_and_unknown_block_beside_tool_result_no_empty_user() -> None:
    m = msg("user", TextBlock(""), ReasoningBlock("x"), ToolResultBlock("c", (TextBlock("r"),)))
    assert wire([m]) == [{"role": "tool", "tool_call_id": "c", "content": "r"}]


def test_g1_29_nested_tool_result_not_recursed_on_text_path() -> None:
    inner = ToolResultBlock("n", (TextBlock("inside"),))
    m = msg("user", ToolResultBlock("c", (inner,)))
    assert wire([m]) == [{"role": "tool", "tool_call_id": "c", "content": "(no output)"}]


def test_g1_30_nested_image_rejected_before_following_messages() -> None:
    nested = ToolResultBlock("n", (image(),))
    reject([msg("user", ToolResultBlock("c", (nested,))), msg("system", TextBlock("s"))])


def test_g1_31_rejection_happens_per_message_in_order() -> None:
    err = reject([user_message("ok"), msg("user", image()), msg("user", image())])
    assert "messages[1]" in err.message


@pytest.mark.parametrize("role", ["system", "assistant"])
def test_g1_32_image_in_role_rejected(role: str) -> None:
    err = reject([Message("m", role, (image(),), PluginSource("p"))])  # type: ignore[arg-type]
    assert f"({role})" in err.message


def test_g1_33_image_rejected_even_among_many_images() -> None:
    reject([msg("user", image()), msg("user", image()), msg("assistant", image())])


def test_g1_34_system_prompt_does_not_mask_image_rejection() -> None:
    with pytest.raises(LlmError) as info:
        body([msg("user", image())], system="S")
    assert info.value.code == "UNSUPPORTED_CONTENT"


def test_g1_35_rejection_is_an_llm_error_with_stable_code() -> None:
    assert reject([msg("user", image())]).failure.code == "UNSUPPORTED_CONTENT"


def test_g1_36_serialization_errors_are_never_transport() -> None:
    for messages in ([msg("user", image())],):
        assert reject(messages).code != "TRANSPORT"


def test_g1_37_contentless_assistant_content_empty_string() -> None:
    assert wire([assistant_message([], SRC)]) == [{"role": "assistant", "content": ""}]


@pytest.mark.parametrize(
    ("passback", "expected"),
    [
        pytest.param("tool-turns", {"role": "assistant", "content": ""}, id="tool-turns-default"),
        pytest.param(
            "every-turn",
            {"role": "assistant", "content": "", "reasoning_content": "思考 é"},
            id="every-turn",
        ),
    ],
)
def test_g1_38_reasoning_only_assistant(passback: str, expected: Any) -> None:
    m = assistant_message([ReasoningBlock("思考 é")], SRC)
    assert wire([m], cfg={"reasoning_passback": passback}) == [expected]
    raw = build_body(
        GenerateOptions(provider="p", model="m", messages=(m,)),
        resolve_deepseek_config(env={}, reasoning_passback="every-turn"),
    )
    assert "思考 é".encode() in raw  # non-ASCII is not escaped


def test_g1_39_tool_call_only_assistant_content_empty_string() -> None:
    m = assistant_message([ToolCallBlock("c", "n", "{}")], SRC)
    assert wire([m])[0]["content"] == ""


def test_a7_worked_example_1_exact_body() -> None:
    tools = (
        ToolSchema(
            "list_dir",
            "List a directory.",
            {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        ),
    )
    history = [
        user_message("List the files in src."),
        assistant_message(
            [
                ReasoningBlock("Need the listing first."),
                TextBlock("Let me look."),
                ToolCallBlock("call_0", "list_dir", '{"path":"src"}'),
            ],
            SRC,
        ),
        msg("user", ToolResultBlock("call_0", (TextBlock("a.py\nb.py"),))),
    ]
    raw = build_body(
        GenerateOptions(
            provider="deepseek-official",
            model="deepseek-v4-pro",
            messages=tuple(history),
            system="You are a careful coding agent.",
            tools=tools,
            reasoning_effort="max",
            max_tokens=256000,
        ),
        resolve_deepseek_config(env={}, reasoning={"thinking": "enabled"}),
    )
    expected = {
        "model": "deepseek-v4-pro",
        "messages": [
            {"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": "List the files in src."},
            {
                "role": "assistant",
                "content": "Let me look.",
                "reasoning_content": "Need the listing first.",
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": "list_dir", "arguments": '{"path":"src"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_0", "content": "a.py\nb.py"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "thinking": {"type": "enabled"},
        "reasoning_effort": "max",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "list_dir",
                    "description": "List a directory.",
                    "parameters": {
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                    },
                },
            }
        ],
        "max_tokens": 256000,
    }
    assert raw == json.dumps(expected, separators=(",", ":"), ensure_ascii=False).encode()


def test_a8_worked_example_2_exact_body_with_tool_turn_default() -> None:
    history = [
        user_message("hi"),
        assistant_message([ReasoningBlock("Just greet back.")], SRC),
        assistant_message([ToolCallBlock("c1", "noop", "{}")], SRC),
        msg("user", TextBlock("cwd is /w"), ToolResultBlock("c1", ())),
    ]
    raw = build_body(
        GenerateOptions(
            provider="deepseek-official",
            model="deepseek-v4-flash",
            messages=tuple(history),
            tools=(),
            temperature=0,
            max_tokens=1024,
            stop=("</done>",),
            reasoning_effort="off",
            purpose="compaction",
            session_id="s-42",
        ),
        resolve_deepseek_config(env={}),
    )
    assert raw == (
        b'{"model":"deepseek-v4-flash","messages":[{"role":"user","content":"hi"},'
        b'{"role":"assistant","content":""},'
        b'{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function",'
        b'"function":{"name":"noop","arguments":"{}"}}]},'
        b'{"role":"user","content":"cwd is /w"},{"role":"tool","tool_call_id":"c1","content":"(no output)"}],'
        b'"stream":true,"stream_options":{"include_usage":true},"thinking":{"type":"disabled"},'
        b'"temperature":0,"max_tokens":1024,"stop":["</done>"]}'
    )


def test_a25_identical_inputs_give_byte_identical_bodies() -> None:
    opts = GenerateOptions(provider="p", model="m", messages=(user_message("x"),), temperature=0.5)
    cfg = resolve_deepseek_config(env={})
    assert build_body(opts, cfg) == build_body(opts, cfg)


@pytest.mark.parametrize(
    "block",
    [DocumentBlock("application/pdf", data=b"%PDF"), AudioBlock("audio/wav", b"RIFF")],
    ids=["document", "audio"],
)
def test_documents_and_audio_are_rejected_never_dropped(block: Any) -> None:
    """Issue 38: DeepSeek's chat API takes text only; a document or audio block (also inside a
    tool result) is UNSUPPORTED_CONTENT, never flattened away."""
    for message in (
        msg("user", TextBlock("read this"), block),
        msg("user", ToolResultBlock("c1", (block,))),
    ):
        with pytest.raises(LlmError) as info:
            body([message])
        assert info.value.code == "UNSUPPORTED_CONTENT"
        assert "messages[0] (user)" in info.value.message
        assert "document or audio" in info.value.message
