"""Structured output, tool choice, parallel tool calls and provider_options on the three
protocols and the DeepSeek adapter, end to end over a real server on 127.0.0.1: the request
body has the documented shape, a schema'd request returns JSON that validates, an invalid answer
from the server ends in OUTPUT_INVALID where the provider does not enforce the schema, a forced
tool choice produces exactly that tool call, and an unsupported or colliding option is refused
before any I/O."""

from __future__ import annotations

import json
from typing import Any

import pytest
from providers_fixtures import MockServer, Reply

from modelwire import (
    Error,
    Finish,
    GenerateOptions,
    LlmRuntime,
    OutputSchema,
    Stop,
    ToolCalls,
    ToolChoiceTool,
    ToolSchema,
    user_message,
)
from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.vocab import ToolCallBlock
from modelwire.vocab.json import thaw_json

PERSON = OutputSchema(
    "person",
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    description="Who it is",
)
ADD = ToolSchema(
    "add", "Add two numbers", {"type": "object", "properties": {"a": {"type": "number"}}}
)
SCHEMA = thaw_json(PERSON.schema)  # as it goes over the wire
GOOD = '{"name": "Ada", "age": 36}'
BAD = '{"name": "Ada", "age": "old"}'


def _chat(text: str | None = None, call: tuple[str, str, str] | None = None) -> list[bytes]:
    delta: dict[str, Any] = {"content": text} if text is not None else {}
    if call is not None:
        cid, name, args = call
        delta = {
            "tool_calls": [
                {
                    "index": 0,
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
            ]
        }
    finish = "tool_calls" if call else "stop"
    events = [
        {"id": "c1", "choices": [{"index": 0, "delta": delta}]},
        {
            "id": "c1",
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2},
        },
    ]
    return [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]


def _events(*events: dict[str, Any]) -> list[bytes]:
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


def _responses(text: str) -> list[bytes]:
    item = {"type": "message", "id": "msg_1", "content": []}
    done = {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": text}]}
    return _events(
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_text.delta", "output_index": 0, "delta": text},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "status": "completed",
                "usage": {"input_tokens": 5, "output_tokens": 2},
            },
        },
    )


def _anthropic_tool(name: str, args: str, stop: str = "tool_use") -> list[bytes]:
    start = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}
    return _events(
        {
            "type": "message_start",
            "message": {"id": "msg_1", "usage": {"input_tokens": 5, "output_tokens": 1}},
        },
        {"type": "content_block_start", "index": 0, "content_block": start},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": args[:7]},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": args[7:]},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    )


def _runtime(api: str, url: str) -> LlmRuntime:
    rt = LlmRuntime()
    if api == "deepseek":
        rt.register_adapter(
            ["route"], DeepSeekAdapter(api_key="sk-test-000000000", base_url=url, env={})
        )
        return rt
    profile = {"api": api, "base_url": url + "/v1", "api_key_env": "K", "models": [{"id": "m"}]}
    ProvidersAdapter.from_config({"providers": {"route": profile}}, env={"K": "k"}).register(rt)
    return rt


def _ask(api: str, **fields: Any) -> GenerateOptions:
    model = "deepseek-v4-flash" if api == "deepseek" else "m"
    return GenerateOptions("route", model, (user_message("who?"),), **fields)


async def _call(api: str, reads: list[bytes], **fields: Any) -> tuple[Any, dict[str, Any] | None]:
    async with MockServer([Reply(reads=reads)]) as server:
        result = await _runtime(api, server.url).generate(_ask(api, **fields))
    return result, (server.bodies[0] if server.bodies else None)


# ---- request bodies ------------------------------------------------------------------------


async def test_chat_completions_body_carries_response_format_tool_choice_and_parallel() -> None:
    _, body = await _call(
        "openai-completions",
        _chat(GOOD),
        output=PERSON,
        tools=(ADD,),
        tool_choice=ToolChoiceTool("add"),
        parallel_tool_calls=False,
    )
    assert body is not None
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "person",
            "description": "Who it is",
            "schema": SCHEMA,
            "strict": True,
        },
    }
    assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert body["parallel_tool_calls"] is False


async def test_responses_body_carries_text_format_and_tool_choice() -> None:
    _, body = await _call(
        "openai-responses", _responses(GOOD), output=PERSON, tools=(ADD,), tool_choice="required"
    )
    assert body is not None
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "name": "person",
            "description": "Who it is",
            "schema": SCHEMA,
            "strict": True,
        }
    }
    assert body["tool_choice"] == "required"
    _, named = await _call(
        "openai-responses", _responses("x"), tools=(ADD,), tool_choice=ToolChoiceTool("add")
    )
    assert named is not None and named["tool_choice"] == {"type": "function", "name": "add"}


@pytest.mark.parametrize(
    ("choice", "parallel", "wire"),
    [
        ("auto", None, {"type": "auto"}),
        ("none", None, {"type": "none"}),
        ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
        (ToolChoiceTool("add"), None, {"type": "tool", "name": "add"}),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
    ],
)
async def test_anthropic_tool_choice_body(choice: Any, parallel: Any, wire: dict[str, Any]) -> None:
    fields: dict[str, Any] = {"tools": (ADD,), "parallel_tool_calls": parallel}
    if choice is not None:
        fields["tool_choice"] = choice
    _, body = await _call("anthropic-messages", _anthropic_tool("add", '{"a": 1}'), **fields)
    assert body is not None and body["tool_choice"] == wire


async def test_anthropic_structured_output_forces_the_answer_tool_and_answers_in_text() -> None:
    result, body = await _call("anthropic-messages", _anthropic_tool("person", GOOD), output=PERSON)
    assert body is not None
    assert body["tools"][-1] == {
        "name": "person",
        "description": "Who it is",
        "input_schema": SCHEMA,
    }
    assert body["tool_choice"] == {"type": "tool", "name": "person"}
    assert result.finish == Stop()
    assert json.loads(result.message.content[0].text) == {"name": "Ada", "age": 36}


async def test_deepseek_body_uses_json_mode_and_states_the_schema_in_the_system_message() -> None:
    result, body = await _call(
        "deepseek", _chat(GOOD), output=PERSON, tools=(ADD,), tool_choice="auto"
    )
    assert body is not None
    assert body["response_format"] == {"type": "json_object"}
    assert body["tool_choice"] == "auto"
    system = body["messages"][0]
    assert (
        system["role"] == "system"
        and '"person"' in system["content"]
        and "JSON" in system["content"]
    )
    assert result.finish == Stop()


# ---- answers checked where the provider does not enforce the schema -------------------------


@pytest.mark.parametrize(
    ("api", "reads"),
    [("deepseek", _chat(BAD)), ("anthropic-messages", _anthropic_tool("person", BAD))],
)
async def test_an_invalid_answer_from_a_non_enforcing_route_is_output_invalid(
    api: str, reads: list[bytes]
) -> None:
    result, _ = await _call(api, reads, output=PERSON)
    assert isinstance(result.finish, Error)
    assert result.finish.failure.code == "OUTPUT_INVALID"
    assert "at $.age" in result.finish.failure.message


@pytest.mark.parametrize(
    ("api", "reads"),
    [
        ("openai-completions", _chat(GOOD)),
        ("openai-responses", _responses(GOOD)),
        ("deepseek", _chat(GOOD)),
    ],
)
async def test_a_schemad_request_returns_json_that_validates(api: str, reads: list[bytes]) -> None:
    result, _ = await _call(api, reads, output=PERSON)
    assert result.finish == Stop()
    text = "".join(b.text for b in result.message.content)
    assert json.loads(text) == {"name": "Ada", "age": 36}


# ---- forced tool choice ----------------------------------------------------------------------


@pytest.mark.parametrize("api", ["openai-completions", "deepseek"])
async def test_a_forced_tool_choice_produces_exactly_that_tool_call(api: str) -> None:
    result, body = await _call(
        api,
        _chat(call=("call_1", "add", '{"a": 2}')),
        tools=(ADD,),
        tool_choice=ToolChoiceTool("add"),
    )
    assert body is not None and body["tool_choice"] == {
        "type": "function",
        "function": {"name": "add"},
    }
    assert result.finish == ToolCalls()
    calls = [b for b in result.message.content if isinstance(b, ToolCallBlock)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("add", {"a": 2})]


# ---- refused before any I/O ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "fields", "code", "words"),
    [
        ("deepseek", {"parallel_tool_calls": True}, "UNSUPPORTED_OPTION", "parallel_tool_calls"),
        (
            "deepseek",
            {"provider_options": {"messages": []}},
            "INVALID_OPTION",
            "provider_options.messages",
        ),
        (
            "openai-completions",
            {"provider_options": {"model": "x"}},
            "INVALID_OPTION",
            "provider_options.model",
        ),
        (
            "openai-responses",
            {"provider_options": {"input": []}},
            "INVALID_OPTION",
            "provider_options.input",
        ),
        (
            "anthropic-messages",
            {"provider_options": {"max_tokens": 5}},
            "INVALID_OPTION",
            "provider_options.max_tokens",
        ),
        (
            "anthropic-messages",
            {"output": PERSON, "tools": (ADD,), "tool_choice": "auto"},
            "UNSUPPORTED_OPTION",
            "cannot be combined with tool_choice",
        ),
        (
            "anthropic-messages",
            {"output": OutputSchema("list", {"type": "array"})},
            "UNSUPPORTED_OPTION",
            "must describe a JSON object",
        ),
    ],
)
async def test_an_unsupported_or_colliding_option_is_refused_before_any_request(
    api: str, fields: dict[str, Any], code: str, words: str
) -> None:
    async with MockServer([Reply(reads=_chat("x"))]) as server:
        result = await _runtime(api, server.url).generate(_ask(api, **fields))
    assert isinstance(result.finish, Error)
    assert result.finish.failure.code == code
    assert words in result.finish.failure.message
    assert server.bodies == []


@pytest.mark.parametrize(
    "api", ["deepseek", "openai-completions", "openai-responses", "anthropic-messages"]
)
async def test_provider_options_are_merged_after_the_adapter_fields(api: str) -> None:
    reads = {
        "openai-responses": _responses("hi"),
        "anthropic-messages": _anthropic_tool("add", "{}", "end_turn"),
    }
    _, body = await _call(
        api, reads.get(api, _chat("hi")), provider_options={"service_tier": "flex", "seed": 7}
    )
    assert body is not None
    assert list(body)[-2:] == ["service_tier", "seed"]
    assert (body["service_tier"], body["seed"]) == ("flex", 7)


async def test_a_finish_is_one_chunk_whatever_the_option_path() -> None:
    async with MockServer([Reply(reads=_chat(GOOD))]) as server:
        rt = _runtime("openai-completions", server.url)
        chunks = [c async for c in rt.stream(_ask("openai-completions", output=PERSON))]
    assert sum(isinstance(c, Finish) for c in chunks) == 1
