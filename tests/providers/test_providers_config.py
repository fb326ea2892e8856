"""Profile resolution (spec §1, catalogue §8.1 #30-36, §8.2 #47-100, §8.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from modelwire.adapters.providers import ProvidersAdapter, load_config_file, supported_protocols
from modelwire.adapters.providers.compat import written
from modelwire.adapters.providers.config import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_REQUEST_IMAGE_BYTES,
    DEFAULT_MAX_TOKENS,
    resolve_profiles,
)
from modelwire.errors import HarnessError
from modelwire.policy import AlwaysRetryPolicy, NormalRetryPolicy

ACME = {"api": "openai-completions", "base_url": "http://h/v1", "models": [{"id": "m"}]}


def _refused(providers: Any, fragment: str) -> None:
    with pytest.raises(HarnessError) as info:
        resolve_profiles({"providers": providers})
    assert info.value.code == "INVALID_CONFIG"
    assert fragment in info.value.message


def _acme(**fields: Any) -> dict[str, Any]:
    return {"acme": {**ACME, **fields}}


def test_mp_30_resolver_defaults_and_dormant() -> None:
    assert dict(resolve_profiles(None)) == {}
    assert dict(resolve_profiles({})) == {}
    assert dict(resolve_profiles({"providers": {}})) == {}
    profile = resolve_profiles({"providers": _acme()})["acme"]
    assert profile.max_request_image_bytes == DEFAULT_MAX_REQUEST_IMAGE_BYTES == 20971520
    assert profile.stream_idle_timeout_ms == 300000
    assert profile.display_name == "acme"
    assert isinstance(profile.retry_policy, NormalRetryPolicy)
    explicit = resolve_profiles({"providers": _acme(max_request_image_bytes=1024)})["acme"]
    assert explicit.max_request_image_bytes == 1024


@pytest.mark.parametrize(
    ("providers", "fragment"),
    [
        pytest.param({"": ACME}, "non-empty", id="empty-route"),
        pytest.param({"acme": {}}, "resolves no models", id="declared-without-models"),
        pytest.param([ACME], "dict keyed by provider", id="array"),
        pytest.param(_acme(provider="x"), "moved to the providers dict key", id="provider-field"),
        pytest.param(_acme(base_url=""), "empty baseURL", id="empty-base-url"),
        pytest.param(_acme(api_key_env="not-a-var!"), "must match", id="api-key-env-pattern"),
        pytest.param(_acme(max_request_image_bytes=0), "positive integer", id="image-bytes-0"),
        pytest.param(_acme(display_name=""), "empty displayName", id="empty-display-name"),
    ],
)
def test_mp_30_resolver_refusals(providers: Any, fragment: str) -> None:
    _refused(providers, fragment)


@pytest.mark.parametrize("key", ["max_retries", "max_retry_delay_ms"])
def test_mp_31_removed_retry_fields_refused(key: str) -> None:
    _refused(_acme(**{key: 3}), "agent recovery")
    with pytest.raises(HarnessError, match="removed"):
        ProvidersAdapter.from_config({"providers": _acme(**{key: 3})})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timeout_ms", -1),
        ("stream_idle_timeout_ms", 0),
        ("stream_idle_timeout_ms", float("nan")),
        ("stream_idle_timeout_ms", 2147483648),
        ("max_request_image_bytes", 0),
        ("max_request_image_bytes", 1.5),
        ("max_request_image_bytes", float("nan")),
    ],
)
def test_mp_32_load_rejects_bad_numbers(field: str, value: Any) -> None:
    with pytest.raises(HarnessError) as info:
        ProvidersAdapter.from_config({"providers": _acme(**{field: value})})
    assert field in info.value.message


def test_mp_33_nested_retry_policy_validation() -> None:
    bad = {"mode": "normal", "backoff": {"jitter_ratio": -1}}
    with pytest.raises(HarnessError, match=r"retry_policy\.backoff\.jitter_ratio"):
        resolve_profiles({"providers": _acme(retry_policy=bad)})
    with pytest.raises(HarnessError, match="max_retries"):
        resolve_profiles({"providers": _acme(retry_policy={"mode": "normal", "max_retries": -1})})
    always = {
        "mode": "always",
        "backoff": {"initial_delay_ms": 25, "max_delay_ms": 100, "jitter_ratio": 0.2},
    }
    policy = resolve_profiles({"providers": _acme(retry_policy=always)})["acme"].retry_policy
    assert policy == AlwaysRetryPolicy(initial_delay_ms=25, max_delay_ms=100, jitter_ratio=0.2)


@pytest.mark.parametrize(
    ("value", "fragment"), [(0, "positive finite"), (2147483648, "no greater")]
)
def test_mp_36_idle_timeout_messages(value: int, fragment: str) -> None:
    _refused(_acme(stream_idle_timeout_ms=value), fragment)


def test_mp_47_capacity_fallbacks() -> None:
    bare = resolve_profiles({"providers": _acme()})["acme"].models["m"]
    assert (bare.context_window, bare.max_tokens) == (DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS)
    assert bare.configured_max_tokens is None
    small = resolve_profiles(
        {
            "providers": _acme(
                default_context_window=4096,
                default_max_tokens=256,
                models=[{"id": "m"}, {"id": "sized", "max_tokens": 512}],
            )
        }
    )["acme"].models
    assert (small["m"].context_window, small["m"].max_tokens) == (4096, 256)
    assert small["sized"].configured_max_tokens == 512


def test_mp_48_modalities_entry_then_catalog_then_route() -> None:
    profiles = resolve_profiles(
        {
            "providers": {
                "anthropic": {"default_input": ["text"]},
                "acme": {**ACME, "models": [{"id": "m"}, {"id": "v", "input": ["text", "image"]}]},
            }
        }
    )
    assert "image" in profiles["anthropic"].models["claude-sonnet-4-5"].input
    assert profiles["acme"].models["m"].input == ("text",)
    assert profiles["acme"].models["v"].input == ("text", "image")


def test_mp_50_empty_entry_input_means_no_answer_and_empty_default_refused() -> None:
    profiles = resolve_profiles(
        {"providers": {"anthropic": {"models": [{"id": "claude-sonnet-4-5", "input": []}]}}}
    )
    assert "image" in profiles["anthropic"].models["claude-sonnet-4-5"].input
    _refused(_acme(default_input=[]), "defaultInput must name at least one modality")


@pytest.mark.parametrize(
    ("models", "fragment"),
    [([{"id": ""}], "empty id"), ([{"id": "m"}, {"id": "m"}], "more than once")],
)
def test_mp_51_model_ids(models: list[Any], fragment: str) -> None:
    _refused(_acme(models=models), fragment)


def test_mp_52_declared_route_needs_api_and_base_url() -> None:
    _refused({"acme": {"base_url": "http://h", "models": [{"id": "m"}]}}, "needs an api")
    _refused({"acme": {"api": "openai-completions", "models": [{"id": "m"}]}}, "needs a baseURL")


@pytest.mark.parametrize("api", ["google-vertex", "openai-codex-responses", "no-such-protocol"])
def test_mp_53_unsupported_protocols_refused(api: str) -> None:
    """OAuth-only protocols (Vertex with ADC, Codex) stay refused; issue #16 serves the others
    (spec item 53 predates the native protocols)."""
    _refused(_acme(api=api), "cannot serve; supported protocols are")
    assert api not in supported_protocols()


@pytest.mark.parametrize(
    "api",
    [
        "google-generative-ai",
        "mistral-conversations",
        "azure-openai-responses",
        "azure-openai-completions",
        "bedrock-converse-stream",
    ],
)
def test_native_protocols_are_accepted_by_profiles(api: str) -> None:
    adapter = ProvidersAdapter.from_config({"providers": _acme(api=api, api_version="v1")})
    assert adapter.snapshot.profiles["acme"].models["m"].api == api
    assert api in supported_protocols()


@pytest.mark.parametrize("value", [0, 1.5])
@pytest.mark.parametrize("field", ["context_window", "max_tokens"])
def test_mp_57_model_capacities_positive_integers(field: str, value: Any) -> None:
    _refused(_acme(models=[{"id": "m", field: value}]), "must be a positive integer")


def test_mp_59_60_catalog_route_serves_catalog_or_list() -> None:
    from modelwire.adapters.providers.catalog import load_catalog

    full = resolve_profiles({"providers": {"deepseek": {}}})["deepseek"]
    assert list(full.models) == [m.id for m in load_catalog().providers["deepseek"].models]
    listed = resolve_profiles(
        {
            "providers": {
                "deepseek": {"models": [{"id": "deepseek-v4-flash", "context_window": 1000}]}
            }
        }
    )["deepseek"].models
    assert list(listed) == ["deepseek-v4-flash"]
    assert listed["deepseek-v4-flash"].name == "DeepSeek V4 Flash"
    assert listed["deepseek-v4-flash"].context_window == 1000
    assert listed["deepseek-v4-flash"].configured_max_tokens is None


def test_mp_62_new_model_on_catalog_route_inherits_protocol() -> None:
    models = resolve_profiles({"providers": {"deepseek": {"models": [{"id": "deepseek-v9"}]}}})[
        "deepseek"
    ].models
    assert models["deepseek-v9"].api == "openai-completions"
    assert models["deepseek-v9"].base_url == "https://api.deepseek.com"


def test_mp_64_catalog_headers_survive_override() -> None:
    from modelwire.adapters.providers.catalog import load_catalog

    with_headers = next(m for m in load_catalog().providers["nvidia"].models if m.headers)
    models = resolve_profiles(
        {"providers": {"nvidia": {"models": [{"id": with_headers.id, "name": "X"}]}}}
    )["nvidia"].models
    assert dict(models[with_headers.id].headers) == with_headers.headers


def test_mp_66_opencode_models_keep_own_base_url() -> None:
    models = resolve_profiles({"providers": {"opencode": {}}})["opencode"].models
    assert models and all(m.base_url for m in models.values())


def test_mp_67_api_repoints_catalog_route() -> None:
    models = resolve_profiles({"providers": {"openai": {"api": "openai-completions"}}})[
        "openai"
    ].models
    assert {m.api for m in models.values()} == {"openai-completions"}
    assert {m.base_url for m in models.values()} == {"https://api.openai.com/v1"}


@pytest.mark.parametrize(
    ("efforts", "levels", "level_map"),
    [
        (
            {"off": None, "low": "low", "high": "high", "max": "ultra"},
            ("off", "low", "high", "max"),
            {
                "minimal": None,
                "low": "low",
                "medium": None,
                "high": "high",
                "xhigh": None,
                "max": "ultra",
            },
        ),
        (
            {"off": "none", "high": "high"},
            ("off", "high"),
            {
                "off": "none",
                "minimal": None,
                "low": None,
                "medium": None,
                "high": "high",
                "xhigh": None,
                "max": None,
            },
        ),
        ({"high": "high"}, ("high",), None),
    ],
    ids=["mp-72-off-null", "mp-73-off-value", "mp-74-high-only"],
)
def test_mp_72_74_reasoning_efforts_map(
    efforts: Any, levels: tuple[str, ...], level_map: Any
) -> None:
    model = resolve_profiles(
        {"providers": _acme(models=[{"id": "m", "reasoning_efforts": efforts}])}
    )["acme"].models["m"]
    assert model.reasoning is True
    assert model.levels == levels
    if level_map is not None:
        assert dict(model.thinking_level_map or {}) == level_map


def test_mp_75_77_catalog_efforts_narrowed_stripped_inherited() -> None:
    def flash(efforts: Any) -> Any:
        entry: dict[str, Any] = {"id": "deepseek-v4-flash"}
        if efforts is not ...:
            entry["reasoning_efforts"] = efforts
        return resolve_profiles({"providers": {"deepseek": {"models": [entry]}}})[
            "deepseek"
        ].models["deepseek-v4-flash"]

    assert flash({"off": None, "high": "high"}).levels == ("off", "high")
    assert flash(False).levels == ("off",)
    assert flash(False).reasoning is False
    inherited = flash(...)
    assert inherited.levels == ("off", "high", "max")
    assert dict(inherited.thinking_level_map or {}) == {
        "minimal": None,
        "low": None,
        "medium": None,
        "high": "high",
        "max": "max",
    }


@pytest.mark.parametrize(
    ("efforts", "fragment"),
    [
        ({}, "empty reasoningEfforts"),
        (None, "empty reasoningEfforts"),
        ({"off": None}, 'offers no level beyond "off"'),
        ({"off": "none"}, 'offers no level beyond "off"'),
        ({"high": None}, 'only "off" may leave it empty'),
        ({"high": ""}, "must not be an empty string"),
        ({"turbo": "x"}, '"off"'),
        ({"high": 3}, "must be a string"),
    ],
)
def test_mp_78_107_reasoning_efforts_refusals(efforts: Any, fragment: str) -> None:
    _refused(_acme(models=[{"id": "m", "reasoning_efforts": efforts}]), fragment)


def test_mp_79_model_override_reshapes_one_model() -> None:
    base = resolve_profiles({"providers": {"deepseek": {}}})["deepseek"].models
    over = resolve_profiles(
        {
            "providers": {
                "deepseek": {
                    "model_overrides": {"deepseek-v4-flash": {"name": "Fast", "max_tokens": 4096}}
                }
            }
        }
    )["deepseek"].models
    assert len(over) == len(base)
    assert over["deepseek-v4-flash"].name == "Fast"
    assert over["deepseek-v4-flash"].configured_max_tokens == 4096
    assert over["deepseek-v4-pro"] == base["deepseek-v4-pro"]


@pytest.mark.parametrize(
    ("providers", "fragment"),
    [
        (
            {"deepseek": {"model_overrides": {"nope": {}}}},
            "which the installed catalog does not describe",
        ),
        (_acme(model_overrides={"m": {}}), "a declared route spells every model out"),
        (
            {
                "deepseek": {
                    "models": [{"id": "deepseek-v4-flash"}],
                    "model_overrides": {"deepseek-v4-pro": {}},
                }
            },
            "models already replaces the served catalog",
        ),
        ({"deepseek": {"model_overrides": {"": {}}}}, "empty model id"),
        (
            {"deepseek": {"model_overrides": {"deepseek-v4-pro": {"id": "x"}}}},
            'sets "id", which is the dict key',
        ),
    ],
    ids=["unknown-id", "declared", "beside-models", "empty-key", "carries-id"],
)
def test_mp_80_misplaced_overrides_refused(providers: Any, fragment: str) -> None:
    _refused(providers, fragment)


def test_mp_81_82_compat_route_then_model_merge_over_catalog() -> None:
    models = resolve_profiles(
        {
            "providers": {
                "deepseek": {
                    "compat": {"thinking_format": "openai"},
                    "models": [
                        {"id": "deepseek-v4-flash", "compat": {"supports_reasoning_effort": False}},
                        {"id": "deepseek-v4-pro"},
                    ],
                }
            }
        }
    )["deepseek"].models
    flash = msgspec.to_builtins(models["deepseek-v4-flash"].compat)
    assert flash["thinking_format"] == "openai"
    assert flash["supports_reasoning_effort"] is False
    assert flash["requires_reasoning_content_on_assistant_messages"] is True


def test_mp_83_89_mixed_route_switch_lands_where_taken() -> None:
    models = resolve_profiles(
        {
            "providers": {
                "xai": {"compat": {"thinking_format": "deepseek", "supports_developer_role": False}}
            }
        }
    )["xai"].models
    for model in models.values():
        assert model.compat.supports_developer_role is False
        if model.api == "openai-completions":
            assert model.compat.thinking_format == "deepseek"
        else:
            assert "thinking_format" not in written(model.compat)


@pytest.mark.parametrize(
    ("providers", "fragment"),
    [
        (
            {
                "anthropic": {
                    "models": [{"id": "claude-sonnet-4-5", "compat": {"thinking_format": "openai"}}]
                }
            },
            'its api is "anthropic-messages"',
        ),
        (
            {"anthropic": {"compat": {"thinking_format": "openai"}}},
            "no model on the route speaks a protocol",
        ),
        (_acme(compat={"supports_developer_role": None}), "with no value"),
        (_acme(compat={"supportsDeveloperRole": False}), "supports_developer_role"),
        (_acme(compat={"open_router_routing": {}}), "is not configurable here"),
        (_acme(compat={"thinking_format": "klingon"}), "must be one of"),
        (
            {
                "deepseek": {
                    "model_overrides": {"deepseek-v4-pro": {"compat": {"supports_store": None}}}
                }
            },
            "deepseek-v4-pro.compat.supports_store is written with no value",
        ),
    ],
    ids=[
        "mp-84-model-misfit",
        "mp-85-route-unreadable",
        "mp-94-null",
        "mp-99-misspelled",
        "mp-100-withheld",
        "mp-109-format",
        "mp-96-override-null",
    ],
)
def test_mp_compat_refusals(providers: Any, fragment: str) -> None:
    _refused(providers, fragment)


def test_mp_86_88_declared_compat_lands_exactly() -> None:
    for api, compat in [
        (
            "openai-completions",
            {"supports_developer_role": False, "max_tokens_field": "max_tokens"},
        ),
        ("openai-responses", {"supports_developer_role": False}),
        (
            "anthropic-messages",
            {"supports_temperature": False, "supports_cache_control_on_tools": False},
        ),
    ]:
        model = resolve_profiles({"providers": _acme(api=api, compat=compat)})["acme"].models["m"]
        assert msgspec.to_builtins(model.compat) == compat


def test_mp_90_chat_template_kwargs_carried() -> None:
    compat = {
        "thinking_format": "qwen-chat-template",
        "chat_template_kwargs": {"think": {"$var": "thinking.enabled"}},
    }
    model = resolve_profiles({"providers": _acme(compat=compat)})["acme"].models["m"]
    assert msgspec.to_builtins(model.compat) == compat


def test_mp_110_unknown_modality_refused() -> None:
    # audio and document became modalities in issue 38; video is still unknown
    _refused(_acme(default_input=["video"]), "default_input")
    _refused(_acme(models=[{"id": "m", "input": ["video"]}]), "input")


def test_config_loads_from_toml_and_yaml(tmp_path: Path) -> None:
    toml = tmp_path / "p.toml"
    toml.write_text(
        '[providers.acme]\napi = "openai-completions"\nbase_url = "http://h/v1"\n[[providers.acme.models]]\nid = "m"\n'
    )
    yaml_file = tmp_path / "p.yaml"
    yaml_file.write_text(
        "providers:\n  acme:\n    api: openai-completions\n    base_url: http://h/v1\n    models:\n      - id: m\n"
    )
    for path in (toml, yaml_file):
        assert ProvidersAdapter.from_file(path).routes == ["acme"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("providers: [")
    with pytest.raises(HarnessError, match="not valid YAML"):
        load_config_file(bad)
    null_compat = tmp_path / "null.yaml"
    null_compat.write_text(yaml_file.read_text() + "    compat:\n      supports_developer_role:\n")
    with pytest.raises(HarnessError, match="with no value"):
        ProvidersAdapter.from_file(null_compat)
