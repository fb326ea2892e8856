"""Spec G.4 (adapter.spec) cases 33-65: registration, retry policy, catalog and model metadata,
configuration validation, credentials and base-URL resolution."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from deepseek_helpers import HELLO, Server, collect, options, sse_response

from modelwire import LlmError, LlmRuntime, NormalRetryPolicy, ProviderInfo
from modelwire.adapters.deepseek import DeepSeekAdapter, DeepSeekModel
from modelwire.adapters.deepseek.models import DEFAULT_BASE_URL, resolve_deepseek_config

ROUTE = "deepseek-official"
MAX_SAFE = 2**53 - 1


def invalid(code: str = "INVALID_CONFIG", **kw: Any) -> LlmError:
    with pytest.raises(LlmError) as info:
        DeepSeekAdapter(env={}, **kw)
    assert info.value.code == code
    return info.value


def test_g4_33_registers_any_route_with_display_name_and_disposes() -> None:
    rt = LlmRuntime()
    reg = rt.register_adapter([ROUTE], DeepSeekAdapter(env={}))
    assert rt.list_providers() == [ProviderInfo(ROUTE, "DeepSeek")]
    reg()
    assert rt.list_providers() == []


def test_g4_34_configured_retry_policy_registered_in_resolved_form() -> None:
    rt = LlmRuntime()
    adapter = DeepSeekAdapter(env={}, retry_policy={"mode": "normal", "max_retries": 4})
    rt.register_adapter([ROUTE], adapter)
    assert rt.provider_retry_policy(ROUTE) == NormalRetryPolicy(max_retries=4)


async def test_g4_35_default_catalog_and_model_info() -> None:
    rt = LlmRuntime()
    rt.register_adapter([ROUTE], DeepSeekAdapter(env={}))
    models = await rt.list_models(ROUTE)
    assert [(m.id, m.name, m.input_modalities) for m in models] == [
        ("deepseek-v4-flash", "DeepSeek-V4-Flash", ("text",)),
        ("deepseek-v4-pro", "DeepSeek-V4-Pro", ("text",)),
    ]
    info = await rt.resolve_model_info(ROUTE, "deepseek-v4-pro")
    assert info.context is not None and info.context.context_window == 1_000_000
    assert info.default_max_tokens == 256_000
    assert info.reasoning is not None
    assert [(e.id, e.name) for e in info.reasoning.efforts] == [
        ("off", "Off"),
        ("low", "Low"),
        ("high", "High"),
        ("max", "Max"),
    ]
    assert info.reasoning.default_effort == "high"


@pytest.mark.parametrize("effort", ["off", "low", "max"])
async def test_g4_36_configured_default_effort_published_for_unlisted_model(effort: str) -> None:
    info = await DeepSeekAdapter(env={}, reasoning={"effort": effort}).resolve_model(
        ROUTE, "x-unlisted"
    )
    assert info.reasoning is not None and info.reasoning.default_effort == effort


async def test_g4_37_disabled_plus_off_loads_and_publishes_only_off() -> None:
    adapter = DeepSeekAdapter(env={}, reasoning={"thinking": "disabled", "effort": "off"})
    info = await adapter.resolve_model(ROUTE, "deepseek-v4-flash")
    assert info.reasoning is not None and [e.id for e in info.reasoning.efforts] == ["off"]


@pytest.mark.parametrize("effort", ["low", "high", "max"])
def test_g4_38_disabled_with_effort_fails_construction(effort: str) -> None:
    err = invalid(reasoning={"thinking": "disabled", "effort": effort})
    assert 'only reasoning effort "off"' in err.message


@pytest.mark.parametrize("effort", ["low", "high", "max"])
def test_g4_39_disabled_with_effort_rejected_by_resolver(effort: str) -> None:
    with pytest.raises(LlmError, match='only reasoning effort "off"'):
        resolve_deepseek_config(env={}, reasoning={"thinking": "disabled", "effort": effort})


async def test_g4_40_direct_adapter_disabled_off_publishes_only_off() -> None:
    info = await DeepSeekAdapter(env={}, reasoning={"thinking": "disabled"}).resolve_model("r", "m")
    assert info.reasoning is not None
    assert ([e.id for e in info.reasoning.efforts], info.reasoning.default_effort) == (
        ["off"],
        "off",
    )


async def test_g4_41_direct_adapter_without_models_uses_default_catalog() -> None:
    ids = [m.id for m in await DeepSeekAdapter(env={}).list_models("r")]
    assert ids == ["deepseek-v4-flash", "deepseek-v4-pro"]


async def test_g4_42_entry_without_name_or_modalities_lists_as_text_named_by_id() -> None:
    [m] = await DeepSeekAdapter(env={}, models=[DeepSeekModel(id="bare")]).list_models("r")
    assert (m.id, m.name, m.input_modalities) == ("bare", "bare", ("text",))


async def test_g4_43_configured_models_advertised_and_arbitrary_ids_resolve() -> None:
    adapter = DeepSeekAdapter(
        env={}, models=[{"id": "a", "description": "first", "input_modalities": ["text", "image"]}]
    )
    [m] = await adapter.list_models("r")
    assert (m.name, m.description, m.input_modalities) == ("a", "first", ("text", "image"))
    info = await adapter.resolve_model("r", "anything")
    assert info.context is not None and info.context.context_window == 1_000_000
    assert info.default_max_tokens == 256_000 and info.input_modalities == ("text",)


async def test_g4_44_exact_capacity_beats_default_context_window() -> None:
    adapter = DeepSeekAdapter(
        env={}, default_context_window=64_000, models=[{"id": "a", "context_window": 8_000}]
    )
    a = await adapter.resolve_model("r", "a")
    b = await adapter.resolve_model("r", "b")
    assert a.context is not None and b.context is not None
    assert (a.context.context_window, b.context.context_window) == (8_000, 64_000)


async def test_g4_45_empty_models_advertises_nothing() -> None:
    assert await DeepSeekAdapter(env={}, models=[]).list_models("r") == []


@pytest.mark.parametrize(
    ("models", "fragment"),
    [
        pytest.param([{"id": ""}], "ids must be non-empty", id="empty-id"),
        pytest.param([{"id": "a", "name": ""}], "empty name", id="empty-name"),
        pytest.param(
            [{"id": "a", "context_window": 0}],
            "context_window must be a positive integer",
            id="context-0",
        ),
        pytest.param([{"id": "a", "context_window": 1.5}], "context_window", id="context-1.5"),
        pytest.param(
            [{"id": "a", "input_modalities": []}],
            "input_modalities must not be empty",
            id="empty-modalities",
        ),
        pytest.param(
            [{"id": "a", "input_modalities": ["text", "text"]}],
            "must not contain duplicates",
            id="dup-modalities",
        ),
        pytest.param(
            [{"id": "a", "input_modalities": ["audio"]}],
            'only "text" and "image"',
            id="unknown-modality",
        ),
        pytest.param([{"id": "a"}, {"id": "a"}], 'duplicate catalog model "a"', id="duplicate-ids"),
    ],
)
def test_g4_46_invalid_catalog_fails_construction(models: Any, fragment: str) -> None:
    err = invalid("INVALID_CATALOG", models=models)
    assert fragment in err.message and "models[" in err.message


@pytest.mark.parametrize("mods", [(), ("video",)], ids=["empty", "unknown"])
def test_g4_47_programmatic_entries_bypassing_schema_still_rejected(mods: tuple[str, ...]) -> None:
    invalid("INVALID_CATALOG", models=[DeepSeekModel(id="a", input_modalities=mods)])


@pytest.mark.parametrize("value", [0, 1.5])
def test_g4_48_per_model_max_tokens_positive_integer(value: Any) -> None:
    err = invalid("INVALID_CATALOG", models=[{"id": "a", "max_tokens": value}])
    assert "models[0].max_tokens must be a positive integer" in err.message


async def test_g4_49_model_max_tokens_wins_others_get_profile_value() -> None:
    adapter = DeepSeekAdapter(
        env={}, max_tokens=4096, models=[{"id": "a", "max_tokens": 100}, {"id": "b"}]
    )
    got = [(await adapter.resolve_model("r", m)).default_max_tokens for m in ("a", "b", "zzz")]
    assert got == [100, 4096, 4096]


def test_g4_50_invalid_context_window_registers_nothing() -> None:
    rt = LlmRuntime()
    with pytest.raises(LlmError):
        rt.register_adapter(
            [ROUTE], DeepSeekAdapter(env={}, models=[{"id": "a", "context_window": -1}])
        )
    assert rt.list_providers() == []


@pytest.mark.parametrize("value", [0, 1.5])
def test_g4_51_invalid_default_context_window(value: Any) -> None:
    assert (
        "default_context_window must be a positive integer"
        in invalid(default_context_window=value).message
    )
    with pytest.raises(LlmError):
        DeepSeekAdapter.from_config({"default_context_window": value}, env={})


@pytest.mark.parametrize("value", [0, 1.5, MAX_SAFE + 1])
def test_g4_52_invalid_adapter_max_tokens(value: Any) -> None:
    assert "max_tokens must be a positive safe integer" in invalid(max_tokens=value).message


@pytest.mark.parametrize("value", [0, 1.5, MAX_SAFE + 1])
def test_g4_53_image_payload_bound_is_not_a_config_key(value: Any) -> None:
    # modelwire's DeepSeek adapter never sends images, so there is no image byte bound to set.
    with pytest.raises(LlmError, match='unknown configuration key "max_request_image_bytes"'):
        DeepSeekAdapter.from_config({"max_request_image_bytes": value}, env={})


async def test_g4_54_env_only_key_and_base_url(server: Server) -> None:
    server.queue(sse_response(HELLO))
    adapter = DeepSeekAdapter(env={"DEEPSEEK_API_KEY": "env-key", "DEEPSEEK_BASE_URL": server.url})
    await collect(adapter.stream(options()))
    assert server.requests[0].headers["authorization"] == "Bearer env-key"


async def test_g4_55_keyless_registers_browsable_requests_fail_missing(server: Server) -> None:
    rt = LlmRuntime()
    adapter = DeepSeekAdapter(env={}, base_url=server.url)
    rt.register_adapter([ROUTE], adapter)
    assert [m.id for m in await rt.list_models(ROUTE)]
    with pytest.raises(LlmError) as info:
        await collect(adapter.stream(options()))
    assert info.value.code == "MISSING_CREDENTIAL"
    assert (
        "DEEPSEEK_API_KEY" in info.value.message and "export DEEPSEEK_API_KEY" in info.value.message
    )
    assert server.requests == []


async def test_g4_56_ambient_env_key_sent_as_bearer(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "ambient-key")
    server.queue(sse_response(HELLO))
    await collect(DeepSeekAdapter(base_url=server.url).stream(options()))
    assert server.requests[0].headers["authorization"] == "Bearer ambient-key"


async def test_g4_57_empty_env_key_is_missing_credential(server: Server) -> None:
    adapter = DeepSeekAdapter(env={"DEEPSEEK_API_KEY": ""}, base_url=server.url)
    with pytest.raises(LlmError) as info:
        await collect(adapter.stream(options()))
    assert info.value.code == "MISSING_CREDENTIAL"


def test_g4_58_explicit_base_url_beats_env() -> None:
    adapter = DeepSeekAdapter(
        env={"DEEPSEEK_BASE_URL": "http://env.example"}, base_url="http://explicit.example"
    )
    assert adapter.config.base_url == "http://explicit.example"


def test_g4_59_env_base_url_used_when_omitted() -> None:
    assert (
        DeepSeekAdapter(env={"DEEPSEEK_BASE_URL": "http://env.example"}).config.base_url
        == "http://env.example"
    )


def test_g4_60_process_env_base_url_honoured_and_explicit_still_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEEPSEEK_BASE_URL", "http://process.example")
    assert DeepSeekAdapter().config.base_url == "http://process.example"
    assert (
        DeepSeekAdapter(base_url="http://explicit.example").config.base_url
        == "http://explicit.example"
    )


def test_g4_61_no_config_no_env_uses_public_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    assert DeepSeekAdapter().config.base_url == DEFAULT_BASE_URL == "https://api.deepseek.com"


async def test_g4_62_constructible_directly_with_default_catalog() -> None:
    assert len(await DeepSeekAdapter(env={}).list_models("r")) == 2


class CountingEnv(Mapping[str, str]):
    def __init__(self, data: dict[str, str]) -> None:
        self.data = data
        self.reads: list[str] = []

    def __getitem__(self, key: str) -> str:
        self.reads.append(key)
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


async def test_g4_63_one_stream_reads_the_key_exactly_once(server: Server) -> None:
    env = CountingEnv({"DEEPSEEK_API_KEY": "counted-key"})
    adapter = DeepSeekAdapter(env=env, base_url=server.url)
    env.reads.clear()
    server.queue(sse_response(HELLO))
    await collect(adapter.stream(options()))
    assert env.reads == ["DEEPSEEK_API_KEY"]
    assert server.requests[0].headers["authorization"] == "Bearer counted-key"


@pytest.mark.parametrize("value", [math.inf, 2_147_483_648, 0], ids=["inf", "over-max", "zero"])
def test_g4_64_invalid_stream_idle_timeout(value: float) -> None:
    assert "stream_idle_timeout_ms" in invalid(stream_idle_timeout_ms=value).message


def test_g4_65_invalid_nested_retry_policy_fails_naming_retry_policy() -> None:
    rt = LlmRuntime()
    with pytest.raises(LlmError) as info:
        rt.register_adapter(
            [ROUTE], DeepSeekAdapter(env={}, retry_policy={"mode": "normal", "max_retries": -1})
        )
    assert "retry_policy" in info.value.message and info.value.code == "INVALID_CONFIG"
    assert rt.list_providers() == []
