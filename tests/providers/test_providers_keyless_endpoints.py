"""Keyless local routes, missing-key messages that name the variable, account placeholders in
catalog endpoints, the AWS region, and credentials refused in a base URL (issue #16)."""

from __future__ import annotations

from typing import Any

import pytest
from providers_fixtures import TEXT_EVENTS, MockServer, Reply

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.errors import HarnessError, LlmError
from modelwire.vocab import GenerateOptions, TextDelta, user_message


def _opts(provider: str, model: str) -> GenerateOptions:
    return GenerateOptions(provider=provider, model=model, messages=(user_message("hi"),))


async def _text(adapter: ProvidersAdapter, provider: str, model: str) -> str:
    parts = []
    async for chunk in adapter.stream(_opts(provider, model)):
        if isinstance(chunk, TextDelta):
            parts.append(chunk.text)
    return "".join(parts)


async def _fails(adapter: ProvidersAdapter, provider: str, model: str) -> LlmError:
    with pytest.raises(LlmError) as info:
        async for _ in adapter.stream(_opts(provider, model)):
            pass
    return info.value


async def test_auth_none_route_sends_no_credential_and_needs_none() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        local = {
            "api": "openai-completions",
            "base_url": server.url + "/v1",
            "auth": "none",
            "models": [{"id": "qwen3:8b"}],
        }
        adapter = ProvidersAdapter.from_config({"providers": {"local": local}}, env={})
        assert adapter.missing_credential("local") is None
        assert await _text(adapter, "local", "qwen3:8b") == "hello"
    assert "authorization" not in server.headers[0]
    assert server.paths == ["/v1/chat/completions"]


async def test_auth_none_ignores_a_configured_key_variable() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        local = {
            "api": "openai-completions",
            "base_url": server.url + "/v1",
            "auth": "none",
            "api_key_env": "UNSET_KEY",
            "models": [{"id": "m"}],
        }
        adapter = ProvidersAdapter.from_config({"providers": {"local": local}}, env={})
        assert await _text(adapter, "local", "m") == "hello"
    assert "authorization" not in server.headers[0]


def test_auth_field_is_validated() -> None:
    with pytest.raises(HarnessError) as info:
        ProvidersAdapter.from_config(
            {
                "providers": {
                    "x": {
                        "api": "openai-completions",
                        "base_url": "http://h",
                        "auth": "oauth",
                        "models": [{"id": "m"}],
                    }
                }
            }
        )
    assert "providers.x.auth must be one of key, none" in info.value.message


async def test_missing_catalog_key_names_the_catalog_variable() -> None:
    adapter = ProvidersAdapter.from_config({"providers": {"openai": {}}}, env={})
    assert adapter.missing_credential("openai") == "OPENAI_API_KEY"
    error = await _fails(adapter, "openai", "gpt-5.5")
    assert error.code == "MISSING_CREDENTIAL"
    assert error.message.startswith("No API key for provider: openai (set OPENAI_API_KEY")
    ready = ProvidersAdapter.from_config({"providers": {"openai": {}}}, env={"OPENAI_API_KEY": "k"})
    assert ready.missing_credential("openai") is None


def test_default_model_is_the_catalogs_recommended_one() -> None:
    adapter = ProvidersAdapter.from_config({"providers": {"openai": {}, "anthropic": {}}})
    assert adapter.default_model("openai") == "gpt-5.5"
    assert adapter.default_model("anthropic") == "claude-opus-4-8"
    declared = ProvidersAdapter.from_config(
        {
            "providers": {
                "x": {
                    "api": "openai-completions",
                    "base_url": "http://h",
                    "models": [{"id": "b"}, {"id": "a"}],
                }
            }
        }
    )
    assert declared.default_model("x") == "b"


async def test_recommended_model_is_marked_in_list_models() -> None:
    adapter = ProvidersAdapter.from_config({"providers": {"openai": {}}})
    marked = [m.id for m in await adapter.list_models("openai") if m.recommended]
    assert marked == ["gpt-5.5"]


async def test_cloudflare_account_placeholder_comes_from_the_profile_or_env() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        route = {
            "api": "openai-completions",
            "base_url": server.url + "/client/v4/accounts/{CLOUDFLARE_ACCOUNT_ID}/ai/v1",
            "account_id": "acct-42",
            "api_key_env": "CF_KEY",
            "models": [{"id": "@cf/x"}],
        }
        adapter = ProvidersAdapter.from_config({"providers": {"cf": route}}, env={"CF_KEY": "k"})
        assert await _text(adapter, "cf", "@cf/x") == "hello"
        from_env = ProvidersAdapter.from_config(
            {"providers": {"cf": {**route, "account_id": None}}},
            env={"CF_KEY": "k", "CLOUDFLARE_ACCOUNT_ID": "acct-env"},
        )
        assert await _text(from_env, "cf", "@cf/x") == "hello"
    assert server.paths == [
        "/client/v4/accounts/acct-42/ai/v1/chat/completions",
        "/client/v4/accounts/acct-env/ai/v1/chat/completions",
    ]


async def test_catalog_cloudflare_route_without_account_id_says_what_to_set() -> None:
    adapter = ProvidersAdapter.from_config(
        {"providers": {"cloudflare-workers-ai": {}}}, env={"CLOUDFLARE_API_KEY": "k"}
    )
    model = adapter.default_model("cloudflare-workers-ai")
    assert model is not None
    error = await _fails(adapter, "cloudflare-workers-ai", model)
    assert error.code == "INVALID_CONFIG"
    assert "CLOUDFLARE_ACCOUNT_ID" in error.message
    assert "providers.cloudflare-workers-ai.account_id" in error.message


async def test_bedrock_route_without_region_is_one_classified_failure() -> None:
    adapter = ProvidersAdapter.from_config(
        {"providers": {"amazon-bedrock": {}}}, env={"AWS_BEARER_TOKEN_BEDROCK": "tok"}
    )
    model = adapter.default_model("amazon-bedrock")
    assert model is not None
    error = await _fails(adapter, "amazon-bedrock", model)
    assert error.code == "INVALID_CONFIG"
    assert "providers.amazon-bedrock.region, AWS_REGION or AWS_DEFAULT_REGION" in error.message
    assert "tok" not in error.message


@pytest.mark.parametrize(
    "url",
    [
        "https://generativelanguage.googleapis.com/v1beta?key=AIzaSyFAKE",
        "https://h/v1?alt=sse&api_key=x",
        "https://h/v1?access_token=x",
    ],
)
def test_a_key_in_the_base_url_is_refused_without_echoing_it(url: str) -> None:
    with pytest.raises(HarnessError) as info:
        ProvidersAdapter.from_config({"providers": {"google": {"base_url": url}}})
    message = info.value.message
    assert info.value.code == "INVALID_CONFIG"
    assert "credential in its query string" in message and "AIzaSyFAKE" not in message


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"transport": "websocket"}, 'transport "websocket"'),
        ({"transport": "carrier-pigeon"}, "transport must be one of sse, websocket"),
        ({"region": "us east"}, "providers.x.region must be"),
        ({"api_version": "../x"}, "providers.x.api_version must be"),
    ],
)
def test_new_profile_fields_are_validated(fields: dict[str, Any], fragment: str) -> None:
    profile = {"api": "openai-completions", "base_url": "http://h", "models": [{"id": "m"}]}
    with pytest.raises(HarnessError) as info:
        ProvidersAdapter.from_config({"providers": {"x": {**profile, **fields}}})
    assert fragment in info.value.message


def test_bedrock_route_is_ready_only_with_ambient_aws_credentials(tmp_path: Any) -> None:
    route = {"providers": {"amazon-bedrock": {"region": "us-west-2"}}}
    bare = ProvidersAdapter.from_config(route, env={"HOME": str(tmp_path)})
    needs = bare.missing_credential("amazon-bedrock")
    assert needs is not None
    assert "AWS_BEARER_TOKEN_BEDROCK" in needs and "AWS_ACCESS_KEY_ID" in needs
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = not-shown\n"
    )
    with_file = ProvidersAdapter.from_config(route, env={"HOME": str(tmp_path)})
    assert with_file.missing_credential("amazon-bedrock") is None
    token = ProvidersAdapter.from_config(route, env={"AWS_BEARER_TOKEN_BEDROCK": "t"})
    assert token.missing_credential("amazon-bedrock") is None
