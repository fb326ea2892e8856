"""The installed catalog (spec §9.3): pinned source, counts and a few entries."""

from __future__ import annotations

from modelwire.adapters.providers.catalog import load_catalog
from modelwire.adapters.providers.compat import (
    MODALITIES,
    NO_SWITCHES,
    PROTOCOLS,
    SWITCH_PROTOCOLS,
    WITHHELD_SWITCHES,
    CompatSwitches,
    written,
)


def test_catalog_pins_source_and_counts() -> None:
    catalog = load_catalog()
    assert catalog.source.package == "@earendil-works/pi-ai"
    assert catalog.source.version == "0.82.1"
    assert len(catalog.providers) == 28
    assert sum(len(p.models) for p in catalog.providers.values()) == 795
    assert {"amazon-bedrock", "google-vertex", "openai-codex", "github-copilot"} <= set(
        catalog.withheld
    )


def test_catalog_pins_entries() -> None:
    providers = load_catalog().providers
    deepseek = providers["deepseek"]
    assert (deepseek.name, deepseek.base_url, deepseek.api_key_env) == (
        "DeepSeek",
        "https://api.deepseek.com",
        ("DEEPSEEK_API_KEY",),
    )
    flash = deepseek.by_id["deepseek-v4-flash"]
    assert (flash.context_window, flash.max_tokens, flash.api) == (
        1000000,
        384000,
        "openai-completions",
    )
    assert flash.thinking_level_map == {
        "minimal": None,
        "low": None,
        "medium": None,
        "high": "high",
        "max": "max",
    }
    assert flash.compat is not None and flash.compat.thinking_format == "deepseek"
    gpt41 = providers["openai"].by_id["gpt-4.1"]
    assert (gpt41.name, gpt41.api, gpt41.input) == (
        "GPT-4.1",
        "openai-responses",
        ("text", "image"),
    )
    assert providers["anthropic"].api_key_env == ("ANTHROPIC_API_KEY",)


def test_catalog_uses_only_pinned_vocabulary() -> None:
    for provider in load_catalog().providers.values():
        for model in provider.models:
            assert model.api in PROTOCOLS
            assert set(model.input) <= MODALITIES
            for key in written(model.compat or NO_SWITCHES):
                assert key in SWITCH_PROTOCOLS or key in WITHHELD_SWITCHES, key


def test_compat_struct_declares_exactly_the_pinned_switches() -> None:
    """The catalog decodes compat strictly (an unknown key fails the load), into exactly the
    configurable and withheld switches."""
    assert set(CompatSwitches.__struct_fields__) == set(SWITCH_PROTOCOLS) | WITHHELD_SWITCHES
    assert CompatSwitches.__struct_config__.forbid_unknown_fields
