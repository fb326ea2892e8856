"""History conversion and request bodies per protocol (spec §4.1, §4.3-4.5; §8.4, §8.5 #113-136)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from providers_fixtures import TEXT_EVENTS, MockServer, Reply

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.config import resolve_profiles
from modelwire.adapters.providers.context import (
    NAssistant,
    NText,
    NToolCall,
    NToolResult,
    NUser,
    to_context,
)
from modelwire.adapters.providers.protocols.anthropic_messages import build_anthropic_request
from modelwire.adapters.providers.protocols.openai_completions import build_completions_request
from modelwire.adapters.providers.protocols.openai_responses import build_responses_request
from modelwire.adapters.providers.protocols.request import RequestOptions
from modelwire.adapters.providers.replay_state import restore_assistant
from modelwire.errors import LlmError
from modelwire.vocab import (
    GenerateOptions,
    Message,
    ModelSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    system_message,
    user_message,
)

CALL = Message(
    "a1",
    "assistant",
    (ReasoningBlock("hmm"), TextBlock("ok"), ToolCallBlock("c1", "weather", '{"city":"Paris"}')),
    ModelSource("other", "x"),
)
RESULT = user_message(
    [ToolResultBlock("c1", (TextBlock("Sun"), ToolResultBlock("c9", (TextBlock("ny!"),))))]
)
TOOLS = [
    ToolSchema(
        name="weather",
        description="d",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    )
]


def _ctx(*messages: Message, system: str | None = None, tools: Any = ()) -> Any:
    return to_context(
        messages,
        system=system,
        tools=tools,
        restore=lambda m, s: restore_assistant(m, s),
        read_image=None,
    )


def _model(api: str, **entry: Any) -> Any:
    config = {
        "providers": {"gw": {"api": api, "base_url": "http://h", "models": [{"id": "m", **entry}]}}
    }
    return resolve_profiles(config)["gw"].models["m"]


def _body(request: Any) -> dict[str, Any]:
    return msgspec.json.decode(request.body)  # type: ignore[no-any-return]


def test_mp_113_124_absent_system_and_tools_omitted() -> None:
    ctx = _ctx()
    assert (ctx.system, ctx.messages, ctx.tools) == (None, (), ())
    body = _body(build_completions_request(_model("openai-completions"), ctx, RequestOptions()))
    assert body["messages"] == [] and "tools" not in body


def test_mp_114_133_135_full_history_conversion() -> None:
    history = (
        system_message("rules"),
        user_message("hi"),
        CALL,
        RESULT,
        user_message([ToolResultBlock("zz", ())]),
    )
    ctx = _ctx(*history)
    kinds = [type(m).__name__ for m in ctx.messages]
    assert kinds == ["NUser", "NUser", "NAssistant", "NToolResult", "NToolResult"]
    assert ctx.messages[0] == NUser("rules")
    assistant = ctx.messages[2]
    assert isinstance(assistant, NAssistant) and assistant.api == "dsh-foreign"
    assert assistant.stop_reason == "toolUse"
    assert assistant.content[2] == NToolCall("c1", "weather", {"city": "Paris"})
    assert ctx.messages[3] == NToolResult(
        tool_call_id="c1", tool_name="weather", content=(NText("Sunny!"),)
    )
    assert ctx.messages[4] == NToolResult(
        tool_call_id="zz", tool_name="unknown", content=(NText("(no output)"),)
    )


@pytest.mark.parametrize(("raw", "parsed"), [("{bad", {}), ("[1,2]", {})])
def test_mp_131_132_malformed_arguments_parse_to_empty(raw: str, parsed: dict[str, Any]) -> None:
    message = Message("a", "assistant", (ToolCallBlock("c", "f", raw),), ModelSource("p", "m"))
    assistant = _ctx(message).messages[0]
    assert assistant.content[0].arguments == parsed


def test_completions_body_messages_tools_and_foreign_thinking() -> None:
    model = _model("openai-completions", reasoning_efforts={"high": "high"})
    ctx = _ctx(user_message("hi"), CALL, RESULT, system="sys", tools=TOOLS)
    body = _body(
        build_completions_request(model, ctx, RequestOptions(effort="high", max_tokens=50))
    )
    assert body["messages"][0] == {"role": "developer", "content": "sys"}
    assistant = body["messages"][2]
    assert assistant["content"] == "hmmok"  # foreign thinking became text
    assert assistant["tool_calls"][0]["function"] == {
        "name": "weather",
        "arguments": '{"city":"Paris"}',
    }
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "Sunny!"}
    assert body["tools"][0]["function"]["strict"] is False
    assert (body["max_completion_tokens"], body["reasoning_effort"], body["store"]) == (
        50,
        "high",
        False,
    )
    assert body["stream_options"] == {"include_usage": True}


def test_completions_orphan_tool_call_gets_synthesized_result() -> None:
    body = _body(
        build_completions_request(
            _model("openai-completions"), _ctx(CALL, user_message("next")), RequestOptions()
        )
    )
    assert body["messages"][1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "No result provided",
    }


def test_anthropic_body_tools_thinking_and_grouped_results() -> None:
    model = _model(
        "anthropic-messages", reasoning_efforts={"off": None, "high": "high"}, max_tokens=64000
    )
    ctx = _ctx(user_message("hi"), CALL, RESULT, system="sys", tools=TOOLS)
    request = build_anthropic_request(
        model, ctx, RequestOptions(effort="high", temperature=0.5, max_tokens=1000)
    )
    body = _body(request)
    assert request.url == "http://h/v1/messages"
    assert body["system"] == [
        {"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tools"][0]["input_schema"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16360, "display": "summarized"}
    assert body["max_tokens"] == 17384 and "temperature" not in body
    assert body["messages"][1]["content"][-1]["type"] == "tool_use"
    result = body["messages"][2]["content"][0]
    assert (result["type"], result["tool_use_id"], result["content"]) == (
        "tool_result",
        "c1",
        "Sunny!",
    )
    assert "interleaved-thinking-2025-05-14" in request.headers["anthropic-beta"]
    off = _body(
        build_anthropic_request(
            model, _ctx(user_message("hi")), RequestOptions(effort="off", temperature=0.5)
        )
    )
    assert off["thinking"] == {"type": "disabled"} and off["temperature"] == 0.5


def test_responses_body_reasoning_and_replayed_items() -> None:
    model = _model("openai-responses", reasoning_efforts={"high": "high"})
    envelope = {
        "kind": "pi-ai",
        "version": 2,
        "api": "openai-responses",
        "provider": "gw",
        "model": "m",
        "stop_reason": "toolUse",
    }
    from modelwire.vocab import ReplayEnvelope

    blocks = (
        {
            "type": "reasoning",
            "thinking_signature": '{"type":"reasoning","id":"rs_1","encrypted_content":"E"}',
        },
        {"type": "text", "text_signature": '{"v":1,"id":"msg_1"}'},
        {"type": "tool-call"},
    )
    native = Message(
        "a",
        "assistant",
        (ReasoningBlock("hmm"), TextBlock("ok"), ToolCallBlock("call_1|fc_1", "weather", "{}")),
        ModelSource("gw", "m", ReplayEnvelope(envelope, blocks)),
    )
    ctx = _ctx(
        user_message("hi"),
        native,
        user_message([ToolResultBlock("call_1|fc_1", (TextBlock("Sun"),))]),
        system="sys",
    )
    request = build_responses_request(
        model, ctx, RequestOptions(effort="high", session_id="s" * 80)
    )
    body = _body(request)
    assert request.url == "http://h/responses"
    items = body["input"]
    assert items[0] == {"role": "developer", "content": "sys"}
    assert items[2] == {"type": "reasoning", "id": "rs_1", "encrypted_content": "E"}
    assert items[3]["id"] == "msg_1" and items[3]["content"][0]["text"] == "ok"
    assert items[4] == {
        "type": "function_call",
        "call_id": "call_1",
        "id": "fc_1",
        "name": "weather",
        "arguments": "{}",
    }
    assert items[5] == {"type": "function_call_output", "call_id": "call_1", "output": "Sun"}
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["store"] is False and body["prompt_cache_key"] == "s" * 64


async def test_mp_42_consumer_stopping_early_tears_down_one_request() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS, delay=0.05)]) as server:
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "gw": {
                        "api": "openai-completions",
                        "base_url": server.url,
                        "api_key_env": "K",
                        "models": [{"id": "m"}],
                    }
                }
            },
            env={"K": "k"},
        )
        stream = adapter.stream(
            GenerateOptions(provider="gw", model="m", messages=(user_message("hi"),))
        )
        first = await stream.__anext__()
        await stream.aclose()  # type: ignore[attr-defined]
    assert first.type == "block-start"
    assert len(server.paths) == 1


async def test_unreachable_endpoint_is_transport_after_conversion() -> None:
    adapter = ProvidersAdapter.from_config(
        {
            "providers": {
                "gw": {
                    "api": "openai-completions",
                    "base_url": "http://127.0.0.1:9",
                    "api_key_env": "K",
                    "models": [{"id": "m"}],
                }
            }
        },
        env={"K": "k"},
    )
    bad = Message("a", "assistant", (TextBlock("x"),), ModelSource("gw", "m", None))
    with pytest.raises(LlmError) as info:
        [
            c
            async for c in adapter.stream(
                GenerateOptions(provider="gw", model="m", messages=(bad,))
            )
        ]
    assert info.value.code == "TRANSPORT"
