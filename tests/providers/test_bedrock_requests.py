"""`bedrock-converse-stream` request bodies: URL, messages, system and cache points, images,
tools and tool choice, Claude thinking, tool results, structured output, and reasoning
signatures replayed only to the model that produced them."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from bedrock_fixtures import API, assemble, folder, load, model, record, translate

from modelwire.adapters.providers.context import (
    NAssistant,
    NContext,
    NImage,
    NText,
    NThinking,
    NToolCall,
    NToolResult,
    NUser,
    to_context,
)
from modelwire.adapters.providers.protocols.bedrock_converse import (
    PROTOCOL,
    bedrock_structured_output,
    build_bedrock_request,
)
from modelwire.adapters.providers.protocols.registry import protocol
from modelwire.adapters.providers.protocols.request import RequestOptions
from modelwire.adapters.providers.replay_state import restore_assistant
from modelwire.errors import LlmError
from modelwire.vocab import ModelSource, OutputSchema, ToolChoiceTool, ToolSchema, user_message
from modelwire.wire.eventstream import EventStreamDecoder

CLAUDE = "us.anthropic.claude-sonnet-4-20250514-v1:0"
CLAUDE45 = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
NOVA = "us.amazon.nova-micro-v1:0"
TOOL = ToolSchema(
    "get_temperature",
    "Get the temperature in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def _ctx(*messages: Any, system: str | None = None, tools: tuple[ToolSchema, ...] = ()) -> NContext:
    return NContext(system, tuple(messages), tools)


def _body(model_id: str = NOVA, ctx: NContext | None = None, **options: Any) -> dict[str, Any]:
    fields = options.pop("model_fields", {})
    request = build_bedrock_request(
        model(model_id, **fields), ctx or _ctx(NUser("hi")), RequestOptions(**options)
    )
    decoded: dict[str, Any] = json.loads(request.body)
    return decoded


def _assistant(*content: Any, model_id: str = CLAUDE, provider: str = "br") -> NAssistant:
    return NAssistant(
        content=tuple(content), api=API, provider=provider, model=model_id, stop_reason="stop"
    )


def test_protocol_is_served_by_the_registry_with_its_framer_and_signer() -> None:
    found = protocol(API)
    assert found is PROTOCOL
    assert isinstance(found.framer(), EventStreamDecoder)
    assert found.authorize is not None
    assert found.key_headers("k") == {"Authorization": "Bearer k"}


def test_url_percent_encodes_the_model_id_in_the_path() -> None:
    request = build_bedrock_request(model(NOVA), _ctx(NUser("hi")), RequestOptions())
    assert request.url == (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-micro-v1%3A0"
        "/converse-stream"
    )
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc"
    request = build_bedrock_request(model(arn), _ctx(NUser("hi")), RequestOptions())
    assert "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-" in (
        request.url
    )
    assert request.url.endswith("profile%2Fabc/converse-stream")
    assert request.headers == {"Accept": "application/vnd.amazon.eventstream"}


def test_text_message_body_matches_the_recorded_request_shape() -> None:
    # pydantic-nova-micro-text.request.json: messages, system, inferenceConfig
    recorded = json.loads((folder() / "pydantic-nova-micro-text.request.json").read_text())
    body = _body(
        NOVA,
        _ctx(NUser("What is the capital of France?"), system="You are a helpful chatbot."),
        temperature=0.0,
    )
    assert body["messages"] == recorded["messages"]
    assert body["system"] == recorded["system"]  # Nova: no cache point
    assert body["inferenceConfig"] == {"maxTokens": 8192, "temperature": 0.0}
    assert list(body) == ["messages", "system", "inferenceConfig"]


def test_claude_gets_cache_points_after_system_and_last_user_message() -> None:
    body = _body(CLAUDE, _ctx(NUser("hi"), system="sys"))
    assert body["system"] == [{"text": "sys"}, {"cachePoint": {"type": "default"}}]
    assert body["messages"][-1]["content"] == [
        {"text": "hi"},
        {"cachePoint": {"type": "default"}},
    ]
    long = _body(CLAUDE, _ctx(NUser("hi"), system="sys"), cache_retention="long")
    assert long["system"][1] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    none = _body(CLAUDE, _ctx(NUser("hi"), system="sys"), cache_retention="none")
    assert none["system"] == [{"text": "sys"}]
    old = _body("anthropic.claude-3-haiku-20240307-v1:0", _ctx(NUser("hi"), system="sys"))
    assert old["system"] == [{"text": "sys"}]  # Claude 3 Haiku takes no cache points


def test_images_go_as_format_and_base64_bytes_and_blank_text_gets_a_placeholder() -> None:
    body = _body(NOVA, _ctx(NUser((NText("look"), NImage("image/png", "iVBORw0K")))))
    assert body["messages"][0]["content"] == [
        {"text": "look"},
        {"image": {"format": "png", "source": {"bytes": "iVBORw0K"}}},
    ]
    assert _body(NOVA, _ctx(NUser("  ")))["messages"][0]["content"] == [{"text": "<empty>"}]
    with pytest.raises(LlmError) as err:
        _body(NOVA, _ctx(NUser((NImage("image/bmp", "Qk0="),))))
    assert err.value.code == "UNSUPPORTED_CONTENT"
    assert "image/bmp" in err.value.message


def test_tools_and_every_tool_choice() -> None:
    ctx = _ctx(NUser("t?"), tools=(TOOL,))
    spec = {
        "toolSpec": {
            "name": "get_temperature",
            "description": "Get the temperature in a city.",
            "inputSchema": {"json": json.loads(msgspec.json.encode(TOOL.parameters))},
        }
    }
    assert _body(NOVA, ctx)["toolConfig"] == {"tools": [spec]}
    assert _body(NOVA, ctx, tool_choice="auto")["toolConfig"]["toolChoice"] == {"auto": {}}
    assert _body(NOVA, ctx, tool_choice="required")["toolConfig"]["toolChoice"] == {"any": {}}
    forced = _body(NOVA, ctx, tool_choice=ToolChoiceTool("get_temperature"))
    assert forced["toolConfig"]["toolChoice"] == {"tool": {"name": "get_temperature"}}
    assert "toolConfig" not in _body(NOVA, ctx, tool_choice="none")
    assert "toolConfig" not in _body(NOVA, _ctx(NUser("t?")))
    bare = ToolSchema("ping", "", {"type": "object"})
    tools = _body(NOVA, _ctx(NUser("t?"), tools=(bare,)))["toolConfig"]["tools"]
    assert tools == [{"toolSpec": {"name": "ping", "inputSchema": {"json": {"type": "object"}}}}]


def test_tool_calls_and_results_group_into_alternating_messages_with_safe_ids() -> None:
    ctx = _ctx(
        NUser("temps?"),
        _assistant(
            NText("checking"),
            NToolCall("call|1", "get_temperature", {"city": "Paris"}),
            NToolCall("c2", "get_temperature", {"city": "Rome"}),
            model_id=NOVA,
        ),
        NToolResult(tool_call_id="call|1", tool_name="get_temperature", content=(NText("30°C"),)),
        NToolResult(
            tool_call_id="c2",
            tool_name="get_temperature",
            content=(NText(""),),
            is_error=True,
        ),
        NUser("and now?"),
        tools=(TOOL,),
    )
    messages = _body(NOVA, ctx)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"text": "checking"},
        {"toolUse": {"toolUseId": "call_1", "name": "get_temperature", "input": {"city": "Paris"}}},
        {"toolUse": {"toolUseId": "c2", "name": "get_temperature", "input": {"city": "Rome"}}},
    ]
    assert messages[2]["content"] == [
        {"toolResult": {"toolUseId": "call_1", "content": [{"text": "30°C"}], "status": "success"}},
        {"toolResult": {"toolUseId": "c2", "content": [{"text": "<empty>"}], "status": "error"}},
        {"text": "and now?"},
    ]


def test_foreign_tool_call_ids_are_restricted_to_bedrock_charset() -> None:
    ctx = _ctx(
        NUser("q"),
        _assistant(NToolCall("call:1/ä", "f", {}), model_id="gpt-x", provider="other"),
        NToolResult(tool_call_id="call:1/ä", tool_name="f", content=(NText("r"),)),
    )
    messages = _body(NOVA, ctx)["messages"]
    assert messages[1]["content"][0]["toolUse"]["toolUseId"] == "call_1__"
    assert messages[2]["content"][0]["toolResult"]["toolUseId"] == "call_1__"


def test_claude_budget_thinking_goes_in_additional_model_request_fields() -> None:
    fields = {"reasoning": True, "max_tokens": 64000}
    body = _body(CLAUDE, effort="low", max_tokens=4000, temperature=0.3, model_fields=fields)
    assert body["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 2048, "display": "summarized"},
        "anthropic_beta": ["interleaved-thinking-2025-05-14"],
    }
    assert body["inferenceConfig"] == {"maxTokens": 6048}  # cap + budget; no temperature
    custom = _body(CLAUDE, effort="medium", thinking_budgets={"medium": 3000}, model_fields=fields)
    assert custom["additionalModelRequestFields"]["thinking"]["budget_tokens"] == 3000


def test_claude_adaptive_thinking_sends_an_effort() -> None:
    fields = {"reasoning": True}
    body = _body("us.anthropic.claude-opus-4-7-v1:0", effort="xhigh", model_fields=fields)
    assert body["additionalModelRequestFields"] == {
        "thinking": {"type": "adaptive", "display": "summarized"},
        "output_config": {"effort": "xhigh"},
    }
    sonnet46 = _body("us.anthropic.claude-sonnet-4-6", effort="minimal", model_fields=fields)
    assert sonnet46["additionalModelRequestFields"]["output_config"] == {"effort": "low"}


def test_no_thinking_fields_when_off_or_for_other_families() -> None:
    fields = {"reasoning": True}
    assert "additionalModelRequestFields" not in _body(CLAUDE, effort="off", model_fields=fields)
    assert "additionalModelRequestFields" not in _body(CLAUDE, model_fields=fields)
    assert "additionalModelRequestFields" not in _body(
        "openai.gpt-oss-120b-1:0", effort="high", model_fields=fields
    )
    gov = _body("us-gov.anthropic.claude-sonnet-4-5-v1:0", effort="low", model_fields=fields)
    assert "display" not in gov["additionalModelRequestFields"]["thinking"]


def test_reasoning_signature_is_replayed_to_the_same_model_only() -> None:
    signature = "Eu0CCkgIBxAB" + "x" * 40
    turn = (NThinking("I think", signature), NText("answer"))
    same = _body(CLAUDE, _ctx(NUser("q"), _assistant(*turn), NUser("more")))
    assert same["messages"][1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "I think", "signature": signature}}},
        {"text": "answer"},
    ]
    other = _body(CLAUDE, _ctx(NUser("q"), _assistant(*turn, model_id=CLAUDE45), NUser("more")))
    assert other["messages"][1]["content"] == [{"text": "I think"}, {"text": "answer"}]
    assert signature not in json.dumps(other)


def test_redacted_reasoning_is_replayed_byte_exact_to_the_same_model_only() -> None:
    blob = "RXRrRUNrZ0lCeEFCR0FJcVFKVGZxUy9Q"
    turn = (NThinking("[Reasoning redacted]", blob, redacted=True), NText("ok"))
    same = _body(CLAUDE, _ctx(NUser("q"), _assistant(*turn), NUser("more")))
    assert same["messages"][1]["content"][0] == {"reasoningContent": {"redactedContent": blob}}
    other = _body(CLAUDE, _ctx(NUser("q"), _assistant(*turn, provider="elsewhere"), NUser("m")))
    assert other["messages"][1]["content"] == [{"text": "ok"}]


def test_unsigned_or_non_claude_reasoning_replay_degrades_as_bedrock_requires() -> None:
    unsigned = _body(CLAUDE, _ctx(NUser("q"), _assistant(NThinking("plain"), NText("a"))))
    assert unsigned["messages"][1]["content"][0] == {"text": "plain"}
    oss = "openai.gpt-oss-120b-1:0"
    kept = _body(oss, _ctx(NUser("q"), _assistant(NThinking("why", "sig"), model_id=oss)))
    assert kept["messages"][1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "why"}}}
    ]


def test_recorded_reasoning_turn_round_trips_its_signature_through_replay_state() -> None:
    path = folder() / "pydantic-claude-sonnet4-reasoning-signature.eventstream"
    body, expected = load(path)
    rec = record()
    rec.model = CLAUDE
    asm = assemble(translate([body], rec))
    message = asm.message(ModelSource("br", CLAUDE, asm.replay_state))
    ctx = to_context(
        (user_message("Hello"), message, user_message("again")),
        system=None,
        tools=(),
        restore=lambda m, s: restore_assistant(m, s),
        read_image=None,
    )
    replayed = _body(CLAUDE, ctx)["messages"][1]["content"][0]
    assert replayed["reasoningContent"]["reasoningText"] == {
        "text": expected["reasoning"],
        "signature": expected["extras"]["reasoning_signatures"][0],
    }


def test_structured_output_is_native_text_format_where_bedrock_serves_it() -> None:
    recorded = json.loads(
        (folder() / "pydantic-claude-sonnet45-native-output-text.request.json").read_text()
    )
    schema = json.loads(recorded["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"])
    out = OutputSchema("CityInfo", schema, description="Information about a city.")
    body = _body(CLAUDE45, output=out)
    sent = body["outputConfig"]["textFormat"]
    assert sent["type"] == "json_schema"
    assert sent["structure"]["jsonSchema"]["name"] == "CityInfo"
    assert sent["structure"]["jsonSchema"]["description"] == "Information about a city."
    assert json.loads(sent["structure"]["jsonSchema"]["schema"]) == schema  # a JSON string
    assert bedrock_structured_output(model(CLAUDE45)) == "native-strict"


def test_structured_output_elsewhere_forces_an_answer_tool() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    body = _body(NOVA, _ctx(NUser("q"), tools=(TOOL,)), output=OutputSchema("Answer", schema))
    config = body["toolConfig"]
    assert [t["toolSpec"]["name"] for t in config["tools"]] == ["get_temperature", "Answer"]
    assert config["tools"][1]["toolSpec"]["inputSchema"] == {"json": schema}
    assert config["toolChoice"] == {"tool": {"name": "Answer"}}
    assert bedrock_structured_output(model(NOVA)) == "emulated"
    assert bedrock_structured_output(model(NOVA, compat={"supports_strict_mode": True})) == (
        "native-strict"
    )
    with pytest.raises(LlmError) as err:
        _body(NOVA, output=OutputSchema("Answer", schema), tool_choice="auto")
    assert err.value.code == "UNSUPPORTED_OPTION"
    with pytest.raises(LlmError) as err:
        _body(NOVA, output=OutputSchema("Answer", {"type": "array"}))
    assert err.value.code == "UNSUPPORTED_OPTION"


def test_max_tokens_is_clamped_and_provider_options_cannot_overwrite_fields() -> None:
    assert _body(NOVA, max_tokens=100)["inferenceConfig"] == {"maxTokens": 100}
    small = _body(NOVA, model_fields={"context_window": 5000})
    assert small["inferenceConfig"]["maxTokens"] < 1000
    extra = _body(NOVA, provider_options={"requestMetadata": {"team": "a"}})
    assert extra["requestMetadata"] == {"team": "a"}
    with pytest.raises(LlmError) as err:
        _body(NOVA, provider_options={"inferenceConfig": {}})
    assert err.value.code == "INVALID_OPTION"
