"""`bedrock-converse-stream` end to end: a route of that api on `ProvidersAdapter`, streaming
recorded ConverseStream bodies from a real 127.0.0.1 server, with the request the server
received checked (URL, headers, body, bearer token or SigV4 signature)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from bedrock_fixtures import (
    SECRET,
    Bedrock,
    assemble,
    check,
    event,
    load,
    signature_valid,
    stream_cases,
)

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.errors import LlmError
from modelwire.vocab import GenerateOptions, OutputSchema, StreamChunk, user_message

MODEL = "us.amazon.nova-micro-v1:0"
CASES = stream_cases()
NOVA_TEXT = next(c.values[0] for c in CASES if c.id == "pydantic-nova-micro-text")


def _adapter(url: str, env: dict[str, str], **route: Any) -> ProvidersAdapter:
    profile = {"api": "bedrock-converse-stream", "base_url": url, "models": [{"id": MODEL}]}
    profile.update(route)
    return ProvidersAdapter.from_config({"providers": {"br": profile}}, env=env)


async def _run(adapter: ProvidersAdapter, text: str = "hi") -> list[StreamChunk]:
    options = GenerateOptions(provider="br", model=MODEL, messages=(user_message(text),))
    return [chunk async for chunk in adapter.stream(options)]


@pytest.mark.parametrize("path", CASES)
async def test_recording_streams_through_the_adapter_to_expected(path: Path) -> None:
    body, expected = load(path)
    async with Bedrock(body) as server:
        adapter = _adapter(server.url, {"K": "bedrock-key-123"}, api_key_env="K")
        chunks = await _run(adapter)
    check(chunks, expected)


async def test_api_key_route_sends_a_bearer_token_and_the_converse_body() -> None:
    body, _ = load(NOVA_TEXT)
    async with Bedrock(body) as server:
        adapter = _adapter(server.url, {"K": "bedrock-key-123"}, api_key_env="K")
        await _run(adapter, "What is the capital of France?")
    raw_path, headers, sent = server.requests[0]
    assert unquote(raw_path) == f"/model/{MODEL}/converse-stream"
    assert headers["authorization"] == "Bearer bedrock-key-123"
    assert headers["content-type"] == "application/json"
    assert headers["accept"] == "application/vnd.amazon.eventstream"
    decoded = json.loads(sent)
    assert decoded["messages"] == [
        {"role": "user", "content": [{"text": "What is the capital of France?"}]}
    ]
    assert decoded["inferenceConfig"]["maxTokens"] > 0


async def test_ambient_bearer_token_needs_no_api_key_env() -> None:
    body, _ = load(NOVA_TEXT)
    async with Bedrock(body) as server:
        adapter = _adapter(server.url, {"AWS_BEARER_TOKEN_BEDROCK": "ambient-token-1"})
        chunks = await _run(adapter)
    assert assemble(chunks).finish.kind == "stop"
    assert server.requests[0][1]["authorization"] == "Bearer ambient-token-1"


async def test_missing_aws_credentials_fail_before_any_request(tmp_path: Path) -> None:
    async with Bedrock(b"") as server:
        adapter = _adapter(server.url, {"HOME": str(tmp_path)}, region="us-east-1")
        with pytest.raises(LlmError) as err:
            await _run(adapter)
    assert err.value.code == "MISSING_CREDENTIAL"
    assert "AWS_ACCESS_KEY_ID" in err.value.message
    assert 'route "br"' in err.value.message
    assert server.requests == []


async def test_recorded_http_error_reaches_the_caller_with_its_code() -> None:
    errors = Path(NOVA_TEXT).parent / "errors"
    recorded = json.loads(
        (errors / "pydantic-bedrock-400-invalid-model-stream.http.json").read_text()
    )
    headers = {
        **recorded["headers"],
        "x-amzn-RequestId": "req-9",
        "x-amzn-ErrorType": "ValidationException",
    }
    async with Bedrock(recorded["body"].encode(), status=400, headers=headers) as server:
        adapter = _adapter(server.url, {"K": "bedrock-key-123"}, api_key_env="K")
        with pytest.raises(LlmError) as err:
            await _run(adapter)
    assert err.value.code == "INVALID_REQUEST"
    assert err.value.status == 400
    assert "The provided model identifier is invalid." in err.value.message
    assert err.value.failure.request_id == "req-9"


async def test_throttling_error_type_header_is_a_rate_limit_through_the_adapter() -> None:
    body = json.dumps({"message": "Too many tokens, please wait before trying again."})
    headers = {"x-amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/coral/"}
    async with Bedrock(body.encode(), status=400, headers=headers) as server:
        adapter = _adapter(server.url, {"K": "bedrock-key-123"}, api_key_env="K")
        with pytest.raises(LlmError) as err:
            await _run(adapter)
    assert err.value.code == "RATE_LIMIT"


async def test_access_keys_sign_the_request_with_sigv4_for_the_route_region() -> None:
    body, _ = load(NOVA_TEXT)
    env = {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_SESSION_TOKEN": "tok-1",
    }
    async with Bedrock(body) as server:
        chunks = await _run(_adapter(server.url, env, region="eu-west-3"))
    assert assemble(chunks).finish.kind == "stop"
    _, headers, _ = server.requests[0]
    auth = headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-3/bedrock/aws4_request" in auth
    assert (
        "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"
        in auth
    )
    assert headers["x-amz-security-token"] == "tok-1"
    assert SECRET not in json.dumps(headers)


async def test_sigv4_signature_verifies_against_the_path_the_server_received() -> None:
    body, _ = load(NOVA_TEXT)
    env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET}
    async with Bedrock(body) as server:
        await _run(_adapter(server.url, env, region="us-east-1"))
    raw_path, headers, sent = server.requests[0]
    assert raw_path == "/model/us.amazon.nova-micro-v1%3A0/converse-stream"
    assert signature_valid(raw_path, headers, sent)


async def test_native_structured_output_goes_as_text_format_and_streams_as_text() -> None:
    path = next(c.values[0] for c in CASES if c.id == "pydantic-claude-sonnet45-native-output-text")
    body, expected = load(path)
    claude = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    async with Bedrock(body) as server:
        profile = {
            "api": "bedrock-converse-stream",
            "base_url": server.url,
            "api_key_env": "K",
            "models": [{"id": claude}],
        }
        adapter = ProvidersAdapter.from_config(
            {"providers": {"br": profile}}, env={"K": "bedrock-key-123"}
        )
        options = GenerateOptions(
            provider="br",
            model=claude,
            messages=(user_message("capital of France?"),),
            output=OutputSchema("CityInfo", schema),
        )
        chunks = [chunk async for chunk in adapter.stream(options)]
    check(chunks, expected)
    raw_path, _, sent = server.requests[0]
    assert unquote(raw_path) == f"/model/{claude}/converse-stream"
    fmt = json.loads(sent)["outputConfig"]["textFormat"]
    assert fmt["type"] == "json_schema"
    assert json.loads(fmt["structure"]["jsonSchema"]["schema"]) == schema


async def test_emulated_structured_output_answer_tool_streams_as_the_answer_text() -> None:
    frames = [
        event(
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t", "name": "Answer"}}},
        ),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}}),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("messageStop", {"stopReason": "tool_use"}),
    ]
    async with Bedrock(b"".join(frames)) as server:
        options = GenerateOptions(
            provider="br",
            model=MODEL,
            messages=(user_message("q"),),
            output=OutputSchema("Answer", {"type": "object"}),
        )
        adapter = _adapter(server.url, {"K": "bedrock-key-123"}, api_key_env="K")
        chunks = [chunk async for chunk in adapter.stream(options)]
    sent = json.loads(server.requests[0][2])
    assert sent["toolConfig"]["toolChoice"] == {"tool": {"name": "Answer"}}
    asm = assemble(chunks)
    assert asm.finish.kind == "stop"
    assert [b.type for b in asm.blocks()] == ["text"]


async def test_catalog_bedrock_route_sends_claude_thinking_and_cache_points() -> None:
    path = next(c.values[0] for c in CASES if c.id == "pydantic-claude-sonnet4-reasoning-signature")
    body, expected = load(path)
    claude = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
    async with Bedrock(body) as server:
        adapter = ProvidersAdapter.from_config(
            {"providers": {"amazon-bedrock": {"base_url": server.url, "region": "us-east-1"}}},
            env={"AWS_BEARER_TOKEN_BEDROCK": "catalog-token"},
        )
        options = GenerateOptions(
            provider="amazon-bedrock",
            model=claude,
            messages=(user_message("Hello"),),
            system="Be brief.",
            reasoning_effort="low",
        )
        chunks = [chunk async for chunk in adapter.stream(options)]
    check(chunks, expected)
    raw_path, headers, sent = server.requests[0]
    assert unquote(raw_path) == f"/model/{claude}/converse-stream"
    assert headers["authorization"] == "Bearer catalog-token"
    decoded = json.loads(sent)
    assert decoded["system"] == [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}]
    assert decoded["messages"][-1]["content"][-1] == {"cachePoint": {"type": "default"}}
    thinking = decoded["additionalModelRequestFields"]["thinking"]
    assert thinking == {"type": "enabled", "budget_tokens": 2048, "display": "summarized"}
