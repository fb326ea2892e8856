"""Issue 29, options: `provider_options` cannot reach a field modelwire writes by another spelling,
and a value no JSON body can carry is refused by name, before any request.

Rules pinned, end to end over a real server on 127.0.0.1: Gemini reads a field by its camelCase
or its proto (snake_case) name, so `generation_config`, `system_instruction`, `tool_config`,
`contents` … are refused like `generationConfig` (INVALID_OPTION naming the key); two keys naming
one Gemini field are refused; a field modelwire does not write passes in either spelling; a lone
surrogate in an option value or key is INVALID_OPTION naming the
option on every protocol, never `UNKNOWN`, and nothing is sent.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from providers_fixtures import MockServer, Reply

from modelwire import Error, GenerateOptions, LlmRuntime, user_message
from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter

APIS = (
    "deepseek",
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
)
GEMINI_DONE = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}
    ],
    "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1},
}


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


async def _refused(api: str, provider_options: dict[str, Any]) -> str:
    """The INVALID_OPTION message of a call with `provider_options` (and that nothing was sent)."""
    async with MockServer([Reply(reads=[b"data: {}\n\n"])]) as server:
        model = "deepseek-v4-flash" if api == "deepseek" else "m"
        options = GenerateOptions(
            "route", model, (user_message("hi"),), provider_options=provider_options
        )
        result = await _runtime(api, server.url).generate(options)
    assert isinstance(result.finish, Error), result.finish
    assert result.finish.failure.code == "INVALID_OPTION", result.finish.failure
    assert server.bodies == []
    return result.finish.failure.message


@pytest.mark.parametrize(
    "key",
    [
        "generationConfig",
        "generation_config",
        "system_instruction",
        "tool_config",
        "contents",
        "systemInstruction",
    ],
)
async def test_gemini_refuses_a_written_field_in_either_spelling(key: str) -> None:
    message = await _refused("google-generative-ai", {key: {"temperature": 2}})
    assert f"provider_options.{key} is a field modelwire writes itself" in message


async def test_gemini_refuses_two_keys_naming_one_field() -> None:
    safety = [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
    message = await _refused(
        "google-generative-ai", {"safetySettings": safety, "safety_settings": []}
    )
    assert "provider_options.safetySettings and provider_options.safety_settings" in message


async def test_gemini_passes_a_field_it_does_not_write_in_the_snake_case_spelling() -> None:
    safety = [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
    reads = [f"data: {json.dumps(GEMINI_DONE)}\n\n".encode()]
    async with MockServer([Reply(reads=reads)]) as server:
        options = GenerateOptions(
            "route", "m", (user_message("hi"),), provider_options={"safety_settings": safety}
        )
        result = await _runtime("google-generative-ai", server.url).generate(options)
    assert not isinstance(result.finish, Error), result.finish
    assert server.bodies[0]["safety_settings"] == safety


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("provider_options", "named"),
    [
        ({"user": "bad \ud800 value"}, "provider_options.user contains a lone surrogate"),
        ({"metadata": {"a": ["\udfff"]}}, "provider_options.metadata contains a lone surrogate"),
        ({"x\ud800y": 1}, "provider_options.x\\ud800y contains a lone surrogate"),
    ],
    ids=["value", "nested-value", "key"],
)
async def test_an_option_no_json_body_can_carry_is_refused_by_name_before_any_request(
    api: str, provider_options: dict[str, Any], named: str
) -> None:
    message = await _refused(api, provider_options)
    assert named in message
    message.encode()  # the message itself is storable text (a surrogate key is escaped)
