"""OpenAI custom tools (free-form text input, optional grammar) and the provider client tools
(`apply_patch`, `local_shell`) on the wire: the tool definitions in the shapes of the OpenAI API
reference for Responses and Chat Completions, their calls streamed as tool calls with raw input
(or the operation / action JSON), and their calls and results in history; free-text tools are
refused before any I/O where the protocol has none."""

from __future__ import annotations

import json
from typing import Any

import pytest
from compat_fixtures import descriptor
from providers_fixtures import MockServer, Reply, sse

from modelwire import FreeText, ToolSchema
from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.context import (
    NAssistant,
    NContext,
    NText,
    NToolCall,
    NToolResult,
    NUser,
)
from modelwire.adapters.providers.protocols import protocol, translate_sse
from modelwire.adapters.providers.protocols.request import RequestOptions
from modelwire.assembler import BlockAssembler
from modelwire.errors import LlmError
from modelwire.vocab import GenerateOptions, ToolCallBlock, ToolChoiceTool, user_message

SQL = ToolSchema(
    "run_sql",
    "Run one SQL query.",
    {"type": "object", "properties": {"input": {"type": "string"}}},
    free_text=FreeText(grammar='start: "SELECT" /.+/', syntax="lark"),
)
NOTE = ToolSchema("note", "", {}, free_text=FreeText())
PATCH = ToolSchema("apply_patch", "Apply a patch.", {"type": "object"}, provider_tool="apply_patch")
SHELL = ToolSchema("local_shell", "Run a command.", {"type": "object"}, provider_tool="local_shell")
WEATHER = ToolSchema(
    "weather", "Weather of a city.", {"type": "object", "properties": {"city": {"type": "string"}}}
)


def _body(api: str, ctx: NContext, **options: Any) -> dict[str, Any]:
    built = protocol(api).build(descriptor(api, "gpt-5"), ctx, RequestOptions(**options))
    body: dict[str, Any] = json.loads(built.body)
    return body


def test_responses_sends_custom_and_provider_tools_in_the_reference_shapes() -> None:
    ctx = NContext(None, (NUser("q"),), (SQL, NOTE, PATCH, SHELL, WEATHER))
    body = _body("openai-responses", ctx, tool_choice=ToolChoiceTool("run_sql"))
    assert body["tools"] == [
        {
            "type": "custom",
            "name": "run_sql",
            "description": "Run one SQL query.",
            "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "SELECT" /.+/'},
        },
        {"type": "custom", "name": "note", "format": {"type": "text"}},
        {"type": "apply_patch"},
        {"type": "local_shell"},
        {
            "type": "function",
            "name": "weather",
            "description": "Weather of a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    ]
    assert body["tool_choice"] == {"type": "custom", "name": "run_sql"}
    patch_choice = _body("openai-responses", ctx, tool_choice=ToolChoiceTool("apply_patch"))
    assert patch_choice["tool_choice"] == {"type": "apply_patch"}


def test_chat_sends_free_text_tools_as_custom_and_provider_tools_as_functions() -> None:
    ctx = NContext(None, (NUser("q"),), (SQL, NOTE, PATCH))
    body = _body("openai-completions", ctx, tool_choice=ToolChoiceTool("note"))
    assert body["tools"][:2] == [
        {
            "type": "custom",
            "custom": {
                "name": "run_sql",
                "description": "Run one SQL query.",
                "format": {
                    "type": "grammar",
                    "grammar": {"definition": 'start: "SELECT" /.+/', "syntax": "lark"},
                },
            },
        },
        {"type": "custom", "custom": {"name": "note", "format": {"type": "text"}}},
    ]
    assert body["tools"][2]["type"] == "function"  # Chat Completions has no apply_patch tool
    assert body["tools"][2]["function"]["name"] == "apply_patch"
    assert body["tool_choice"] == {"type": "custom", "custom": {"name": "note"}}


def _history(call: NToolCall) -> NContext:
    answer = NAssistant(
        content=(call,), api="dsh-foreign", provider="x", model="y", stop_reason="toolUse"
    )
    result = NToolResult(tool_call_id=call.id, tool_name=call.name, content=(NText("done"),))
    return NContext(None, (NUser("q"), answer, result), (SQL, PATCH, SHELL))


def test_history_carries_custom_calls_and_their_outputs_on_responses() -> None:
    custom = NToolCall("call_1", "run_sql", {"input": "SELECT 1"}, None, "custom", "SELECT 1")
    items = _body("openai-responses", _history(custom))["input"]
    assert items[1] == {
        "type": "custom_tool_call",
        "call_id": "call_1",
        "name": "run_sql",
        "input": "SELECT 1",
    }
    assert items[2] == {"type": "custom_tool_call_output", "call_id": "call_1", "output": "done"}
    patch = {"type": "create_file", "path": "a.md", "diff": "+x\n"}
    items = _body(
        "openai-responses", _history(NToolCall("call_2", "apply_patch", patch, None, "apply_patch"))
    )["input"]
    assert items[1] == {
        "type": "apply_patch_call",
        "call_id": "call_2",
        "status": "completed",
        "operation": patch,
    }
    assert items[2] == {
        "type": "apply_patch_call_output",
        "call_id": "call_2",
        "status": "completed",
        "output": "done",
    }
    action = {"type": "exec", "command": ["ls"], "env": {}}
    call = NToolCall("call_3|lsh_1", "local_shell", action, None, "local_shell")
    items = _body("openai-responses", _history(call))["input"]
    assert items[1] == {
        "type": "local_shell_call",
        "id": "call_3",  # foreign history: ids are normalized, the item id is not kept
        "call_id": "call_3",
        "status": "completed",
        "action": action,
    }
    assert items[2] == {"type": "local_shell_call_output", "id": "call_3", "output": "done"}


def test_same_model_history_sends_the_client_call_item_back_as_it_came() -> None:
    item = '{"id":"lsh_1","type":"local_shell_call","status":"completed","action":{"type":"exec","command":["ls","-a"],"env":{}},"call_id":"call_3"}'
    action = {"type": "exec", "command": ["ls", "-a"], "env": {}}
    call = NToolCall("call_3|lsh_1", "local_shell", action, None, "local_shell", None, item)
    answer = NAssistant(
        content=(call,), api="openai-responses", provider="r", model="gpt-5", stop_reason="toolUse"
    )
    result = NToolResult(tool_call_id=call.id, tool_name="local_shell", content=(NText("a b"),))
    ctx = NContext(None, (NUser("q"), answer, result), (SHELL,))
    built = protocol("openai-responses").build(
        descriptor("openai-responses", "gpt-5", provider="r"), ctx, RequestOptions()
    )
    assert item.encode() in built.body  # byte for byte
    assert json.loads(built.body)["input"][2] == {
        "type": "local_shell_call_output",
        "id": "call_3",
        "output": "a b",
    }


def test_history_carries_custom_calls_on_chat() -> None:
    custom = NToolCall("call_1", "run_sql", {"input": "SELECT 1"}, None, "custom", "SELECT 1")
    messages = _body("openai-completions", _history(custom))["messages"]
    assert messages[1]["tool_calls"] == [
        {"id": "call_1", "type": "custom", "custom": {"name": "run_sql", "input": "SELECT 1"}}
    ]
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "done"}


def test_chat_streams_a_custom_tool_call_with_its_raw_input() -> None:
    head = {"index": 0, "id": "call_9", "type": "custom", "custom": {"name": "run_sql"}}
    more = {"index": 0, "type": "custom", "custom": {"input": "SELECT * FROM t"}}
    rest = {"index": 0, "custom": {"input": ' WHERE a = "b"'}}
    chunks = translate_sse(
        "openai-completions",
        sse(
            {"choices": [{"index": 0, "delta": {"tool_calls": [head]}}]},
            {"choices": [{"index": 0, "delta": {"tool_calls": [more]}}]},
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [rest]}, "finish_reason": "tool_calls"}
                ]
            },
            "[DONE]",
        ),
        provider="r",
        model="m",
    )
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    assert asm.finish.kind == "tool-calls"
    assert asm.blocks() == [ToolCallBlock("call_9", "run_sql", 'SELECT * FROM t WHERE a = "b"')]
    state = asm.replay_state
    assert state is not None and state.blocks == ({"type": "tool-call", "call_type": "custom"},)


@pytest.mark.parametrize("api", ["anthropic-messages", "google-generative-ai"])
async def test_a_free_text_tool_is_refused_before_any_request_where_the_wire_has_none(
    api: str,
) -> None:
    async with MockServer([Reply(reads=sse("[DONE]"))]) as server:
        profile = {"api": api, "base_url": server.url, "api_key_env": "K", "models": [{"id": "m"}]}
        adapter = ProvidersAdapter.from_config({"providers": {"gw": profile}}, env={"K": "k-1"})
        ask = GenerateOptions(provider="gw", model="m", messages=(user_message("q"),), tools=(SQL,))
        with pytest.raises(LlmError) as info:
            async for _ in adapter.stream(ask):
                pass
    assert info.value.code == "UNSUPPORTED_OPTION"
    assert '"run_sql"' in info.value.message and f"({api})" in info.value.message
    assert server.paths == []


async def test_the_deepseek_adapter_refuses_a_free_text_tool_before_any_request() -> None:
    adapter = DeepSeekAdapter(api_key="sk-test-key-0001", base_url="http://127.0.0.1:9")
    ask = GenerateOptions(
        provider="deepseek", model="deepseek-chat", messages=(user_message("q"),), tools=(NOTE,)
    )
    with pytest.raises(LlmError) as info:
        async for _ in adapter.stream(ask):
            pass
    assert info.value.code == "UNSUPPORTED_OPTION"
