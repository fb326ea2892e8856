"""Chat Completions endpoint detection (spec §1.7): provider id and base URL decide the switches
an unconfigured model gets; configured compat wins per field."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from modelwire.adapters.providers.catalog import load_catalog
from modelwire.adapters.providers.compat import NO_SWITCHES
from modelwire.adapters.providers.config import resolve_profiles
from modelwire.adapters.providers.context import NContext, NUser
from modelwire.adapters.providers.protocols.detect import COMPLETIONS_DEFAULTS
from modelwire.adapters.providers.protocols.openai_completions import (
    build_completions_request,
    completions_compat,
)
from modelwire.adapters.providers.protocols.request import RequestOptions


def _model(
    base_url: str, model_id: str = "m", *, sized: bool = True, route: str = "gw", **compat: Any
) -> Any:
    entry: dict[str, Any] = {"id": model_id, "reasoning_efforts": {"high": "high"}}
    if sized:
        entry["max_tokens"] = 4096
    if compat:
        entry["compat"] = compat
    profile = {"api": "openai-completions", "base_url": base_url, "models": [entry]}
    return resolve_profiles({"providers": {route: profile}})[route].models[model_id]


def _body(model: Any, max_tokens: int | None = None) -> dict[str, Any]:
    ctx = NContext("sys", (NUser("hi"),), ())
    options = RequestOptions(effort="high", max_tokens=max_tokens)
    request = build_completions_request(model, ctx, options)
    return msgspec.json.decode(request.body)  # type: ignore[no-any-return]


def _cap(body: dict[str, Any]) -> object:
    return body.get("max_tokens", body.get("max_completion_tokens"))


def test_a_model_nothing_sizes_leaves_the_output_cap_to_the_server() -> None:
    """Issue 30: no entry `max_tokens`, no catalog model, no `default_max_tokens`: a local
    OpenAI-compatible server gets no `max_tokens` (not a blind 32,768) unless the caller names
    one; the model's own limit is sent whenever something knows it."""
    local = "http://127.0.0.1:11434/v1"
    unsized = _body(_model(local, "qwen3:8b", sized=False))
    assert not {"max_tokens", "max_completion_tokens"} & set(unsized)
    assert _cap(_body(_model(local, "qwen3:8b", sized=False), max_tokens=300)) == 300
    assert _cap(_body(_model(local, "qwen3:8b"))) == 4096  # the entry's own limit
    profile = {
        "api": "openai-completions",
        "base_url": local,
        "default_max_tokens": 2048,
        "models": [{"id": "qwen3:8b"}],
    }
    defaulted = resolve_profiles({"providers": {"gw": profile}})["gw"].models["qwen3:8b"]
    assert _cap(_body(defaulted)) == 2048
    listed = load_catalog().providers["groq"].models[0]  # a catalog model: its own limit
    model = resolve_profiles({"providers": {"groq": {}}})["groq"].models[listed.id]
    assert model.max_tokens_known and model.max_tokens == listed.max_tokens != 32_768
    estimate = 2  # the prompt, "sys" and "hi": ceil(5 characters / 4)
    assert _cap(_body(model)) == min(listed.max_tokens, listed.context_window - estimate - 4096)


# (store sent, system role, max-tokens field, reasoning_effort sent; OpenRouter sends `reasoning`)
@pytest.mark.parametrize(
    ("url", "store", "role", "field", "effort"),
    [
        ("http://gateway.local/v1", True, "developer", "max_completion_tokens", True),
        ("https://api.together.ai/v1", False, "system", "max_tokens", False),
        ("https://api.moonshot.ai/v1", False, "system", "max_tokens", False),
        ("https://integrate.api.nvidia.com/v1", False, "system", "max_tokens", False),
        ("https://api.cerebras.ai/v1", False, "system", "max_completion_tokens", True),
        ("https://api.x.ai/v1", False, "system", "max_completion_tokens", False),
        ("https://llm.chutes.ai/v1", False, "system", "max_tokens", True),
        ("https://opencode.ai/zen/v1", False, "system", "max_completion_tokens", True),
        ("https://api.ant-ling.com/v1", False, "system", "max_tokens", False),
        ("https://api.z.ai/api/paas/v4", False, "system", "max_tokens", False),
        ("https://gateway.ai.cloudflare.com/v1/x/y/compat", False, "system", "max_tokens", False),
        (
            "https://api.cloudflare.com/client/v4/ai/v1",
            False,
            "system",
            "max_completion_tokens",
            True,
        ),
        ("https://openrouter.ai/api/v1", True, "system", "max_completion_tokens", False),
        ("https://api.deepseek.com", False, "system", "max_completion_tokens", True),
    ],
    ids=lambda v: v if isinstance(v, str) and "/" in v else None,
)
def test_detect_declared_route_by_url(
    url: str, store: bool, role: str, field: str, effort: bool
) -> None:
    body = _body(_model(url))
    assert ("store" in body) is store
    assert body["messages"][0]["role"] == role
    assert field in body and ({"max_tokens", "max_completion_tokens"} - {field}).isdisjoint(body)
    assert ("reasoning_effort" in body) is effort


@pytest.mark.parametrize(
    ("url", "fmt"),
    [
        ("http://gateway.local/v1", "openai"),
        ("https://api.together.xyz/v1", "together"),
        ("https://open.bigmodel.cn/api/paas/v4", "zai"),
        ("https://api.ant-ling.com/v1", "ant-ling"),
        ("https://openrouter.ai/api/v1", "openrouter"),
        ("https://api.deepseek.com", "deepseek"),
    ],
)
def test_detect_thinking_format(url: str, fmt: str) -> None:
    compat = completions_compat(_model(url))
    assert compat.thinking_format == fmt
    assert compat.requires_reasoning_content_on_assistant_messages is (fmt == "deepseek")


@pytest.mark.parametrize(
    ("model_id", "role"), [("anthropic/claude-x", "developer"), ("meta/llama-x", "system")]
)
def test_detect_openrouter_developer_role_by_model_family(model_id: str, role: str) -> None:
    body = _body(_model("https://openrouter.ai/api/v1", model_id))
    assert body["messages"][0]["role"] == role


def test_detect_unrecognized_endpoint_gets_openai_defaults() -> None:
    assert completions_compat(_model("http://127.0.0.1:8000/v1")) == COMPLETIONS_DEFAULTS


def test_detect_configured_compat_wins_per_field() -> None:
    compat = completions_compat(
        _model("https://api.together.ai/v1", supports_reasoning_effort=True)
    )
    assert compat.supports_reasoning_effort is True
    assert compat.max_tokens_field == "max_tokens"  # the rest stays detected


def test_detect_deepseek_provider_id_without_deepseek_url_keeps_store_and_role() -> None:
    model = resolve_profiles({"providers": {"deepseek": {"base_url": "http://127.0.0.1:9"}}})[
        "deepseek"
    ].models["deepseek-v4-flash"]
    compat = completions_compat(msgspec.structs.replace(model, compat=NO_SWITCHES))
    assert compat.thinking_format == "deepseek"
    assert (compat.supports_store, compat.supports_developer_role) == (True, True)
