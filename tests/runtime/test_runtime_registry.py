"""Registry, handles and the catalog: spec §11.12 SVC-24..26, 57..68, 78..83 (R-REG, R-LP, R-LM)."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_helpers import CatalogAdapter, ScriptedAdapter, collect, opts

from modelwire.errors import LlmError
from modelwire.runtime import LlmRuntime, Scope
from modelwire.vocab import ModelInfo, ProviderInfo, ResolvedModelInfo


async def test_svc_24_scope_disposal_releases_the_routes(rt: LlmRuntime) -> None:
    """Cordis child-plugin fiber → a child `Scope` that owns the registration."""
    plugin = Scope("plugin")
    child = plugin.child("scoped")
    rt.register_adapter(["scoped-model"], ScriptedAdapter(), scope=child)
    assert rt.list_providers() == [ProviderInfo("scoped-model", "scoped-model")]
    await plugin.aclose()
    assert rt.list_providers() == []


async def test_svc_25_provider_info_is_snapshotted_and_catalog_queried_live(
    rt: LlmRuntime,
) -> None:
    """JS object mutation → structs are frozen (mutation raises); the adapter swapping its objects
    shows the same contract: provider info is a registration-time snapshot, the catalog is live."""
    modalities = ["text"]
    adapter = CatalogAdapter(
        info=ProviderInfo("catalog", "Catalog Provider"),
        models=[
            ModelInfo(
                provider="catalog",
                id="fast",
                name="Fast",
                description="Low latency",
                input_modalities=modalities,  # type: ignore[arg-type]
            )
        ],
    )
    rt.register_adapter(["catalog"], adapter)
    providers = rt.list_providers()
    assert providers == [ProviderInfo("catalog", "Catalog Provider")]
    first = await rt.list_models("catalog")
    assert first == [
        ModelInfo(
            provider="catalog",
            id="fast",
            name="Fast",
            description="Low latency",
            input_modalities=("text",),
        )
    ]
    with pytest.raises(AttributeError):
        first[0].name = "Changed"  # type: ignore[misc]
    providers.clear()
    first.clear()
    modalities.append("image")
    adapter.info = ProviderInfo("catalog", "Renamed")
    adapter.models = [ModelInfo(provider="catalog", id="fast", name="Faster")]
    assert rt.list_providers() == [ProviderInfo("catalog", "Catalog Provider")]
    assert [m.name for m in await rt.list_models("catalog")] == ["Faster"]


async def test_svc_26_default_adapter_metadata(rt: LlmRuntime) -> None:
    rt.register_adapter(["plain"], ScriptedAdapter())
    assert rt.list_providers() == [ProviderInfo("plain", "plain")]
    assert await rt.list_models("plain") == []
    with pytest.raises(LlmError) as missing:
        await rt.list_models("missing")
    assert missing.value.code == "NO_ADAPTER"
    assert await rt.resolve_model_info("plain", "unlisted") == ResolvedModelInfo(
        provider="plain", id="unlisted", name="unlisted"
    )
    with pytest.raises(LlmError) as missing_info:
        await rt.resolve_model_info("missing", "m")
    assert missing_info.value.code == "NO_ADAPTER"


@pytest.mark.parametrize(
    "info",
    [
        pytest.param({"id": 1}, id="svc_57_id_not_string"),
        pytest.param({"id": "other"}, id="svc_58_id_mismatch"),
        pytest.param({"name": 1}, id="svc_59_name_not_string"),
        pytest.param({"name": ""}, id="svc_60_name_empty"),
    ],
)
def test_svc_57_60_invalid_provider_info_registers_nothing(
    rt: LlmRuntime, info: dict[str, Any]
) -> None:
    fields = {"id": "p", "name": "P", **info}
    adapter = ScriptedAdapter(info=ProviderInfo(fields["id"], fields["name"]))
    with pytest.raises(LlmError) as caught:
        rt.register_adapter(["p"], adapter)
    assert caught.value.code == "INVALID_ADAPTER"
    assert rt.list_providers() == []


def _entry(**over: Any) -> ModelInfo:
    fields: dict[str, Any] = {"provider": "p", "id": "m", "name": "M", **over}
    return ModelInfo(**fields)


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(_entry(provider=1), id="svc_61_provider_not_string"),
        pytest.param(_entry(provider="other"), id="svc_62_provider_mismatch"),
        pytest.param(_entry(id=1), id="svc_63_id_not_string"),
        pytest.param(_entry(id=""), id="svc_64_id_empty"),
        pytest.param(_entry(name=1), id="svc_65_name_not_string"),
        pytest.param(_entry(name=""), id="svc_66_name_empty"),
        pytest.param(_entry(description=1), id="svc_67_description_not_string"),
    ],
)
async def test_svc_61_67_invalid_catalog_entry(rt: LlmRuntime, entry: ModelInfo) -> None:
    rt.register_adapter(["p"], CatalogAdapter(models=[entry]))
    with pytest.raises(LlmError) as caught:
        await rt.list_models("p")
    assert caught.value.code == "INVALID_CATALOG"
    assert "catalog" in caught.value.message and '"p"' in caught.value.message


async def test_svc_68_duplicate_catalog_id(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], CatalogAdapter(models=[_entry(id="same"), _entry(id="same")]))
    with pytest.raises(LlmError) as caught:
        await rt.list_models("p")
    assert caught.value.code == "INVALID_CATALOG"


async def test_svc_78_calling_the_handle_removes_the_route(rt: LlmRuntime) -> None:
    reg = rt.register_adapter(["p"], ScriptedAdapter())
    reg()
    assert rt.list_providers() == []
    (finish,) = await collect(rt.stream(opts()))
    assert finish.reason.failure.code == "NO_ADAPTER"  # type: ignore[union-attr]


def test_svc_79_duplicate_route_is_refused(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter())
    with pytest.raises(LlmError, match="already registered") as caught:
        rt.register_adapter(["p"], ScriptedAdapter())
    assert caught.value.code == "DUPLICATE_ADAPTER"


def test_svc_80_invalid_route_sets_register_nothing(rt: LlmRuntime) -> None:
    for providers, code in (([], "INVALID_ADAPTER"), ([""], "INVALID_ADAPTER")):
        with pytest.raises(LlmError) as caught:
            rt.register_adapter(providers, ScriptedAdapter())
        assert caught.value.code == code
    with pytest.raises(LlmError) as duplicate:
        rt.register_adapter(["first", "first"], ScriptedAdapter())
    assert duplicate.value.code == "DUPLICATE_ADAPTER"
    assert rt.list_providers() == []


def test_svc_81_route_registers_again_after_disposal(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter())()
    again = rt.register_adapter(["p"], ScriptedAdapter())
    assert [p.id for p in rt.list_providers()] == ["p"]
    again()
    assert rt.list_providers() == []


def test_svc_82_replace_after_disposal_raises(rt: LlmRuntime) -> None:
    reg = rt.register_adapter(["p"], ScriptedAdapter())
    reg()
    with pytest.raises(
        LlmError, match="disposed adapter registration cannot replace its routes"
    ) as e:
        reg.replace(["leaked"])
    assert e.value.code == "REGISTRATION_DISPOSED"
    assert rt.list_providers() == []


def test_svc_83_replace_with_empty_then_new_routes(rt: LlmRuntime) -> None:
    reg = rt.register_adapter(["m1"], ScriptedAdapter())
    reg.replace([])
    assert rt.list_providers() == []
    reg.replace(["m2"])
    assert [p.id for p in rt.list_providers()] == ["m2"]
    reg()
    assert rt.list_providers() == []


# ---- not upstream: spec §12 and the Python handle/scope design ---------------------------------


def test_reg_order_replace_moves_routes_to_the_end(rt: LlmRuntime) -> None:
    a = rt.register_adapter(["a"], ScriptedAdapter())
    rt.register_adapter(["b"], ScriptedAdapter())
    a.replace(["a"])
    assert [p.id for p in rt.list_providers()] == ["b", "a"]


def test_reg_04_handle_is_idempotent_and_publishes_once(rt: LlmRuntime) -> None:
    events: list[int] = []
    rt.on_adapter_change(lambda: events.append(1))
    scope = Scope()
    reg = rt.register_adapter(["p"], ScriptedAdapter(), scope=scope)
    reg()
    reg()
    scope.close()
    assert len(events) == 2 and reg.disposed


def test_reg_04_release_never_removes_a_route_taken_by_someone_else(rt: LlmRuntime) -> None:
    first = rt.register_adapter(["p", "q"], ScriptedAdapter())
    first.replace(["q"])
    second = rt.register_adapter(["p"], ScriptedAdapter())
    first()
    assert [p.id for p in rt.list_providers()] == ["p"]
    assert rt.list_providers() and second.providers == ("p",)


def test_reg_05_refused_replace_keeps_the_held_routes(rt: LlmRuntime) -> None:
    rt.register_adapter(["taken"], ScriptedAdapter())
    reg = rt.register_adapter(["mine"], ScriptedAdapter())
    with pytest.raises(LlmError) as caught:
        reg.replace(["mine", "taken"])
    assert caught.value.code == "DUPLICATE_ADAPTER"
    assert [p.id for p in rt.list_providers()] == ["taken", "mine"]


def test_reg_01_registration_is_a_context_manager(rt: LlmRuntime) -> None:
    with rt.register_adapter(["p"], ScriptedAdapter()):
        assert [p.id for p in rt.list_providers()] == ["p"]
    assert rt.list_providers() == []


def test_scope_closed_refuses_registrations_and_closes_in_reverse(rt: LlmRuntime) -> None:
    order: list[str] = []
    scope = Scope("plugin")
    scope.add(lambda: order.append("first"))
    rt.register_adapter(["p"], ScriptedAdapter(), scope=scope)
    scope.add(lambda: order.append("last"))
    scope.close()
    scope.close()
    assert order == ["last", "first"] and rt.list_providers() == []
    with pytest.raises(Exception, match="closed") as caught:
        rt.register_adapter(["q"], ScriptedAdapter(), scope=scope)
    assert getattr(caught.value, "code", None) == "SCOPE_CLOSED"
    assert rt.list_providers() == []


def test_reg_02_string_instead_of_route_list_is_refused(rt: LlmRuntime) -> None:
    with pytest.raises(LlmError, match="string") as caught:
        rt.register_adapter("deepseek", ScriptedAdapter())
    assert caught.value.code == "INVALID_ADAPTER"
