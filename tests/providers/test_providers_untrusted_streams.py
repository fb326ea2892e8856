"""Issue 29, native protocols: what a provider's stream says is not trusted past its type.

Rules pinned, end to end over a real server on 127.0.0.1 (Bedrock through its event-stream
framer): Gemini ``functionCall.args`` that is not an object (an array, a string, a number, a
bool) is `MALFORMED_RESPONSE`, never a tool call with silent ``{}`` arguments (absent or null
args are the empty object); a negative token count is `MALFORMED_RESPONSE` on every protocol
(DeepSeek, Chat Completions, Mistral, Responses, Anthropic Messages, Gemini, Bedrock), so no budget goes
backwards (docs/decisions.md: refused, not clamped); a stream event (Gemini args included)
nesting JSON past what the decoder follows is `MALFORMED_RESPONSE`, and an error body nesting past
`MAX_JSON_DEPTH` still fails by its status, never `UNKNOWN`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from bedrock_fixtures import event
from bedrock_fixtures import translate as bedrock_translate
from providers_fixtures import MockServer, Reply

from modelwire import Error, GenerateOptions, LlmRuntime, ToolCallBlock, user_message
from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.errors import LlmError
from modelwire.wire.eventstream import encode_message


def _runtime(api: str, url: str) -> LlmRuntime:
    rt = LlmRuntime()
    if api == "deepseek":
        adapter = DeepSeekAdapter(api_key="sk-test-000000000", base_url=url, env={})
        rt.register_adapter(["route"], adapter)
        return rt
    base = url + ("/v1beta" if api == "google-generative-ai" else "/v1")
    profile = {"api": api, "base_url": base, "api_key_env": "K", "models": [{"id": "m"}]}
    ProvidersAdapter.from_config({"providers": {"route": profile}}, env={"K": "k"}).register(rt)
    return rt


async def _generate(api: str, reads: list[bytes]) -> Any:
    async with MockServer([Reply(reads=reads)]) as server:
        model = "deepseek-v4-flash" if api == "deepseek" else "m"
        options = GenerateOptions("route", model, (user_message("hi"),))
        return await _runtime(api, server.url).generate(options)


def _data(*events: dict[str, Any], named: bool = False) -> list[bytes]:
    if named:
        return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    return [f"data: {json.dumps(e)}\n\n".encode() for e in events]


def _gemini(part: dict[str, Any], usage: dict[str, int] | None = None) -> list[bytes]:
    candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}
    meta = usage or {"promptTokenCount": 3, "candidatesTokenCount": 1}
    return _data({"candidates": [candidate], "usageMetadata": meta, "responseId": "r1"})


@pytest.mark.parametrize("args", [[1, 2], "x", 3, True], ids=["array", "string", "number", "bool"])
async def test_gemini_function_call_args_that_are_not_an_object_are_malformed_response(
    args: object,
) -> None:
    result = await _generate(
        "google-generative-ai", _gemini({"functionCall": {"name": "lookup", "args": args}})
    )
    assert isinstance(result.finish, Error), result.finish
    assert result.finish.failure.code == "MALFORMED_RESPONSE"
    assert not any(isinstance(b, ToolCallBlock) for b in result.message.content)


@pytest.mark.parametrize("call", [{"name": "now"}, {"name": "now", "args": None}])
async def test_gemini_absent_or_null_args_are_the_empty_object(call: dict[str, Any]) -> None:
    result = await _generate("google-generative-ai", _gemini({"functionCall": call}))
    assert not isinstance(result.finish, Error), result.finish
    (block,) = [b for b in result.message.content if isinstance(b, ToolCallBlock)]
    assert (block.name, block.arguments) == ("now", "{}")


def _completions(usage: dict[str, Any]) -> list[bytes]:
    return [
        *_data(
            {"id": "c1", "choices": [{"index": 0, "delta": {"content": "hi"}}]},
            {
                "id": "c1",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": usage,
            },
        ),
        b"data: [DONE]\n\n",
    ]


def _responses(usage: dict[str, Any]) -> list[bytes]:
    item = {"type": "message", "id": "m1", "content": []}
    done = {"type": "message", "id": "m1", "content": [{"type": "output_text", "text": "hi"}]}
    completed = {"id": "r1", "status": "completed", "usage": usage}
    return _data(
        {"type": "response.created", "response": {"id": "r1"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "hi"},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": completed},
        named=True,
    )


def _anthropic(usage: dict[str, Any]) -> list[bytes]:
    return _data(
        {"type": "message_start", "message": {"id": "m1", "usage": usage}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        {"type": "message_stop"},
        named=True,
    )


NEGATIVE = {
    "deepseek-prompt": ("deepseek", _completions({"prompt_tokens": -5, "completion_tokens": 2})),
    "deepseek-cache-hit": (
        "deepseek",
        _completions({"prompt_tokens": 5, "completion_tokens": 2, "prompt_cache_hit_tokens": -1}),
    ),
    "completions-output": (
        "openai-completions",
        _completions({"prompt_tokens": 5, "completion_tokens": -2}),
    ),
    "completions-cached": (
        "openai-completions",
        _completions(
            {
                "prompt_tokens": 5,
                "completion_tokens": 2,
                "prompt_tokens_details": {"cached_tokens": -4},
            }
        ),
    ),
    "mistral-prompt": (
        "mistral-conversations",
        _completions({"prompt_tokens": -5, "completion_tokens": 2}),
    ),
    "responses-input": ("openai-responses", _responses({"input_tokens": -5, "output_tokens": 2})),
    "responses-reasoning": (
        "openai-responses",
        _responses(
            {
                "input_tokens": 5,
                "output_tokens": 2,
                "output_tokens_details": {"reasoning_tokens": -1},
            }
        ),
    ),
    "anthropic-input": ("anthropic-messages", _anthropic({"input_tokens": -5, "output_tokens": 1})),
    "anthropic-cache-read": (
        "anthropic-messages",
        _anthropic({"input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": -9}),
    ),
    "gemini-prompt": (
        "google-generative-ai",
        _gemini({"text": "hi"}, {"promptTokenCount": -3, "candidatesTokenCount": 1}),
    ),
    "gemini-thoughts": (
        "google-generative-ai",
        _gemini(
            {"text": "hi"},
            {"promptTokenCount": 3, "candidatesTokenCount": 1, "thoughtsTokenCount": -7},
        ),
    ),
}


@pytest.mark.parametrize("case", list(NEGATIVE), ids=list(NEGATIVE))
async def test_a_negative_token_count_is_malformed_response(case: str) -> None:
    api, reads = NEGATIVE[case]
    result = await _generate(api, reads)
    assert isinstance(result.finish, Error), (case, result.finish)
    assert result.finish.failure.code == "MALFORMED_RESPONSE"


@pytest.mark.parametrize("api", ["deepseek", "openai-completions", "mistral-conversations"])
async def test_the_same_stream_with_counts_of_zero_or_more_completes(api: str) -> None:
    result = await _generate(api, _completions({"prompt_tokens": 0, "completion_tokens": 2}))
    assert not isinstance(result.finish, Error), result.finish
    assert result.usage.output_tokens == 2


@pytest.mark.parametrize("field", ["inputTokens", "outputTokens", "cacheReadInputTokens"])
def test_bedrock_refuses_a_negative_token_count(field: str) -> None:
    usage = {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7, field: -1}
    frames = [
        event("messageStart", {"role": "assistant"}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}}),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("messageStop", {"stopReason": "end_turn"}),
        event("metadata", {"usage": usage}),
    ]
    with pytest.raises(LlmError) as info:
        bedrock_translate(frames)
    assert info.value.code == "MALFORMED_RESPONSE"


DEEP = "[" * 5000 + "]" * 5000
STREAM_APIS = (
    "deepseek",
    "openai-completions",
    "mistral-conversations",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
)


@pytest.mark.parametrize("api", STREAM_APIS)
async def test_a_stream_event_nested_past_the_decoder_is_malformed_response_not_unknown(
    api: str,
) -> None:
    event = '{"type":"x","junk":' + DEEP + ',"choices":[]}'
    result = await _generate(api, [f"data: {event}\n\n".encode(), b"data: [DONE]\n\n"])
    assert isinstance(result.finish, Error), result.finish
    assert result.finish.failure.code == "MALFORMED_RESPONSE"
    assert "nests JSON arrays and objects deeper than the decoder follows" in (
        result.finish.failure.message
    )


async def test_gemini_args_nested_past_the_decoder_are_malformed_response() -> None:
    part = '{"functionCall":{"name":"f","args":{"x":' + DEEP + "}}}"
    event = '{"candidates":[{"content":{"role":"model","parts":[' + part + ']},"index":0}]}'
    result = await _generate("google-generative-ai", [f"data: {event}\n\n".encode()])
    assert isinstance(result.finish, Error), result.finish
    assert result.finish.failure.code == "MALFORMED_RESPONSE"


def test_bedrock_event_nested_past_the_decoder_is_malformed_response() -> None:
    headers = {
        ":message-type": "event",
        ":event-type": "contentBlockDelta",
        ":content-type": "application/json",
    }
    payload = b'{"contentBlockIndex": 0, "delta": {"text": "hi"}, "junk": ' + DEEP.encode() + b"}"
    frames = [event("messageStart", {"role": "assistant"}), encode_message(headers, payload)]
    with pytest.raises(LlmError) as info:
        bedrock_translate(frames)
    assert info.value.code == "MALFORMED_RESPONSE"
    assert "deeper than the decoder follows" in info.value.message


@pytest.mark.parametrize("api", [*STREAM_APIS, "bedrock-converse-stream"])
async def test_an_error_body_nested_past_the_limit_still_fails_by_its_status(api: str) -> None:
    body = '{"error": {"message": ' + DEEP + "}}"
    async with MockServer([Reply(status=400, body=body)]) as server:
        model = "deepseek-v4-flash" if api == "deepseek" else "m"
        options = GenerateOptions("route", model, (user_message("hi"),))
        result = await _runtime(api, server.url).generate(options)
    assert isinstance(result.finish, Error), result.finish
    assert (result.finish.failure.code, result.finish.failure.status) == ("INVALID_REQUEST", 400)
    assert "nesting JSON deeper than 256 levels" in result.finish.failure.message
