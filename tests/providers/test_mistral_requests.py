"""The `mistral-conversations` request: URL, headers and body (Mistral tool-call ids, reasoning
models, tool choice, structured output, sampling, caching, replay of thinking)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from compat_fixtures import descriptor, folder, request_body

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
from modelwire.adapters.providers.protocols import registry
from modelwire.adapters.providers.protocols.mistral_body import ToolIds, mistral_tool_id, short_hash
from modelwire.adapters.providers.protocols.mistral_conversations import (
    PROTOCOL,
    build_mistral_request,
)
from modelwire.adapters.providers.protocols.request import RequestOptions
from modelwire.adapters.providers.protocols.spec import bearer
from modelwire.errors import LlmError
from modelwire.vocab import OutputSchema, ToolChoiceTool, ToolSchema

API = "mistral-conversations"
MISTRAL_ID = re.compile(r"^[a-zA-Z0-9]{9}$")
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
WEATHER = ToolSchema(
    name="get_weather", description="finds the weather for a given city", parameters=WEATHER_SCHEMA
)


def _model(model_id: str = "mistral-small-2506", **kw: Any) -> Any:
    kw.setdefault("base_url", "https://api.mistral.ai")
    return descriptor(API, model_id, provider="mistral", **kw)


def _ctx(*messages: NMessage, system: str | None = None, tools: Any = ()) -> NContext:
    return NContext(system, tuple(messages), tuple(tools))


def _body(model: Any, ctx: NContext, **options: Any) -> dict[str, Any]:
    request = build_mistral_request(model, ctx, RequestOptions(**options))
    body: dict[str, Any] = json.loads(request.body)
    return body


def _assistant(*content: Any, api: str = API, provider: str = "mistral", model: str = "") -> Any:
    return NAssistant(
        content=content,
        api=api,
        provider=provider,
        model=model or "mistral-small-2506",
        stop_reason="toolUse" if any(isinstance(c, NToolCall) for c in content) else "stop",
    )


def test_mistral_request_posts_to_v1_chat_completions_with_sse_accept() -> None:
    request = build_mistral_request(_model(), _ctx(NUser("hi")), RequestOptions())
    assert request.url == "https://api.mistral.ai/v1/chat/completions"
    assert request.headers == {"Accept": "text/event-stream"}
    body = json.loads(request.body)
    assert body["model"] == "mistral-small-2506"
    assert body["stream"] is True
    assert body["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("base", ["https://api.mistral.ai/v1", "https://api.mistral.ai/v1/"])
def test_mistral_base_url_already_ending_in_v1_keeps_it_once(base: str) -> None:
    request = build_mistral_request(_model(base_url=base), _ctx(NUser("hi")), RequestOptions())
    assert request.url == "https://api.mistral.ai/v1/chat/completions"


def test_mistral_key_travels_as_a_bearer_token() -> None:
    assert registry.protocol(API) is PROTOCOL
    assert PROTOCOL.api == API
    assert PROTOCOL.key_headers is bearer
    assert PROTOCOL.structured_output(_model()) == "native-strict"


def test_mistral_body_sends_system_sampling_and_output_cap() -> None:
    body = _body(_model(), _ctx(NUser("hi"), system="be brief"), temperature=0.3, max_tokens=77)
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 77
    assert "prompt_mode" not in body and "reasoning_effort" not in body
    assert "tools" not in body and "tool_choice" not in body


def test_mistral_output_cap_defaults_to_the_model_limit_clamped_to_the_context() -> None:
    assert _body(_model(max_tokens=4000), _ctx(NUser("hi")))["max_tokens"] == 4000
    small = _model(max_tokens=100_000, context_window=8192)
    assert _body(small, _ctx(NUser("hi")))["max_tokens"] == 8192 - 1 - 4096


def test_mistral_tools_are_functions_with_strict_false() -> None:
    body = _body(_model(), _ctx(NUser("weather?"), tools=[WEATHER]))
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "finds the weather for a given city",
                "parameters": WEATHER_SCHEMA,
                "strict": False,
            },
        }
    ]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "any"),
        (ToolChoiceTool("get_weather"), {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
def test_mistral_tool_choice_maps_required_to_any_and_names_a_function(
    choice: Any, wire: Any
) -> None:
    body = _body(_model(), _ctx(NUser("x"), tools=[WEATHER]), tool_choice=choice)
    assert body["tool_choice"] == wire


@pytest.mark.parametrize("parallel", [True, False])
def test_mistral_parallel_tool_calls_is_sent_as_given(parallel: bool) -> None:
    body = _body(_model(), _ctx(NUser("x"), tools=[WEATHER]), parallel_tool_calls=parallel)
    assert body["parallel_tool_calls"] is parallel


@pytest.mark.parametrize("strict", [True, False])
def test_mistral_structured_output_is_a_json_schema_response_format_with_strict(
    strict: bool,
) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    out = OutputSchema("answer", schema, description="the answer", strict=strict)
    body = _body(_model(), _ctx(NUser("x")), output=out)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "description": "the answer",
            "schema": schema,
            "strict": strict,
        },
    }


def test_mistral_magistral_with_an_effort_sends_prompt_mode_reasoning() -> None:
    model = _model("magistral-medium-latest", reasoning=True)
    body = _body(model, _ctx(NUser("x")), effort="high")
    assert body["prompt_mode"] == "reasoning"
    assert "reasoning_effort" not in body


@pytest.mark.parametrize("effort", [None, "off"])
def test_mistral_reasoning_model_without_effort_sends_no_reasoning_field(
    effort: str | None,
) -> None:
    for model_id in ("magistral-medium-latest", "mistral-small-latest"):
        body = _body(_model(model_id, reasoning=True), _ctx(NUser("x")), effort=effort)
        assert "prompt_mode" not in body and "reasoning_effort" not in body


def test_mistral_effort_models_send_reasoning_effort_mapped_or_high() -> None:
    plain = _model("mistral-small-latest", reasoning=True)
    assert _body(plain, _ctx(NUser("x")), effort="low")["reasoning_effort"] == "high"
    mapped = _model("mistral-medium-3.5", reasoning=True, level_map={"low": "low", "off": "none"})
    assert _body(mapped, _ctx(NUser("x")), effort="low")["reasoning_effort"] == "low"
    assert _body(mapped, _ctx(NUser("x")), effort="off")["reasoning_effort"] == "none"
    assert "prompt_mode" not in _body(mapped, _ctx(NUser("x")), effort="low")


def test_mistral_non_reasoning_model_ignores_the_effort() -> None:
    body = _body(_model(), _ctx(NUser("x")), effort="high")
    assert "prompt_mode" not in body and "reasoning_effort" not in body


def test_mistral_session_id_becomes_prompt_cache_key_and_x_affinity() -> None:
    request = build_mistral_request(
        _model(), _ctx(NUser("x")), RequestOptions(session_id="sess-42")
    )
    assert json.loads(request.body)["prompt_cache_key"] == "sess-42"
    assert request.headers["x-affinity"] == "sess-42"
    off = build_mistral_request(
        _model(), _ctx(NUser("x")), RequestOptions(session_id="sess-42", cache_retention="none")
    )
    assert "prompt_cache_key" not in json.loads(off.body)
    assert "x-affinity" not in off.headers


def test_mistral_short_hash_matches_pi_ai() -> None:
    # values computed by pi-ai's `shortHash` (utils/hash.js) under Node
    assert short_hash("call_abc|fc_123") == "jp01dsxufnom"
    assert short_hash("toolu_01XyZ") == "1gvrqgp1mebbpk"
    assert short_hash("") == "k4n83c7h0j2b"
    assert short_hash("é😀x") == "1i488u5srdge7"


def test_mistral_tool_id_keeps_nine_alphanumerics_and_hashes_the_rest() -> None:
    assert mistral_tool_id("EscTeQY62") == "EscTeQY62"
    assert mistral_tool_id("Esc-TeQ_Y62") == "EscTeQY62"
    for raw in ("call_abc|fc_123", "toolu_01XyZ", "x", "", "chatcmpl-tool-9f149c74c42f265b"):
        assert MISTRAL_ID.match(mistral_tool_id(raw))
        assert mistral_tool_id(raw) == mistral_tool_id(raw)  # deterministic
    # pi-ai's deriveMistralToolCallId under Node: the hash of the alphanumerics, 9 characters
    assert mistral_tool_id("call_abc|fc_123") == "18g6kob34"
    assert mistral_tool_id("toolcall:0") == "toolcall0"  # nine alphanumerics remain


def test_mistral_tool_ids_never_collide_within_one_request() -> None:
    ids = ToolIds(["EscTeQY62"])
    # these three normalize to the same nine alphanumerics as the reserved id, or to each other
    raws = ["Esc-TeQY62", "Esc_TeQY62", "EscTeQY62"]
    got = [ids(r) for r in raws]
    assert got[2] == "EscTeQY62"  # a valid id keeps itself
    assert len(set(got)) == 3
    assert all(MISTRAL_ID.match(g) for g in got)
    assert [ids(r) for r in raws] == got  # the same answer every time


def test_mistral_foreign_tool_ids_are_normalized_and_results_carry_the_same_id() -> None:
    calls = [
        NToolCall(f"call_{i}|fc_{'x' * 40}{i}", "get_weather", {"city": str(i)}) for i in (1, 2)
    ]
    ctx = _ctx(
        NUser("weather?"),
        _assistant(*calls, api="openai-responses", provider="openai", model="gpt-5"),
        *(
            NToolResult(tool_call_id=c.id, tool_name="get_weather", content=(NText("sun"),))
            for c in calls
        ),
        tools=[WEATHER],
    )
    messages = _body(_model(), ctx)["messages"]
    assistant, first, second = messages[1], messages[2], messages[3]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert all(MISTRAL_ID.match(i) for i in ids)
    assert len(set(ids)) == 2
    assert [first["tool_call_id"], second["tool_call_id"]] == ids
    assert assistant["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city":"1"}',
    }
    assert first == {
        "role": "tool",
        "tool_call_id": ids[0],
        "name": "get_weather",
        "content": [{"type": "text", "text": "sun"}],
    }


def test_mistral_same_model_ids_that_are_not_nine_characters_are_normalized_too() -> None:
    call = NToolCall("chatcmpl-tool-9f149c74c42f265b", "webSearchTool", {"query": "q"})
    ctx = _ctx(
        NUser("x"),
        _assistant(call),
        NToolResult(tool_call_id=call.id, tool_name="webSearchTool", content=(NText("r"),)),
    )
    messages = _body(_model(), ctx)["messages"]
    new_id = messages[1]["tool_calls"][0]["id"]
    assert MISTRAL_ID.match(new_id)
    assert messages[2]["tool_call_id"] == new_id


def test_mistral_orphaned_call_gets_an_error_result_with_the_same_id() -> None:
    call = NToolCall("toolu_0123456789abcdef", "get_weather", {})
    messages = _body(_model(), _ctx(NUser("x"), _assistant(call, api="anthropic-messages")))[
        "messages"
    ]
    assert messages[2]["tool_call_id"] == messages[1]["tool_calls"][0]["id"]
    assert messages[2]["content"] == [{"type": "text", "text": "[tool error] No result provided"}]


def test_mistral_same_model_thinking_is_replayed_as_a_thinking_chunk() -> None:
    model = _model("magistral-medium-latest", reasoning=True)
    turn = _assistant(NThinking("let me think"), NText("4"), model="magistral-medium-latest")
    messages = _body(model, _ctx(NUser("2+2?"), turn, NUser("and 3+3?")))["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "let me think"}]},
            {"type": "text", "text": "4"},
        ],
    }


def test_mistral_foreign_thinking_is_replayed_as_text() -> None:
    turn = _assistant(
        NThinking("pondering", signature="sig"),
        NText("4"),
        api="anthropic-messages",
        provider="anthropic",
        model="claude",
    )
    messages = _body(_model(), _ctx(NUser("2+2?"), turn, NUser("ok")))["messages"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "pondering"},
        {"type": "text", "text": "4"},
    ]


def test_mistral_blank_assistant_turn_is_dropped() -> None:
    messages = _body(_model(), _ctx(NUser("a"), _assistant(NText("  ")), NUser("b")))["messages"]
    assert [m["role"] for m in messages] == ["user", "user"]


def test_mistral_images_are_data_urls_for_vision_models_and_omitted_otherwise() -> None:
    image = NImage("image/png", "AAAA")
    user = NUser((NText("look"), image))
    vision = _model("pixtral-12b", modalities=("text", "image"))
    assert _body(vision, _ctx(user))["messages"][0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": "data:image/png;base64,AAAA"},
    ]
    assert _body(_model(), _ctx(user))["messages"][0]["content"] == [
        {"type": "text", "text": "look"}
    ]
    only_image = _body(_model(), _ctx(NUser((image,))))["messages"][0]
    assert only_image["content"] == "(image omitted: model does not support images)"


def test_mistral_tool_result_text_marks_errors_and_images() -> None:
    call = NToolCall("abcdefghi", "shot", {})
    image = NImage("image/png", "AAAA")
    ctx = _ctx(
        NUser("x"),
        _assistant(call),
        NToolResult(tool_call_id="abcdefghi", tool_name="shot", content=(image,), is_error=True),
    )
    vision = _model("pixtral-12b", modalities=("text", "image"))
    assert _body(vision, ctx)["messages"][2]["content"] == [
        {"type": "text", "text": "[tool error] (see attached image)"},
        {"type": "image_url", "image_url": "data:image/png;base64,AAAA"},
    ]
    assert _body(_model(), ctx)["messages"][2]["content"] == [
        {"type": "text", "text": "[tool error] (image omitted: model does not support images)"}
    ]


def test_mistral_provider_options_are_appended_and_declared_keys_refused() -> None:
    body = _body(_model(), _ctx(NUser("x")), provider_options={"safe_prompt": True})
    assert body["safe_prompt"] is True
    with pytest.raises(LlmError) as info:
        _body(_model(), _ctx(NUser("x")), provider_options={"prompt_mode": "reasoning"})
    assert info.value.code == "INVALID_OPTION"


def test_mistral_recorded_tool_call_request_matches_what_we_send() -> None:
    """The recorded request (Mistral's own SDK) and ours agree on every field both send."""
    sse = folder("mistral") / "openinference-mistral-small-tool-call.sse"
    recorded = request_body(sse)
    assert recorded is not None
    schema = recorded["tools"][0]["function"]
    tool = ToolSchema(schema["name"], schema["description"], schema["parameters"])
    ours = _body(
        _model("mistral-small-latest"),
        _ctx(NUser(recorded["messages"][0]["content"]), tools=[tool]),
        temperature=recorded["temperature"],
        tool_choice="required",
    )
    for key in ("model", "stream", "messages", "temperature", "tool_choice"):
        assert ours[key] == recorded[key]
    assert ours["tools"][0]["function"]["parameters"] == schema["parameters"]
