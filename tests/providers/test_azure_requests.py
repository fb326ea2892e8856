"""Azure OpenAI requests: v1 API vs deployment URLs, base-URL normalization, the api-version
query, the deployment name, ``api-key`` auth, version-dependent chat fields and the
INVALID_CONFIG failure of a deployment URL without an api-version."""

from __future__ import annotations

import json
from typing import Any

import pytest
from compat_fixtures import descriptor

from modelwire.adapters.providers.compat import CompatSwitches
from modelwire.adapters.providers.context import NContext, NUser
from modelwire.adapters.providers.protocols import registry
from modelwire.adapters.providers.protocols.azure_openai import (
    PROTOCOLS,
    azure_url,
    normalize_azure_base_url,
)
from modelwire.adapters.providers.protocols.request import RequestOptions
from modelwire.errors import LlmError
from modelwire.vocab import OutputSchema, ToolSchema

CHAT = "azure-openai-completions"
RESPONSES = "azure-openai-responses"
CTX = NContext("sys", (NUser("hi"),), ())


def _model(api: str, base: str, version: str | None = None, **kw: Any) -> Any:
    return descriptor(
        api,
        kw.pop("model_id", "gpt-4o-deploy"),
        base_url=base,
        api_version=version,
        provider="az",
        **kw,
    )


def _build(api: str, base: str, version: str | None = None, **kw: Any) -> Any:
    options = kw.pop("options", RequestOptions())
    return PROTOCOLS[api].build(_model(api, base, version, **kw), CTX, options)


def test_azure_registry_serves_both_apis_from_one_module() -> None:
    for api in (CHAT, RESPONSES):
        assert registry.protocol(api) is PROTOCOLS[api]
        assert registry.protocol(api).api == api


@pytest.mark.parametrize(
    ("base", "normalized"),
    [
        ("https://res.openai.azure.com", "https://res.openai.azure.com/openai/v1"),
        ("https://res.openai.azure.com/", "https://res.openai.azure.com/openai/v1"),
        ("https://res.openai.azure.com/openai", "https://res.openai.azure.com/openai/v1"),
        ("https://res.openai.azure.com/openai/v1/", "https://res.openai.azure.com/openai/v1"),
        (
            "https://res.openai.azure.com/openai/v1/responses",
            "https://res.openai.azure.com/openai/v1",
        ),
        (
            "https://res.cognitiveservices.azure.com",
            "https://res.cognitiveservices.azure.com/openai/v1",
        ),
        ("https://res.services.ai.azure.com/openai", "https://res.services.ai.azure.com/openai/v1"),
        # other paths (an API Management prefix) and other hosts are kept as written
        (
            "https://apim.example.com/api/projects/p/openai/v1",
            "https://apim.example.com/api/projects/p/openai/v1",
        ),
        ("https://res.openai.azure.com/custom/", "https://res.openai.azure.com/custom"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ],
)
def test_azure_base_url_normalizes_like_pi_ai(base: str, normalized: str) -> None:
    assert normalize_azure_base_url(base) == normalized


@pytest.mark.parametrize("version", [None, "v1"])
def test_azure_v1_api_urls_need_no_api_version(version: str | None) -> None:
    base = "https://res.openai.azure.com"
    assert (
        _build(CHAT, base, version).url == "https://res.openai.azure.com/openai/v1/chat/completions"
    )
    assert (
        _build(RESPONSES, base, version).url == "https://res.openai.azure.com/openai/v1/responses"
    )


def test_azure_v1_preview_is_sent_as_the_api_version_query() -> None:
    base = "https://res.openai.azure.com/openai/v1"
    url = _build(RESPONSES, base, "preview").url
    assert url == "https://res.openai.azure.com/openai/v1/responses?api-version=preview"


def test_azure_dated_version_addresses_the_chat_deployment_named_by_the_model_id() -> None:
    request = _build(
        CHAT, "https://res.openai.azure.com", "2024-02-01", model_id="openllmetry-testing"
    )
    assert request.url == (
        "https://res.openai.azure.com/openai/deployments/openllmetry-testing/chat/completions"
        "?api-version=2024-02-01"
    )
    assert json.loads(request.body)["model"] == "openllmetry-testing"


def test_azure_dated_version_responses_address_the_resource_with_the_deployment_in_the_body() -> (
    None
):
    request = _build(RESPONSES, "https://res.openai.azure.com/openai", "2025-04-01-preview")
    assert (
        request.url
        == "https://res.openai.azure.com/openai/responses?api-version=2025-04-01-preview"
    )
    assert json.loads(request.body)["model"] == "gpt-4o-deploy"


def test_azure_deployment_name_is_escaped_in_the_path() -> None:
    url = _build(CHAT, "https://res.openai.azure.com", "2024-10-21", model_id="my dep/1").url
    assert "/openai/deployments/my%20dep%2F1/chat/completions?api-version=2024-10-21" in url


def test_azure_deployment_base_url_takes_the_endpoint_and_api_version() -> None:
    base = "https://res.openai.azure.com/openai/deployments/prod-4o"
    url = _build(CHAT, base, "2024-10-21").url
    assert url == f"{base}/chat/completions?api-version=2024-10-21"


@pytest.mark.parametrize("version", [None, "v1"])
def test_azure_deployment_url_without_a_dated_api_version_is_invalid_config(
    version: str | None,
) -> None:
    with pytest.raises(LlmError) as info:
        _build(CHAT, "https://res.openai.azure.com/openai/deployments/prod-4o/", version)
    assert info.value.code == "INVALID_CONFIG"
    assert 'route "az"' in info.value.message
    assert "providers.az.api_version" in info.value.message


def test_azure_responses_with_a_deployment_base_url_is_invalid_config() -> None:
    with pytest.raises(LlmError) as info:
        _build(RESPONSES, "https://res.openai.azure.com/openai/deployments/d", "2025-04-01-preview")
    assert info.value.code == "INVALID_CONFIG"
    assert "providers.az.base_url" in info.value.message


def test_azure_key_travels_as_api_key_and_profile_headers_may_carry_entra_tokens() -> None:
    for api in (CHAT, RESPONSES):
        spec = PROTOCOLS[api]
        assert spec.key_headers("k-123") == {"api-key": "k-123"}
        assert set(spec.key_header_names) == {"api-key", "authorization"}
        assert "k-123" not in json.dumps(_build(api, "https://res.openai.azure.com").headers)


def test_azure_old_chat_version_sends_max_tokens_and_no_stream_options_store_or_strict() -> None:
    tool = ToolSchema("f", "d", {"type": "object", "properties": {}})
    ctx = NContext("sys", (NUser("hi"),), (tool,))
    model = _model(CHAT, "https://res.openai.azure.com", "2024-02-01", reasoning=False)
    body = json.loads(PROTOCOLS[CHAT].build(model, ctx, RequestOptions(max_tokens=50)).body)
    assert body["max_tokens"] == 50
    for absent in ("max_completion_tokens", "stream_options", "store"):
        assert absent not in body
    assert "strict" not in body["tools"][0]["function"]
    assert PROTOCOLS[CHAT].structured_output(model) == "native-json"


def test_azure_new_chat_version_and_v1_keep_the_openai_fields() -> None:
    for version in (None, "2025-04-01-preview"):
        body = json.loads(_build(CHAT, "https://res.openai.azure.com", version).body)
        assert body["stream_options"] == {"include_usage": True}
        assert "max_completion_tokens" in body
        assert (
            PROTOCOLS[CHAT].structured_output(_model(CHAT, "https://x", version)) == "native-strict"
        )


def test_azure_version_defaults_yield_to_configured_compat() -> None:
    compat = CompatSwitches(supports_usage_in_streaming=True)
    body = json.loads(
        _build(CHAT, "https://res.openai.azure.com", "2024-02-01", compat=compat).body
    )
    assert body["stream_options"] == {"include_usage": True}


def test_azure_developer_role_waits_for_the_2024_12_01_version() -> None:
    def system_role(version: str | None) -> str:
        body = json.loads(
            _build(CHAT, "https://res.openai.azure.com", version, reasoning=True).body
        )
        role: str = body["messages"][0]["role"]
        return role

    assert system_role("2024-10-21") == "system"
    assert system_role("2024-12-01-preview") == "developer"
    assert system_role(None) == "developer"


def test_azure_responses_send_no_long_cache_retention_and_strict_output() -> None:
    options = RequestOptions(session_id="s1", cache_retention="long")
    body = json.loads(_build(RESPONSES, "https://res.openai.azure.com", options=options).body)
    assert body["prompt_cache_key"] == "s1"
    assert "prompt_cache_retention" not in body
    out = OutputSchema("a", {"type": "object", "properties": {}})
    body = json.loads(
        _build(RESPONSES, "https://res.openai.azure.com", options=RequestOptions(output=out)).body
    )
    assert body["text"]["format"]["strict"] is True
    assert PROTOCOLS[RESPONSES].structured_output(_model(RESPONSES, "https://x")) == "native-strict"


def test_azure_url_function_is_the_one_the_builders_use() -> None:
    model = _model(CHAT, "https://res.openai.azure.com", "2024-06-01")
    assert PROTOCOLS[CHAT].build(model, CTX, RequestOptions()).url == azure_url(
        model, "/chat/completions"
    )
