"""`google-generative-ai` end to end: `ProvidersAdapter` routes to a real loopback server that
replays the recorded Gemini bodies and errors; the request it received (URL, query, headers,
body) is checked, and the key travels only in `x-goog-api-key`."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from google_fixtures import (
    GEMINI,
    STRUCTURED,
    GeminiServer,
    assemble,
    check_gemini,
    error_cases,
    load_case,
    sse,
    stream_cases,
)

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.errors import LlmError
from modelwire.vocab import (
    Error,
    GenerateOptions,
    Message,
    ModelSource,
    OutputSchema,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    ToolSchema,
    tool_result_message,
    user_message,
)

KEY = "AIza-test-key-0123456789"
CATEGORY_CODES = {
    "rate_limit": "RATE_LIMIT",
    "auth": "AUTH",
    "not_found": "MODEL_NOT_FOUND",
    "server": "SERVER",
    "overloaded": "SERVER",
}


def _adapter(url: str, model_id: str = "gemini-2.5-flash") -> ProvidersAdapter:
    return ProvidersAdapter.from_config(
        {
            "providers": {
                "gem": {
                    "api": "google-generative-ai",
                    "base_url": url + "/v1beta",
                    "api_key_env": "GEMINI_TEST_KEY",
                    "models": [{"id": model_id}],
                }
            }
        },
        env={"GEMINI_TEST_KEY": KEY},
    )


def _reads(body: bytes, seed: int | None) -> list[bytes]:
    if seed is None:
        return [body]
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(body)), min(30, len(body) - 1)))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


async def _stream(adapter: ProvidersAdapter, options: GenerateOptions) -> list[StreamChunk]:
    return [chunk async for chunk in adapter.stream(options)]


def _options(model_id: str = "gemini-2.5-flash", **extra: Any) -> GenerateOptions:
    messages = extra.pop("messages", (user_message("hi"),))
    return GenerateOptions(provider="gem", model=model_id, messages=messages, **extra)


def _check_request(server: GeminiServer, model_id: str = "gemini-2.5-flash") -> dict[str, Any]:
    (request,) = server.requests
    assert request.path == f"/v1beta/models/{model_id}:streamGenerateContent"
    assert request.query == "alt=sse"
    assert request.headers["x-goog-api-key"] == KEY
    assert "authorization" not in request.headers
    assert KEY not in request.path + request.query
    assert request.headers["content-type"] == "application/json"
    return request.body


@pytest.mark.parametrize("seed", [None, 7], ids=["whole", "rechunked"])
@pytest.mark.parametrize("sse_path", stream_cases())
async def test_recorded_stream_over_http_assembles_to_expected(
    sse_path: Path, seed: int | None
) -> None:
    body, expected = load_case(sse_path)
    async with GeminiServer(reads=_reads(body, seed)) as server:
        chunks = await _stream(_adapter(server.url), _options())
    check_gemini(assemble(chunks), expected, chunks)
    sent = _check_request(server)
    assert sent["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


async def test_structured_output_request_and_answer_over_http() -> None:
    sse_path = STRUCTURED / "fantasy-gemini3-pro-response-json-schema-book.sse"
    body, expected = load_case(sse_path)
    recorded = json.loads(sse_path.with_suffix(".request.json").read_text())
    schema = recorded["generationConfig"]["responseJsonSchema"]
    options = _options("gemini-3-pro-preview", output=OutputSchema("book", schema), max_tokens=4000)
    async with GeminiServer(reads=_reads(body, 3)) as server:
        chunks = await _stream(_adapter(server.url, "gemini-3-pro-preview"), options)
    asm = assemble(chunks)
    check_gemini(asm, expected, chunks)
    text = "".join(b.text for b in asm.blocks() if isinstance(b, TextBlock))
    assert json.loads(text) == expected["extras"]["structured_json"]
    config = _check_request(server, "gemini-3-pro-preview")["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == schema
    assert config["maxOutputTokens"] == 4000


async def test_tools_and_a_signed_tool_turn_round_trip_over_http() -> None:
    """Turn 1 streams a signed function call; turn 2 sends it back with its signature, plus the
    tool result, to the same route and model."""
    first, expected = load_case(GEMINI / "pydantic-gemini3-pro-fc-thought-signature.sse")
    second, _ = load_case(GEMINI / "pydantic-gemini3-pro-text-after-fc.sse")
    tool = ToolSchema(name="get_country", description="The user's country", parameters={})
    model_id = "gemini-3-pro-preview"
    async with GeminiServer(reads=[first]) as server:
        adapter = _adapter(server.url, model_id)
        chunks = await _stream(adapter, _options(model_id, tools=(tool,), tool_choice="required"))
    asm = assemble(chunks)
    sent = _check_request(server, model_id)
    assert sent["tools"][0]["functionDeclarations"][0]["name"] == "get_country"
    assert sent["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    turn: Message = asm.message(ModelSource("gem", model_id, asm.replay_state))
    (call,) = [b for b in turn.content if isinstance(b, ToolCallBlock)]
    history = (user_message("hi"), turn, tool_result_message(call.id, "Mexico"))
    async with GeminiServer(reads=[second]) as server:
        adapter = _adapter(server.url, model_id)
        chunks = await _stream(adapter, _options(model_id, tools=(tool,), messages=history))
    assert assemble(chunks).finish.kind == "stop"
    contents = _check_request(server, model_id)["contents"]
    (signature,) = expected["extras"]["tool_call_thought_signatures"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": signature}
        ],
    }
    assert contents[2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_country", "response": {"output": "Mexico"}}}],
    }


@pytest.mark.parametrize("path", error_cases())
async def test_recorded_error_over_http_maps_to_its_code_and_retry_delay(path: Path) -> None:
    http = json.loads(path.read_text())
    expected = json.loads(
        path.with_name(path.name.replace(".http.json", ".expected.json")).read_text()
    )
    skip = {"content-length", "content-type", "transfer-encoding", "content-encoding", "connection"}
    headers = {k: v for k, v in http["headers"].items() if k.lower() not in skip}
    async with GeminiServer(status=http["status"], body=http["body"], headers=headers) as server:
        with pytest.raises(LlmError) as info:
            await _stream(_adapter(server.url), _options())
    error = info.value
    assert error.code == CATEGORY_CODES[expected["category"]]
    assert error.status == http["status"]
    if expected["retry_after_s"] is None:
        assert error.failure.provider_retry_after_ms is None
    else:
        assert error.failure.provider_retry_after_ms == pytest.approx(
            expected["retry_after_s"] * 1000
        )
    assert expected["error"]["message"] in error.message
    assert KEY not in error.message
    _check_request(server)


async def test_a_key_echoed_in_an_error_body_is_redacted() -> None:
    body = json.dumps(
        {
            "error": {
                "code": 400,
                "message": f"API key {KEY} not valid.",
                "status": "INVALID_ARGUMENT",
            }
        }
    )
    async with GeminiServer(status=400, body=body) as server:
        with pytest.raises(LlmError) as info:
            await _stream(_adapter(server.url), _options())
    assert KEY not in info.value.message and KEY not in repr(info.value.failure)


async def test_a_non_json_line_over_http_is_one_malformed_response_failure() -> None:
    reads = [
        *sse({"candidates": [{"content": {"parts": [{"text": "hi"}]}}]}),
        b"data: oops\r\n\r\n",
    ]
    async with GeminiServer(reads=reads) as server:
        with pytest.raises(LlmError) as info:
            await _stream(_adapter(server.url), _options())
    assert info.value.code == "MALFORMED_RESPONSE"
    assert KEY not in info.value.message


async def test_a_stream_cut_before_finish_reason_is_a_transport_failure_over_http() -> None:
    reads = sse({"candidates": [{"content": {"parts": [{"text": "partial"}]}}]})
    async with GeminiServer(reads=reads) as server:
        chunks = await _stream(_adapter(server.url), _options())
    finish = assemble(chunks).finish
    assert isinstance(finish, Error)
    assert finish.failure.code == "TRANSPORT"


async def test_a_route_whose_key_variable_is_unset_fails_before_any_request() -> None:
    async with GeminiServer(reads=[]) as server:
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "gem": {
                        "api": "google-generative-ai",
                        "base_url": server.url + "/v1beta",
                        "api_key_env": "GEMINI_TEST_KEY",
                        "models": [{"id": "gemini-2.5-flash"}],
                    }
                }
            },
            env={},
        )
        with pytest.raises(LlmError) as info:
            await _stream(adapter, _options())
    assert info.value.code == "MISSING_CREDENTIAL"
    assert "GEMINI_TEST_KEY" in info.value.message
    assert server.requests == []


async def test_the_route_advertises_native_strict_structured_output() -> None:
    info = await _adapter("http://127.0.0.1:9").resolve_model("gem", "gemini-2.5-flash")
    assert info.structured_output == "native-strict"
