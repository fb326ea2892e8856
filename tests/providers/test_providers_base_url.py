"""A hand-declared route's base_url is checked at load, naming route and field (issue 6, bad input)."""

from __future__ import annotations

import pytest

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.errors import HarnessError


@pytest.mark.parametrize(
    ("base_url", "problem"),
    [
        ("localhost:11434/v1", "must start with http:// or https://"),
        ("http://", "has no host"),
        ("https://user:pw@h/v1", "must not carry credentials"),
    ],
)
def test_providers_bad_base_url_fails_at_load_naming_route_and_field(
    base_url: str, problem: str
) -> None:
    config = {
        "providers": {
            "local": {"api": "openai-completions", "base_url": base_url, "models": [{"id": "m"}]}
        }
    }
    with pytest.raises(HarnessError) as info:
        ProvidersAdapter.from_config(config, env={})
    assert info.value.code == "INVALID_CONFIG"
    assert problem in info.value.message and "providers.local.base_url" in info.value.message
    assert "pw@" not in info.value.message
