"""Every recorded HTTP error of the third collection (`../shared/fixtures3/*/errors`) is classified
as its `.expected.json` says: the failure code of its category, whether the default policy
retries it, the status, Retry-After, the request id (header or body) and the provider's
message — by the status mapping plus the protocol's own reading of an error body, and again
end to end: served by a loopback server to a route of the folder's protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from collection3 import COUNTS, errors
from compat_fixtures import Loopback
from error_categories import CATEGORY_CODES

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.protocols import protocol
from modelwire.errors import DEFAULT_RETRYABLE_CODES, LlmError
from modelwire.vocab import GenerateOptions, LlmFailure, user_message
from modelwire.wire.status import failure_for_status, redact_secrets

_API = {
    "openai-chat": "openai-completions",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic-messages",
    "google-generative-ai": "google-generative-ai",
    "bedrock-converse": "bedrock-converse-stream",
}
CASES = [
    pytest.param(name, path, id=f"{name}/{path.name.removesuffix('.http.json')}")
    for name in COUNTS
    for path in errors(name)
]


def _load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    http = json.loads(path.read_text())
    expected = json.loads(path.with_name(path.name.replace(".http.", ".expected.")).read_text())
    return http, expected


def _check(failure: LlmFailure, expected: dict[str, Any]) -> None:
    assert failure.code == CATEGORY_CODES[expected["category"]]
    assert (failure.code in DEFAULT_RETRYABLE_CODES) == expected["retryable"]
    assert failure.status == expected["status"]
    after = expected["retry_after_s"]
    if after is None:
        assert failure.provider_retry_after_ms is None
    else:
        assert failure.provider_retry_after_ms == pytest.approx(after * 1000)
    if expected["error"].get("request_id") is not None:
        assert failure.request_id == expected["error"]["request_id"]
    message = expected["error"]["message"]
    if message:
        assert redact_secrets(message, ())[:200] in failure.message


def test_collection3_error_folders_hold_every_recorded_error() -> None:
    for name, (_, count) in COUNTS.items():
        assert len(errors(name)) == count, name
    assert len(CASES) == 22


@pytest.mark.parametrize(("name", "path"), CASES)
def test_collection3_error_maps_to_its_category(name: str, path: Path) -> None:
    http, expected = _load(path)
    error = failure_for_status(
        http["status"],
        http["body"],
        http["headers"],
        provider="Provider",
        fallback_request_id_headers=("request-id",),
    )
    refine = protocol(_API[name]).http_error
    if refine is not None:
        error = refine(error, http["body"], http["headers"], ())
    assert error.failure is not None
    _check(error.failure, expected)


@pytest.mark.parametrize(("name", "path"), CASES)
async def test_collection3_error_over_http_ends_the_call_classified(name: str, path: Path) -> None:
    http, expected = _load(path)
    headers = {
        k: v
        for k, v in http["headers"].items()
        if k.lower() not in ("content-type", "content-length", "transfer-encoding")
    }
    api = _API[name]
    async with Loopback(status=http["status"], body=http["body"], headers=headers) as server:
        profile: dict[str, Any] = {
            "api": api,
            "base_url": server.url,
            "api_key_env": "FIXTURE_KEY",
            "models": [{"id": "fixture-model"}],
        }
        env = {"FIXTURE_KEY": "sk-fixture-key-0001"}
        if api == "bedrock-converse-stream":  # a Bedrock API key: no signature needed
            profile.pop("api_key_env")
            profile["region"] = "us-east-1"
            env = {"AWS_BEARER_TOKEN_BEDROCK": "bedrock-api-key-fixture"}
        adapter = ProvidersAdapter.from_config({"providers": {"gw": profile}}, env=env)
        ask = GenerateOptions(provider="gw", model="fixture-model", messages=(user_message("hi"),))
        with pytest.raises(LlmError) as info:
            async for _ in adapter.stream(ask):
                pass
    assert info.value.failure is not None
    _check(info.value.failure, expected)
    assert "sk-fixture-key-0001" not in str(info.value)
    assert len(server.seen) == 1
