"""Model discovery (spec §6, catalogue §8.6 #164-184)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from providers_fixtures import MockServer, Reply

from modelwire import LlmRuntime
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.discovery import MAX_DISCOVERY_BYTES
from modelwire.errors import LlmError
from modelwire.vocab import DiscoveredModel, ModelDiscoveryRequest


def _adapter(config: Any = None, env: dict[str, str] | None = None) -> ProvidersAdapter:
    return ProvidersAdapter.from_config(config, env=env or {})


async def _fails(adapter: ProvidersAdapter, request: ModelDiscoveryRequest) -> LlmError:
    with pytest.raises(LlmError) as info:
        await adapter.discover_models(request)
    return info.value


async def test_mp_164_165_171_catalog_provider_answered_offline() -> None:
    async with MockServer([Reply(body="{}")]) as server:
        adapter = _adapter({"providers": {"deepseek": {"api_key_env": "UNSET_REF"}}})
        rows = await adapter.discover_models(
            ModelDiscoveryRequest(provider="deepseek", base_url=server.url)
        )
        assert [r.id for r in rows] == ["deepseek-v4-flash", "deepseek-v4-pro"]
        assert all(r.context_window and r.max_tokens for r in rows)
        assert await adapter.discover_models(ModelDiscoveryRequest(provider="deepseek")) == rows
    assert server.paths == []


@pytest.mark.parametrize("base_url", [None, ""])
async def test_mp_166_non_catalog_without_base_url(base_url: str | None) -> None:
    error = await _fails(_adapter(), ModelDiscoveryRequest(provider="acme", base_url=base_url))
    assert (
        error.code == "DISCOVERY_FAILED"
        and "ships no" in error.message
        and "base_url" in error.message
    )


async def test_mp_167_168_169_openai_listing() -> None:
    data = {
        "data": [
            {"id": "a", "display_name": "Model A", "context_length": 1000, "max_output_tokens": 50},
            {"id": "b"},
            {"id": ""},
            {"name": "no id"},
            None,
            {"id": "c", "context_window": 0, "max_tokens": -1},
        ]
    }
    async with MockServer([Reply(body=json.dumps(data))]) as server:
        adapter = _adapter()
        rows = await adapter.discover_models(
            ModelDiscoveryRequest(base_url=server.url + "/openai/v1/", api_key="probe-key")
        )
        await adapter.discover_models(ModelDiscoveryRequest(base_url=server.url + "/v1"))
    assert rows == [
        DiscoveredModel(id="a", name="Model A", context_window=1000, max_tokens=50),
        DiscoveredModel(id="b"),
        DiscoveredModel(id="c"),
    ]
    assert server.paths == ["/openai/v1/models", "/v1/models"]
    assert server.headers[0]["authorization"] == "Bearer probe-key"
    assert server.headers[0]["user-agent"].startswith("modelwire/")
    assert "authorization" not in server.headers[1]


async def test_mp_170_route_key_used_and_typed_key_wins() -> None:
    async with MockServer([Reply(body='{"data":[]}')]) as server:
        config = {
            "providers": {
                "acme": {
                    "api": "openai-completions",
                    "base_url": server.url,
                    "api_key_env": "ACME",
                    "models": [{"id": "m"}],
                }
            }
        }
        adapter = _adapter(config, env={"ACME": "stored-key"})
        await adapter.discover_models(ModelDiscoveryRequest(provider="acme", base_url=server.url))
        await adapter.discover_models(
            ModelDiscoveryRequest(provider="acme", base_url=server.url, api_key="typed")
        )
        await adapter.discover_models(ModelDiscoveryRequest(provider="other", base_url=server.url))
    assert [h.get("authorization") for h in server.headers] == [
        "Bearer stored-key",
        "Bearer typed",
        None,
    ]


@pytest.mark.parametrize(
    ("status", "suffix"), [(401, "; check the API key"), (403, "; check the API key"), (500, "")]
)
async def test_mp_173_status_answers(status: int, suffix: str) -> None:
    async with MockServer([Reply(status=status, body="{}")]) as server:
        error = await _fails(_adapter(), ModelDiscoveryRequest(base_url=server.url))
    assert error.code == "DISCOVERY_FAILED"
    assert error.message.endswith(f"answered {status}{suffix}")


@pytest.mark.parametrize(
    ("body", "fragment"), [("{}", '"data" array'), ("<html>", "did not answer with JSON")]
)
async def test_mp_174_bad_bodies(body: str, fragment: str) -> None:
    async with MockServer([Reply(body=body)]) as server:
        error = await _fails(_adapter(), ModelDiscoveryRequest(base_url=server.url))
    assert error.code == "DISCOVERY_FAILED" and fragment in error.message


async def test_mp_175_body_ceiling_declared_and_streamed() -> None:
    big = b'{"data":[' + b" " * MAX_DISCOVERY_BYTES + b"]}"
    async with MockServer([Reply(body=big.decode()), Reply(reads=[big[: 1 << 20]] * 5)]) as server:
        for _ in range(2):
            error = await _fails(_adapter(), ModelDiscoveryRequest(base_url=server.url))
            assert f"more than {MAX_DISCOVERY_BYTES} bytes" in error.message


async def test_mp_176_unreachable_endpoint() -> None:
    error = await _fails(_adapter(), ModelDiscoveryRequest(base_url="http://127.0.0.1:9"))
    assert error.code == "DISCOVERY_FAILED" and "could not reach" in error.message


@pytest.mark.parametrize(
    "api",
    [
        "anthropic-messages",
        "azure-openai-responses",
        "openai-codex-responses",
        "google-generative-ai",
    ],
)
async def test_mp_177_unlistable_protocols(api: str) -> None:
    error = await _fails(_adapter(), ModelDiscoveryRequest(base_url="http://h", api=api))
    assert error.code == "DISCOVERY_UNSUPPORTED"


@pytest.mark.parametrize("key", ["sk-🔑", "", "   "])
async def test_mp_182_183_unusable_probe_keys(key: str) -> None:
    error = await _fails(_adapter(), ModelDiscoveryRequest(base_url="http://h", api_key=key))
    assert error.code == "INVALID_CREDENTIAL" and "🔑" not in error.message


async def test_mp_180_181_runtime_namespace() -> None:
    runtime = LlmRuntime()
    adapter = _adapter()
    adapter.register(runtime)
    rows = await runtime.discover_models("providers", ModelDiscoveryRequest(provider="deepseek"))
    assert rows
    with pytest.raises(LlmError) as info:
        await runtime.discover_models("llm-deepseek", ModelDiscoveryRequest(provider="deepseek"))
    assert info.value.code == "NO_DISCOVERY"


async def test_a_listed_model_that_echoes_the_key_is_not_kept() -> None:
    key = "echoedProbeKey0123"  # not shaped like a key: only the request's own key can match
    data = {
        "data": [
            {"id": key, "name": "the key as an id"},
            {"id": f"prefix-{key.upper()}-suffix"},
            {"id": "kept", "display_name": f"Bearer {key}"},
            {"id": "key-value-model-large", "name": "Key Value"},  # key-shaped, but no key
        ]
    }
    async with MockServer([Reply(body=json.dumps(data))]) as server:
        rows = await _adapter().discover_models(
            ModelDiscoveryRequest(base_url=server.url + "/v1", api_key=key)
        )
    assert server.headers[0]["authorization"] == f"Bearer {key}"  # the key went out
    assert rows == [
        DiscoveredModel(id="kept"),
        DiscoveredModel(id="key-value-model-large", name="Key Value"),
    ]
