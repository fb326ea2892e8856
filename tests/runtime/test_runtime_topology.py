"""`llm/adapter-change`, the configurable-provider directory and model discovery: spec §11.11."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import pytest
from runtime_helpers import ScriptedAdapter

from modelwire.errors import HarnessError, LlmError
from modelwire.runtime import LlmRuntime, Scope
from modelwire.vocab import ConfigurableProvider, DiscoveredModel, ModelDiscoveryRequest

LISTENER_FAILED = "llm: an llm/adapter-change listener failed"


def _entry(**over: Any) -> ConfigurableProvider:
    fields: dict[str, Any] = {
        "provider": "openai",
        "display_name": "OpenAI",
        "settings_ns": "llm-pi-ai",
        "settings_path": ("providers", "openai"),
        **over,
    }
    return ConfigurableProvider(**fields)


def _failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == LISTENER_FAILED]


def test_top_01_listener_sees_committed_state(rt: LlmRuntime) -> None:
    seen: list[list[str]] = []
    rt.on_adapter_change(lambda: seen.append([p.id for p in rt.list_providers()]))
    reg = rt.register_adapter(["a", "b"], ScriptedAdapter())
    reg()
    assert seen == [["a", "b"], []]


def test_top_02_raising_listener_is_contained_and_logged(
    rt: LlmRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []

    def broken() -> None:
        raise RuntimeError("listener broke")

    rt.on_adapter_change(broken)
    rt.on_adapter_change(lambda: calls.append(1))
    with caplog.at_level(logging.WARNING, logger="modelwire.runtime"):
        rt.register_adapter(["p"], ScriptedAdapter())
    assert [p.id for p in rt.list_providers()] == ["p"]
    assert calls == [1]
    (record,) = _failures(caplog)
    assert record.name == "modelwire.runtime" and record.exc_info is not None
    assert str(record.exc_info[1]) == "listener broke"


async def test_top_03_failing_async_listener_is_contained_and_logged(
    rt: LlmRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    unhandled: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: unhandled.append(ctx))

    async def rejects() -> None:
        raise RuntimeError("async listener broke")

    rt.on_adapter_change(rejects)
    with caplog.at_level(logging.WARNING, logger="modelwire.runtime"):
        rt.register_adapter(["p"], ScriptedAdapter())
        await asyncio.sleep(0.01)
    gc.collect()
    assert [p.id for p in rt.list_providers()] == ["p"]
    assert len(_failures(caplog)) == 1
    assert unhandled == []


def test_top_04_replace_publishes_exactly_one_event(rt: LlmRuntime) -> None:
    reg = rt.register_adapter(["a"], ScriptedAdapter())
    seen: list[list[str]] = []
    rt.on_adapter_change(lambda: seen.append([p.id for p in rt.list_providers()]))
    reg.replace(["a"])
    assert seen == [["a"]]


def test_top_05_invariant_listener_error_is_raised_after_the_fanout(rt: LlmRuntime) -> None:
    violation = HarnessError("registry incoherent", "INVARIANT")
    later: list[int] = []

    def strict() -> None:
        raise violation

    rt.on_adapter_change(strict)
    rt.on_adapter_change(lambda: later.append(1))
    with pytest.raises(HarnessError) as caught:
        rt.register_adapter(["p"], ScriptedAdapter())
    assert caught.value is violation
    assert later == [1]


def test_top_06_directory_lists_detached_entries_in_order(rt: LlmRuntime) -> None:
    """JS mutation of listed entries → entries are frozen structs, listings fresh lists."""
    events: list[int] = []
    rt.on_adapter_change(lambda: events.append(1))
    deepseek = _entry(
        provider="deepseek-official",
        display_name="DeepSeek",
        settings_ns="llm-deepseek",
        settings_path=(),
    )
    rt.register_configurable_providers([deepseek, _entry()])
    assert len(events) == 1
    listed = rt.list_configurable_providers()
    assert listed == [deepseek, _entry()]
    with pytest.raises(AttributeError):
        listed[1].display_name = "Changed"  # type: ignore[misc]
    listed.clear()
    assert rt.list_configurable_providers() == [deepseek, _entry()]


def test_top_07_caller_mutation_after_registration_does_not_leak(rt: LlmRuntime) -> None:
    path = ["providers", "openai"]
    rt.register_configurable_providers([_entry(settings_path=path)])
    path.append("leaked")
    assert rt.list_configurable_providers()[0].settings_path == ("providers", "openai")


def test_top_08_disposing_the_directory_handle_withdraws_entries(rt: LlmRuntime) -> None:
    handle = rt.register_configurable_providers([_entry()])
    events: list[int] = []
    rt.on_adapter_change(lambda: events.append(1))
    handle()
    assert rt.list_configurable_providers() == [] and events == [1]


async def test_top_09_scope_disposal_withdraws_entries(rt: LlmRuntime) -> None:
    """Cordis child-plugin fiber → a child `Scope` owning the declaration."""
    async with Scope("parent") as parent:
        rt.register_configurable_providers([_entry()], scope=parent.child("plugin"))
        assert len(rt.list_configurable_providers()) == 1
    assert rt.list_configurable_providers() == []


def test_top_10_empty_initial_declaration_is_refused(rt: LlmRuntime) -> None:
    with pytest.raises(LlmError, match="at least one provider") as caught:
        rt.register_configurable_providers([])
    assert caught.value.code == "INVALID_DIRECTORY"


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        pytest.param(
            _entry(provider="x", display_name="X", settings_ns=""),
            "non-empty provider",
            id="settings_ns",
        ),
        pytest.param(_entry(provider=""), "non-empty provider", id="provider"),
        pytest.param(
            _entry(provider="x", display_name=""), "non-empty provider", id="display_name"
        ),
        pytest.param(
            _entry(provider="x", settings_path=("providers", "")),
            "empty settings_path segment",
            id="settings_path",
        ),
    ],
)
def test_top_11_invalid_entry_refuses_the_whole_set(
    rt: LlmRuntime, bad: ConfigurableProvider, match: str
) -> None:
    with pytest.raises(LlmError, match=match) as caught:
        rt.register_configurable_providers([_entry(), bad])
    assert caught.value.code == "INVALID_DIRECTORY"
    assert rt.list_configurable_providers() == []


def test_top_12_directory_replace(rt: LlmRuntime) -> None:
    handle = rt.register_configurable_providers([_entry(), _entry(provider="second")])
    rt.register_configurable_providers([_entry(provider="owned-elsewhere")])
    with pytest.raises(LlmError, match="already declared"):
        handle.replace([_entry(provider="owned-elsewhere")])
    assert [e.provider for e in rt.list_configurable_providers()] == [
        "openai",
        "second",
        "owned-elsewhere",
    ]
    handle.replace([_entry(display_name="Renamed")])
    listed = {e.provider: e.display_name for e in rt.list_configurable_providers()}
    assert listed == {"owned-elsewhere": "OpenAI", "openai": "Renamed"}
    handle.replace([])
    assert [e.provider for e in rt.list_configurable_providers()] == ["owned-elsewhere"]
    handle()
    with pytest.raises(LlmError, match="was disposed") as caught:
        handle.replace([_entry()])
    assert caught.value.code == "REGISTRATION_DISPOSED"


def test_top_13_duplicate_declarations_are_refused(rt: LlmRuntime) -> None:
    with pytest.raises(LlmError, match="already declared") as caught:
        rt.register_configurable_providers([_entry(), _entry()])
    assert caught.value.code == "DUPLICATE_DIRECTORY"
    rt.register_configurable_providers([_entry()])
    with pytest.raises(LlmError, match="already declared"):
        rt.register_configurable_providers(
            [_entry(display_name="Other"), _entry(provider="unseen")]
        )
    assert [e.provider for e in rt.list_configurable_providers()] == ["openai"]


async def test_top_14_discovery_round_trip_and_disposal(rt: LlmRuntime) -> None:
    received: list[ModelDiscoveryRequest] = []

    async def discover(request: ModelDiscoveryRequest) -> list[DiscoveredModel]:
        received.append(request)
        return [DiscoveredModel(id="from-endpoint")]

    events: list[int] = []
    rt.on_adapter_change(lambda: events.append(1))
    remove = rt.register_model_discovery("llm-example", discover)
    request = ModelDiscoveryRequest(base_url="https://gateway.example/v1")
    assert await rt.discover_models("llm-example", request) == [DiscoveredModel(id="from-endpoint")]
    assert received == [request] and received[0] is request
    remove()
    with pytest.raises(LlmError, match="no model discovery is registered"):
        await rt.discover_models("llm-example", request)
    assert events == []


async def test_top_15_discovery_namespace_rules(rt: LlmRuntime) -> None:
    async def empty(request: ModelDiscoveryRequest) -> list[DiscoveredModel]:
        return []

    with pytest.raises(LlmError, match="non-empty settings namespace"):
        rt.register_model_discovery("", empty)
    rt.register_model_discovery("llm-example", empty)
    with pytest.raises(LlmError, match="already registered") as caught:
        rt.register_model_discovery("llm-example", empty)
    assert caught.value.code == "DUPLICATE_DISCOVERY"
    assert await rt.discover_models("llm-example", ModelDiscoveryRequest(provider="x")) == []


async def test_top_16_discovered_models_are_normalized(rt: LlmRuntime) -> None:
    async def discover(request: ModelDiscoveryRequest) -> list[DiscoveredModel]:
        return [
            DiscoveredModel(id="keep", name="Keep", context_window=1024, max_tokens=256),
            DiscoveredModel(id=""),
            DiscoveredModel(id="keep"),
            DiscoveredModel(id="bare"),
        ]

    rt.register_model_discovery("ns", discover)
    assert await rt.discover_models("ns", ModelDiscoveryRequest(base_url="https://x")) == [
        DiscoveredModel(id="keep", name="Keep", context_window=1024, max_tokens=256),
        DiscoveredModel(id="bare"),
    ]


async def test_top_17_discovery_request_checks(rt: LlmRuntime) -> None:
    async def empty(request: ModelDiscoveryRequest) -> list[DiscoveredModel]:
        return []

    with pytest.raises(LlmError) as unserved:
        await rt.discover_models("unserved", ModelDiscoveryRequest(provider="x"))
    assert unserved.value.code == "NO_DISCOVERY"
    rt.register_model_discovery("ns", empty)
    for request in (
        ModelDiscoveryRequest(base_url=""),
        ModelDiscoveryRequest(provider="", base_url=""),
        ModelDiscoveryRequest(),
    ):
        with pytest.raises(LlmError) as invalid:
            await rt.discover_models("ns", request)
        assert invalid.value.code == "INVALID_DISCOVERY"
    assert await rt.discover_models("ns", ModelDiscoveryRequest(provider="known-route")) == []
