"""Remaining `catalog.spec` cases (catalogue §8.2): declared routes, repoints, settings writes,
the configurable-provider directory."""

from __future__ import annotations

from typing import Any

import pytest
from providers_fixtures import TEXT_EVENTS, MockServer, Reply

from modelwire import LlmRuntime
from modelwire.adapters.providers import ProvidersAdapter, supported_protocols
from modelwire.adapters.providers.catalog import load_catalog
from modelwire.adapters.providers.compat import written
from modelwire.adapters.providers.config import resolve_profiles
from modelwire.assembler import BlockAssembler
from modelwire.errors import HarnessError, LlmError
from modelwire.runtime.adapter import LlmAdapter
from modelwire.vocab import (
    ConfigurableProvider,
    GenerateOptions,
    ModelInfo,
    ProviderInfo,
    ResolvedModelInfo,
    TextBlock,
    user_message,
)


def _gateway(url: str, **fields: Any) -> dict[str, Any]:
    profile = {
        "api": "openai-completions",
        "base_url": url + "/v1",
        "api_key_env": "ACME_GATEWAY_KEY",
        "display_name": "Acme Gateway",
        "models": [
            {"id": "acme-large", "name": "Acme Large", "context_window": 65536, "max_tokens": 4096}
        ],
    }
    return {"providers": {"acme-gateway": {**profile, **fields}}}


def _opts(provider: str, model: str, **kw: Any) -> GenerateOptions:
    return GenerateOptions(provider=provider, model=model, messages=(user_message("hi"),), **kw)


async def _run(adapter: ProvidersAdapter, options: GenerateOptions) -> BlockAssembler:
    asm = BlockAssembler()
    async for chunk in adapter.stream(options):
        asm.push(chunk)
    return asm


async def _fails(adapter: ProvidersAdapter, options: GenerateOptions) -> LlmError:
    with pytest.raises(LlmError) as info:
        await _run(adapter, options)
    return info.value


def _refused(providers: Any, fragment: str) -> None:
    with pytest.raises(HarnessError) as info:
        resolve_profiles({"providers": providers})
    assert info.value.code == "INVALID_CONFIG" and fragment in info.value.message


async def test_catalog_43_declared_route_streams_with_its_reference_key() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            _gateway(server.url), env={"ACME_GATEWAY_KEY": "test-key"}
        )
        asm = await _run(adapter, _opts("acme-gateway", "acme-large"))
    assert asm.blocks() == [TextBlock("hello")] and asm.finish.kind == "stop"
    assert server.paths == ["/v1/chat/completions"]
    assert server.headers[0]["authorization"] == "Bearer test-key"


async def test_catalog_44_declared_model_listed_and_resolved() -> None:
    adapter = ProvidersAdapter.from_config(_gateway("http://h"))
    assert await adapter.list_models("acme-gateway") == [
        ModelInfo(
            provider="acme-gateway",
            id="acme-large",
            name="Acme Large",
            input_modalities=("text",),
            recommended=True,  # a declared route's default is its first model
        )
    ]
    info = await adapter.resolve_model("acme-gateway", "acme-large")
    assert (info.name, info.input_modalities) == ("Acme Large", ("text",))
    assert info.context is not None and info.context.context_window == 65536
    assert info.default_max_tokens == 4096


async def test_catalog_45_declared_model_without_efforts_has_no_reasoning() -> None:
    adapter = ProvidersAdapter.from_config({**_gateway("http://h")})
    adapter.update_config({"providers": {**_gateway("http://h")["providers"], "deepseek": {}}})
    assert (await adapter.resolve_model("acme-gateway", "acme-large")).reasoning is None
    flash = await adapter.resolve_model("deepseek", "deepseek-v4-flash")
    assert flash.reasoning is not None and "off" in [e.id for e in flash.reasoning.efforts]


def _directory(runtime: LlmRuntime) -> dict[str, ConfigurableProvider]:
    return {e.provider: e for e in runtime.list_configurable_providers()}


async def test_catalog_46_declared_route_joins_the_directory() -> None:
    runtime = LlmRuntime()
    ProvidersAdapter.from_config(
        {"providers": {**_gateway("http://h")["providers"], "deepseek": {}}}
    ).register(runtime)
    entries = _directory(runtime)
    gateway = entries["acme-gateway"]
    assert gateway.declared is True and gateway.display_name == "Acme Gateway"
    assert gateway.settings_ns == "providers"
    assert tuple(gateway.settings_path) == ("providers", "acme-gateway")
    assert [p for p, e in entries.items() if e.declared] == ["acme-gateway"]
    assert entries["deepseek"].declared is False


async def test_catalog_49_modalities_end_to_end_through_a_settings_write() -> None:
    runtime = LlmRuntime()
    adapter = ProvidersAdapter.from_config(None)
    adapter.register(runtime)
    adapter.update_config(
        {
            "providers": {
                "anthropic": {"default_input": ["text"]},
                "gw": {
                    "api": "openai-completions",
                    "base_url": "http://h",
                    "models": [{"id": "plain"}, {"id": "eyes", "input": ["text", "image"]}],
                },
            }
        }
    )
    vision = await runtime.resolve_model_info("anthropic", "claude-sonnet-4-5")
    assert vision.input_modalities is not None and "image" in vision.input_modalities
    listed = {m.id: m.input_modalities for m in await runtime.list_models("gw")}
    assert listed == {"plain": ("text",), "eyes": ("text", "image")}


@pytest.mark.parametrize(
    ("api", "fragment"),
    [
        pytest.param("klingon-chat", "cannot serve; supported protocols are", id="unknown-string"),
        pytest.param(None, "needs an api", id="no-protocol"),
    ],
)
def test_catalog_54_unknown_or_missing_protocol_refused(api: str | None, fragment: str) -> None:
    profile: dict[str, Any] = {"base_url": "http://h", "models": [{"id": "m"}]}
    if api is not None:
        profile["api"] = api
    _refused({"gw": profile}, fragment)
    assert api not in supported_protocols()


async def test_catalog_62_new_model_on_catalog_route_streams_through_catalog_protocol() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "deepseek": {"base_url": server.url + "/v1", "models": [{"id": "deepseek-v9"}]}
                }
            },
            env={"DEEPSEEK_API_KEY": "k"},
        )
        asm = await _run(adapter, _opts("deepseek", "deepseek-v9"))
    assert asm.finish.kind == "stop"
    assert server.paths == ["/v1/chat/completions"]
    assert server.bodies[0]["model"] == "deepseek-v9"


async def test_catalog_63_unlisted_id_on_a_models_list_is_unknown_before_io() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "deepseek": {"base_url": server.url, "models": [{"id": "deepseek-v4-flash"}]}
                }
            },
            env={"DEEPSEEK_API_KEY": "k"},
        )
        error = await _fails(adapter, _opts("deepseek", "deepseek-v4-pro"))
    assert error.code == "UNKNOWN_MODEL" and "deepseek-v4-pro" in error.message
    assert server.paths == []


async def test_catalog_65_catalog_route_serves_repeated_requests_through_catalog_protocol() -> None:
    """Ported in intent: upstream checks the reused pi-ai provider delegates `stream` and
    `streamSimple`; we own one request path, so two calls on a catalog route both reach the
    catalog protocol's endpoint as two real requests."""
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            {"providers": {"deepseek": {"base_url": server.url}}}, env={"DEEPSEEK_API_KEY": "k"}
        )
        for effort in (None, "off"):
            assert (
                await _run(adapter, _opts("deepseek", "deepseek-v4-pro", reasoning_effort=effort))
            ).finish.kind == "stop"
    assert server.paths == ["/chat/completions", "/chat/completions"]


async def test_catalog_68_69_repointed_openai_route_over_the_wire_keeps_catalog_auth() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "openai": {"api": "openai-completions", "base_url": server.url + "/v1"}
                }
            },
            env={"OPENAI_API_KEY": "openai-ambient"},
        )
        asm = await _run(adapter, _opts("openai", "gpt-4.1"))
    assert asm.finish.kind == "stop"
    assert server.paths == ["/v1/chat/completions"]
    assert server.headers[0]["authorization"] == "Bearer openai-ambient"


def test_catalog_70_71_oauth_only_codex_is_not_a_catalog_route() -> None:
    """Ported in intent: pi-ai's `openai-codex` authenticates with OAuth, which this adapter
    does not offer (spec §4.6); the catalog withholds it, so the key is an ordinary declared
    route and a bare profile under it is refused, with or without `api_key_env`, in one line
    that names the provider and why (issue #16)."""
    why = 'provider "openai-codex" is not served by modelwire: OAuth-only'
    _refused({"openai-codex": {"api_key_env": "CODEX_TOKEN"}}, why)
    _refused({"openai-codex": {}}, why)
    _refused({"github-copilot": {}}, 'provider "github-copilot" is not served by modelwire')
    _refused({"google-vertex": {}}, "Application Default Credentials")


def test_catalog_79_override_efforts_reshape_one_model() -> None:
    models = resolve_profiles(
        {
            "providers": {
                "deepseek": {
                    "model_overrides": {
                        "deepseek-v4-flash": {"reasoning_efforts": {"off": None, "high": "high"}}
                    }
                }
            }
        }
    )["deepseek"].models
    assert models["deepseek-v4-flash"].levels == ("off", "high")
    assert models["deepseek-v4-pro"].levels == ("off", "high", "max")


async def test_catalog_92_null_compat_refused_at_the_write() -> None:
    runtime = LlmRuntime()
    adapter = ProvidersAdapter.from_config(_gateway("http://h"))
    adapter.register(runtime)
    bad = _gateway("http://h", compat={"supports_developer_role": None})
    with pytest.raises(HarnessError, match="with no value"):
        adapter.update_config(bad)
    assert [p.id for p in runtime.list_providers()] == ["acme-gateway"]
    assert "compat" not in written(
        adapter.snapshot.profiles["acme-gateway"].models["acme-large"].compat
    )


async def test_catalog_93_settings_written_developer_role_switch_changes_the_request() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        efforts = {"high": "high"}
        models = [{"id": "acme-large", "reasoning_efforts": efforts}]
        adapter = ProvidersAdapter.from_config(
            _gateway(server.url, models=models), env={"ACME_GATEWAY_KEY": "k"}
        )
        await _run(adapter, _opts("acme-gateway", "acme-large", system="rules"))
        adapter.update_config(
            _gateway(server.url, models=models, compat={"supports_developer_role": False})
        )
        await _run(adapter, _opts("acme-gateway", "acme-large", system="rules"))
    assert [b["messages"][0] for b in server.bodies] == [
        {"role": "developer", "content": "rules"},
        {"role": "system", "content": "rules"},
    ]


class _OtherFamily(LlmAdapter):
    """Another adapter family owning one route and one directory entry."""

    async def stream(self, options: GenerateOptions) -> Any:  # pragma: no cover - never called
        raise AssertionError("not streamed")
        yield  # type: ignore[unreachable]

    def provider_info(self, provider: str) -> ProviderInfo:
        return ProviderInfo(provider, provider)

    async def list_models(self, provider: str) -> list[ModelInfo]:
        return []

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        return ResolvedModelInfo(provider=provider, id=model, name=model)


def _other_family(runtime: LlmRuntime) -> _OtherFamily:
    """Another family whose directory entry (not route) is `deepseek-official`."""
    other = _OtherFamily()
    runtime.register_adapter(["deepseek-native"], other)
    runtime.register_configurable_providers(
        [
            ConfigurableProvider(
                provider="deepseek-official",
                display_name="DeepSeek (native)",
                settings_ns="deepseek",
                settings_path=("deepseek",),
                declared=False,
            )
        ]
    )
    return other


def _declared(route: str) -> dict[str, Any]:
    return {route: {"api": "openai-completions", "base_url": "http://h", "models": [{"id": "m"}]}}


async def test_catalog_103_directory_collision_keeps_previous_directory_and_owner() -> None:
    runtime = LlmRuntime()
    _other_family(runtime)
    adapter = ProvidersAdapter.from_config({"providers": _declared("gw")})
    adapter.register(runtime)
    before = runtime.list_configurable_providers()
    assert len(before) == len(load_catalog().providers) + 2  # catalog + gw + the other family
    with pytest.raises(LlmError) as info:
        adapter.update_config({"providers": {**_declared("gw"), **_declared("deepseek-official")}})
    assert info.value.code == "DUPLICATE_DIRECTORY"
    assert runtime.list_configurable_providers() == before
    assert _directory(runtime)["deepseek-official"].settings_ns == "deepseek"
    assert [p.id for p in runtime.list_providers()] == ["deepseek-native", "gw"]
    assert adapter.routes == ["gw"]


async def test_catalog_104_declared_routes_join_and_leave_the_directory() -> None:
    runtime = LlmRuntime()
    adapter = ProvidersAdapter.from_config(None)
    adapter.register(runtime)
    catalog_size = len(runtime.list_configurable_providers())
    adapter.update_config({"providers": {**_declared("gw-a"), **_declared("gw-b")}})
    declared = sorted(p for p, e in _directory(runtime).items() if e.declared)
    assert declared == ["gw-a", "gw-b"]
    assert len(runtime.list_configurable_providers()) == catalog_size + 2
    adapter.update_config(None)
    assert not any(e.declared for e in runtime.list_configurable_providers())
    assert len(runtime.list_configurable_providers()) == catalog_size


async def test_catalog_105_dormant_directory_withholds_oauth_only_codex() -> None:
    runtime = LlmRuntime()
    ProvidersAdapter.from_config(None).register(runtime)
    entries = _directory(runtime)
    assert "openai-codex" not in entries
    assert entries["anthropic"].declared is False and entries["openai"].declared is False
