"""`google-generative-ai` requests: endpoint and headers, contents (text, system, images, tool
calls and results), tools and tool choice, thinking per model generation, structured output and
`provider_options` (spec: the builder owns every field it writes)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google_fixtures import STRUCTURED, context, model

from modelwire.adapters.providers.context import (
    NAssistant,
    NContext,
    NImage,
    NMessage,
    NText,
    NThinking,
    NToolCall,
    NToolResult,
    NUser,
)
from modelwire.adapters.providers.materialize import ModelDescriptor
from modelwire.adapters.providers.protocols.google_generative import (
    PROTOCOL,
    SKIP_SIGNATURE,
    build_google_request,
)
from modelwire.adapters.providers.protocols.registry import protocol
from modelwire.adapters.providers.protocols.request import RequestOptions
from modelwire.errors import LlmError
from modelwire.vocab import OutputSchema, ToolChoice, ToolChoiceTool, ToolSchema, user_message

WEATHER = ToolSchema(
    name="weather",
    description="Weather of a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def _ctx(*messages: NMessage, system: str | None = None, tools: Any = ()) -> NContext:
    return NContext(system, tuple(messages), tuple(tools))


def _body(ctx: NContext, desc: ModelDescriptor | None = None, **options: Any) -> dict[str, Any]:
    request = build_google_request(desc or model(), ctx, RequestOptions(**options))
    body: dict[str, Any] = json.loads(request.body)
    return body


def _assistant(
    *content: NText | NThinking | NToolCall,
    model_id: str = "gemini-2.5-flash",
    provider: str = "gem",
) -> NAssistant:
    return NAssistant(
        content=content,
        api="google-generative-ai",
        provider=provider,
        model=model_id,
        stop_reason="toolUse" if any(isinstance(c, NToolCall) for c in content) else "stop",
    )


def test_the_registry_serves_the_protocol_and_its_key_rides_in_x_goog_api_key() -> None:
    assert protocol("google-generative-ai") is PROTOCOL
    assert PROTOCOL.key_headers("k-123") == {"x-goog-api-key": "k-123"}
    assert PROTOCOL.key_header_names == ("x-goog-api-key",)
    assert PROTOCOL.structured_output(model()) == "native-strict"


def test_the_endpoint_is_stream_generate_content_with_alt_sse_and_no_key() -> None:
    request = build_google_request(model(), _ctx(NUser("hi")), RequestOptions())
    assert request.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
        ":streamGenerateContent?alt=sse"
    )
    assert "key=" not in request.url
    assert request.headers == {"Accept": "text/event-stream"}


def test_a_model_resource_path_is_used_as_is_and_trailing_slashes_are_dropped() -> None:
    desc = model("tunedModels/my-tune-7", base_url="http://gw/v1beta/")
    request = build_google_request(desc, _ctx(NUser("hi")), RequestOptions())
    assert request.url == "http://gw/v1beta/tunedModels/my-tune-7:streamGenerateContent?alt=sse"


def test_text_and_system_prompt() -> None:
    body = _body(_ctx(NUser("Hello"), system="Be brief."), max_tokens=100, temperature=0.2)
    assert body == {
        "contents": [{"role": "user", "parts": [{"text": "Hello"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 100, "temperature": 0.2},
    }
    assert list(body) == ["contents", "systemInstruction", "generationConfig"]


def test_an_empty_system_prompt_and_empty_user_text_are_not_sent() -> None:
    body = _body(_ctx(NUser(""), NUser("next"), system=""))
    assert body["contents"] == [{"role": "user", "parts": [{"text": "next"}]}]
    assert "systemInstruction" not in body


def test_max_output_tokens_is_the_output_cap() -> None:
    desc = model(context_window=10_000, max_tokens=8_000)
    assert _body(_ctx(NUser("x" * 4000)), desc)["generationConfig"]["maxOutputTokens"] == 4904


def test_images_are_inline_data_parts() -> None:
    message = NUser((NText("What is this?"), NImage("image/png", "iVBORw0KGgo=")))
    assert _body(_ctx(message))["contents"][0]["parts"] == [
        {"text": "What is this?"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
    ]


def test_tools_are_function_declarations_with_their_json_schema() -> None:
    body = _body(_ctx(NUser("weather?"), tools=[WEATHER]))
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "weather",
                    "description": "Weather of a city",
                    "parametersJsonSchema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                }
            ]
        }
    ]
    assert "toolConfig" not in body


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        (ToolChoiceTool("weather"), {"mode": "ANY", "allowedFunctionNames": ["weather"]}),
    ],
)
def test_tool_choice_is_the_function_calling_mode(choice: ToolChoice, config: Any) -> None:
    body = _body(_ctx(NUser("weather?"), tools=[WEATHER]), tool_choice=choice)
    assert body["toolConfig"] == {"functionCallingConfig": config}


def test_parallel_tool_calls_false_cannot_be_honoured() -> None:
    ctx = _ctx(NUser("weather?"), tools=[WEATHER])
    with pytest.raises(LlmError) as info:
        _body(ctx, parallel_tool_calls=False)
    assert info.value.code == "UNSUPPORTED_OPTION" and "gem" in info.value.message
    assert "toolConfig" not in _body(ctx, parallel_tool_calls=True)  # the default behaviour


@pytest.mark.parametrize(
    ("model_id", "effort", "thinking"),
    [
        ("gemini-2.5-flash", "minimal", {"includeThoughts": True, "thinkingBudget": 128}),
        ("gemini-2.5-flash", "high", {"includeThoughts": True, "thinkingBudget": 24576}),
        ("gemini-2.5-pro", "high", {"includeThoughts": True, "thinkingBudget": 32768}),
        ("gemini-2.5-flash-lite", "minimal", {"includeThoughts": True, "thinkingBudget": 512}),
        ("gemini-2.5-flash", "medium", {"includeThoughts": True, "thinkingBudget": 8192}),
        ("gemini-2.0-flash-thinking", "low", {"includeThoughts": True, "thinkingBudget": -1}),
        ("gemini-3-pro-preview", "low", {"includeThoughts": True, "thinkingLevel": "LOW"}),
        ("gemini-3.1-pro-preview", "medium", {"includeThoughts": True, "thinkingLevel": "HIGH"}),
        (
            "gemini-3-flash-preview",
            "minimal",
            {"includeThoughts": True, "thinkingLevel": "MINIMAL"},
        ),
        ("gemini-3-flash-preview", "medium", {"includeThoughts": True, "thinkingLevel": "MEDIUM"}),
        ("gemini-flash-latest", "low", {"includeThoughts": True, "thinkingLevel": "LOW"}),
        ("gemma-4-27b-it", "low", {"includeThoughts": True, "thinkingLevel": "MINIMAL"}),
        ("gemini-2.5-flash", "off", {"thinkingBudget": 0}),
        ("gemini-2.5-pro", None, {"thinkingBudget": 0}),
        ("gemini-3-pro-preview", "off", {"thinkingLevel": "LOW"}),
        ("gemini-3-flash-preview", "off", {"thinkingLevel": "MINIMAL"}),
    ],
)
def test_thinking_config_follows_the_model_generation(
    model_id: str, effort: str | None, thinking: dict[str, Any]
) -> None:
    body = _body(_ctx(NUser("hi")), model(model_id, reasoning=True), effort=effort)
    assert body["generationConfig"]["thinkingConfig"] == thinking


def test_custom_thinking_budgets_and_level_map_values_win() -> None:
    budgets = _body(
        _ctx(NUser("hi")),
        model("gemini-2.5-flash", reasoning=True),
        effort="low",
        thinking_budgets={"low": 999},
    )
    assert budgets["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 999
    mapped = _body(
        _ctx(NUser("hi")),
        model("gemini-3-pro-preview", reasoning=True, level_map={"xhigh": "high"}),
        effort="xhigh",
    )
    assert mapped["generationConfig"]["thinkingConfig"]["thinkingLevel"] == "HIGH"


def test_no_thinking_config_without_reasoning_or_when_off_is_declared_absent() -> None:
    assert (
        "thinkingConfig" not in _body(_ctx(NUser("hi")), model(), effort="high")["generationConfig"]
    )
    desc = model("gemini-3-pro-preview", reasoning=True, level_map={"off": None})
    assert "thinkingConfig" not in _body(_ctx(NUser("hi")), desc)["generationConfig"]


def test_structured_output_matches_the_recorded_gemini_request() -> None:
    """fantasy's gemini-2.5-flash recording: the same prompt, schema and cap build its body."""
    recorded = json.loads(
        (STRUCTURED / "fantasy-gemini25-flash-response-json-schema.request.json").read_text()
    )
    schema = recorded["generationConfig"]["responseJsonSchema"]
    prompt = recorded["contents"][0]["parts"][0]["text"]
    body = _body(_ctx(NUser(prompt)), max_tokens=4000, output=OutputSchema("person", schema))
    assert body == recorded


def test_structured_output_description_joins_the_schema() -> None:
    out = OutputSchema("answer", {"type": "object"}, "The final answer.")
    config = _body(_ctx(NUser("q")), output=out)["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == {"type": "object", "description": "The final answer."}


def test_a_replayed_turn_keeps_thoughts_text_and_calls_with_their_signatures() -> None:
    turn = _assistant(
        NThinking("plan", "VGhpbms="),
        NText("Calling.", "VGV4dA=="),
        NToolCall("c1", "weather", {"city": "Paris"}, "Q2FsbA=="),
    )
    result = NToolResult(tool_call_id="c1", tool_name="weather", content=(NText("Sunny"),))
    body = _body(_ctx(NUser("weather?"), turn, result, NUser("thanks"), tools=[WEATHER]))
    assert body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"thought": True, "text": "plan", "thoughtSignature": "VGhpbms="},
                {"text": "Calling.", "thoughtSignature": "VGV4dA=="},
                {
                    "functionCall": {"name": "weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "Q2FsbA==",
                },
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "weather", "response": {"output": "Sunny"}}}],
        },
        {"role": "user", "parts": [{"text": "thanks"}]},
    ]


def test_tool_results_of_one_turn_share_a_user_turn_and_errors_use_the_error_key() -> None:
    turn = _assistant(
        NToolCall("c1", "weather", {"city": "Paris"}), NToolCall("c2", "weather", {"city": "Oslo"})
    )
    ok = NToolResult(tool_call_id="c1", tool_name="weather", content=(NText("Sunny"),))
    bad = NToolResult(
        tool_call_id="c2", tool_name="weather", content=(NText("no data"),), is_error=True
    )
    contents = _body(_ctx(NUser("q"), turn, ok, bad, tools=[WEATHER]))["contents"]
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "weather", "response": {"output": "Sunny"}}},
            {"functionResponse": {"name": "weather", "response": {"error": "no data"}}},
        ],
    }


def test_an_orphaned_call_gets_a_synthesized_error_result() -> None:
    turn = _assistant(NToolCall("c1", "weather", {"city": "Paris"}))
    contents = _body(_ctx(NUser("q"), turn, NUser("never mind")))["contents"]
    assert contents[2]["parts"][0]["functionResponse"]["response"] == {
        "error": "No result provided"
    }


IMAGE = NImage("image/png", "aW1n")


def test_tool_result_images_nest_in_the_response_on_gemini_3() -> None:
    desc = model("gemini-3-flash-preview")
    turn = _assistant(NToolCall("c1", "shot", {}, "U2ln"), model_id="gemini-3-flash-preview")
    result = NToolResult(tool_call_id="c1", tool_name="shot", content=(IMAGE,))
    contents = _body(_ctx(NUser("q"), turn, result), desc)["contents"]
    assert contents[2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "name": "shot",
                    "response": {"output": "(see attached image)"},
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": "aW1n"}}],
                }
            }
        ],
    }


def test_tool_result_images_follow_in_a_user_turn_before_gemini_3() -> None:
    turn = _assistant(NToolCall("c1", "shot", {}))
    result = NToolResult(tool_call_id="c1", tool_name="shot", content=(NText("done"), IMAGE))
    contents = _body(_ctx(NUser("q"), turn, result))["contents"]
    assert contents[2]["parts"][0]["functionResponse"]["response"] == {"output": "done"}
    assert contents[3] == {
        "role": "user",
        "parts": [
            {"text": "Tool result image:"},
            {"inlineData": {"mimeType": "image/png", "data": "aW1n"}},
        ],
    }


def test_tool_result_images_are_dropped_for_a_text_only_model() -> None:
    turn = _assistant(NToolCall("c1", "shot", {}))
    result = NToolResult(tool_call_id="c1", tool_name="shot", content=(NText("done"), IMAGE))
    contents = _body(_ctx(NUser("q"), turn, result), model(image=False))["contents"]
    assert len(contents) == 3 and "inlineData" not in json.dumps(contents)


def test_call_ids_travel_only_for_models_that_need_them() -> None:
    desc = model("claude-sonnet-4@20250514")
    turn = _assistant(NToolCall("c|1", "weather", {}), model_id="other")
    result = NToolResult(tool_call_id="c|1", tool_name="weather", content=(NText("ok"),))
    contents = _body(_ctx(NUser("q"), turn, result), desc)["contents"]
    assert contents[1]["parts"][0]["functionCall"]["id"] == "c_1"
    assert contents[2]["parts"][0]["functionResponse"]["id"] == "c_1"
    plain = _body(_ctx(NUser("q"), turn, result))["contents"]
    assert "id" not in plain[1]["parts"][0]["functionCall"]


def test_gemini_3_gets_the_skip_value_on_the_first_call_of_an_unsigned_turn() -> None:
    """A turn from another model (its signatures stripped) replayed to Gemini 3: the first call
    carries Google's documented skip value; a signed turn is sent as recorded."""
    desc = model("gemini-3-pro-preview")
    foreign = _assistant(
        NToolCall("c1", "weather", {"city": "A"}, "Zm9yZWlnbg=="),
        NToolCall("c2", "weather", {"city": "B"}),
        model_id="gpt-5",
        provider="openai",
    )
    results = [
        NToolResult(tool_call_id=i, tool_name="weather", content=(NText("ok"),))
        for i in ("c1", "c2")
    ]
    parts = _body(_ctx(NUser("q"), foreign, *results), desc)["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in parts] == [SKIP_SIGNATURE, None]
    same = _assistant(
        NToolCall("c1", "weather", {"city": "A"}, "c2lnbmVk"),
        NToolCall("c2", "weather", {"city": "B"}),
        model_id="gemini-3-pro-preview",
    )
    parts = _body(_ctx(NUser("q"), same, *results), desc)["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in parts] == ["c2lnbmVk", None]
    older = _body(_ctx(NUser("q"), foreign, *results), model())["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in older] == [None, None]
    alias = _body(_ctx(NUser("q"), foreign, *results), model("gemini-flash-latest"))
    assert alias["contents"][1]["parts"][0]["thoughtSignature"] == SKIP_SIGNATURE


def test_a_signature_that_is_not_base64_is_never_sent() -> None:
    turn = _assistant(NText("hi", "not base64!"), NToolCall("c1", "f", {}, "abc"))
    parts = _body(_ctx(NUser("q"), turn))["contents"][1]["parts"]
    assert all("thoughtSignature" not in p for p in parts)


def test_foreign_thinking_becomes_plain_text() -> None:
    turn = _assistant(NThinking("I reasoned", "c2ln"), NText("Answer"), model_id="claude")
    parts = _body(_ctx(NUser("q"), turn, NUser("more")))["contents"][1]["parts"]
    assert parts == [{"text": "I reasoned"}, {"text": "Answer"}]


def test_provider_options_are_merged_and_owned_fields_refused() -> None:
    safety = [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
    body = _body(_ctx(NUser("hi")), provider_options={"safetySettings": safety})
    assert body["safetySettings"] == safety
    with pytest.raises(LlmError) as info:
        _body(_ctx(NUser("hi")), provider_options={"generationConfig": {"topK": 3}})
    assert info.value.code == "INVALID_OPTION"


def test_history_from_harness_messages_round_trips_through_to_context() -> None:
    body = _body(context(user_message("Hello there")))
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Hello there"}]}]
