"""Azure OpenAI end to end: every recorded Azure stream, served by a real loopback server to a
route of its kind (v1 API, or a 2024-02-01 deployment named like the recorded one), assembles
to its expected result through `ProvidersAdapter`; the server saw the Azure URL (path and
``api-version``), the ``api-key`` header and the deployment name as the body's model."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from compat_fixtures import (
    Loopback,
    check_recording,
    dialect_of,
    folder,
    load,
    request_body,
    split,
    stream_cases,
)

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.protocols.azure_filter import refine_azure_http_error
from modelwire.assembler import BlockAssembler
from modelwire.errors import LlmError
from modelwire.vocab import GenerateOptions, StreamChunk, user_message

KEY = "k-azure-123"
APIS = {"chat": "azure-openai-completions", "responses": "azure-openai-responses"}
ENDPOINTS = {"chat": "chat/completions", "responses": "responses"}
CHAT_TEXT = folder("azure-openai") / "fantasy-azure-v1-gpt5-mini-chat-text.sse"


def _adapter(url: str, api: str, model: str, **route: Any) -> ProvidersAdapter:
    profile = {"api": api, "base_url": url, "api_key_env": "AZ_KEY", **route}
    profile["models"] = [{"id": model}]
    return ProvidersAdapter.from_config({"providers": {"az": profile}}, env={"AZ_KEY": KEY})


async def _stream(adapter: ProvidersAdapter, model: str) -> list[StreamChunk]:
    options = GenerateOptions(provider="az", model=model, messages=(user_message("hi"),))
    return [c async for c in adapter.stream(options)]


def _reads(body: bytes, seed: int | None) -> list[bytes]:
    if seed is None:
        return [body]
    rng = random.Random(seed)
    return split(body, rng.sample(range(1, len(body)), 30))


@pytest.mark.parametrize("seed", [None, 5], ids=["whole", "rechunked"])
@pytest.mark.parametrize("sse", stream_cases("azure-openai"))
async def test_azure_recording_over_http_assembles_to_expected(sse: Path, seed: int | None) -> None:
    body, expected = load(sse)
    dialect = dialect_of(body)
    api = APIS[dialect]
    recorded = request_body(sse) or {}
    deployment = "2024-02-01" in sse.name
    model = recorded.get("model", "gpt-5.1")
    async with Loopback(reads=_reads(body, seed)) as server:
        if deployment:  # the resource URL; the dated version addresses the deployment
            adapter = _adapter(server.url, api, model, api_version="2024-02-01")
        else:  # the v1 API
            adapter = _adapter(server.url + "/openai/v1", api, model)
        chunks = await _stream(adapter, model)
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    check_recording(api, dialect, asm, expected, chunks)
    (seen,) = server.seen
    if deployment:
        assert seen.path_qs == (
            "/openai/deployments/openllmetry-testing/chat/completions?api-version=2024-02-01"
        )
    else:
        assert seen.path_qs == f"/openai/v1/{ENDPOINTS[dialect]}"
    assert seen.headers["api-key"] == KEY
    assert "authorization" not in seen.headers
    assert seen.body["model"] == model  # the deployment name


async def test_azure_entra_bearer_header_replaces_the_api_key() -> None:
    body, _ = load(CHAT_TEXT)
    async with Loopback(reads=[body]) as server:
        profile = {
            "api": "azure-openai-completions",
            "base_url": server.url + "/openai/v1",
            "headers": {"Authorization": "Bearer entra-token"},
            "models": [{"id": "gpt-5-mini"}],
        }
        adapter = ProvidersAdapter.from_config({"providers": {"az": profile}}, env={})
        chunks = await _stream(adapter, "gpt-5-mini")
    assert chunks[-1].reason.kind == "stop"  # type: ignore[union-attr]
    seen = server.seen[0]
    assert seen.headers["authorization"] == "Bearer entra-token"
    assert "api-key" not in seen.headers


async def test_azure_deployment_url_without_api_version_fails_before_any_request() -> None:
    body, _ = load(CHAT_TEXT)
    async with Loopback(reads=[body]) as server:
        adapter = _adapter(
            server.url + "/openai/deployments/prod", "azure-openai-completions", "gpt-5-mini"
        )
        with pytest.raises(LlmError) as info:
            await _stream(adapter, "gpt-5-mini")
    assert info.value.code == "INVALID_CONFIG"
    assert "providers.az.api_version" in info.value.message
    assert server.seen == []


async def test_azure_http_400_content_filter_reaches_the_caller_as_content_filter() -> None:
    filtered = {
        "error": {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's "
            "content management policy.",
            "code": "content_filter",
            "status": 400,
            "innererror": {
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {"hate": {"filtered": True, "severity": "high"}},
            },
        }
    }
    text = json.dumps(filtered)
    async with Loopback(status=400, body=text) as server:
        adapter = _adapter(server.url + "/openai/v1", "azure-openai-completions", "gpt-5-mini")
        with pytest.raises(LlmError) as info:
            await _stream(adapter, "gpt-5-mini")
    error = info.value
    assert error.status == 400
    assert KEY not in error.message
    # the protocol's refinement (idempotent: the adapter may already have applied it)
    refined = refine_azure_http_error(error, text, {}, (KEY,))
    assert refined.code == "CONTENT_FILTER"
    assert "hate (high)" in refined.message
