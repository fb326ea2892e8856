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
    # pi-ai 0.82.1 has 37 providers and 1,109 models; only the three OAuth-only providers
    # (48 models) are withheld since the native protocols landed (issue #16)
    assert len(catalog.providers) == 34
    assert sum(len(p.models) for p in catalog.providers.values()) == 1061
    assert set(catalog.withheld) == {"google-vertex", "openai-codex", "github-copilot"}
    assert all(reason.startswith("OAuth-only") for reason in catalog.withheld.values())
    for native in ("google", "mistral", "azure-openai-responses", "amazon-bedrock"):
        assert native in catalog.providers
    assert {"cloudflare-workers-ai", "cloudflare-ai-gateway"} <= set(catalog.providers)


def test_catalog_keeps_prices_per_bucket() -> None:
    providers = load_catalog().providers
    priced = [m for p in providers.values() for m in p.models if m.cost is not None]
    assert len(priced) == sum(len(p.models) for p in providers.values())
    flash = providers["deepseek"].by_id["deepseek-v4-flash"].cost
    assert flash is not None and flash.input > 0 and flash.output > flash.input
    sonnet = next(m for m in providers["anthropic"].models if "sonnet" in m.id).cost
    assert sonnet is not None and 0 < sonnet.cache_read < sonnet.input < sonnet.cache_write


def test_catalog_default_model_is_the_recommended_one() -> None:
    providers = load_catalog().providers
    assert providers["openai"].default_model == "gpt-5.5"  # not the first entry, gpt-4
    assert providers["anthropic"].default_model == "claude-opus-4-8"
    assert providers["google"].default_model == "gemini-3.1-pro-preview"
    for pid, provider in providers.items():
        assert provider.recommended is not None, pid
        assert provider.recommended in provider.by_id, pid


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
