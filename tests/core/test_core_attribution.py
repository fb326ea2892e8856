"""Attribution R-ATTR-1..4 (spec/core.md §11.4 ATTR-01..06), with modelwire's own identity."""

from __future__ import annotations

from importlib.metadata import version

import msgspec
import pytest

from modelwire.wire.attribution import APP_IDENTITY, AppIdentity, attribution_headers, user_agent

FORK = AppIdentity(product="fork-agent", version="9.9.9", url="https://example.com/fork-agent")


def test_attr_01_version_comes_from_package_metadata() -> None:
    assert APP_IDENTITY.version == version("modelwire")


def test_attr_02_app_identity_is_exactly_the_product_facts() -> None:
    assert msgspec.structs.asdict(APP_IDENTITY) == {
        "product": "modelwire",
        "version": version("modelwire"),
        "url": "https://github.com/modelwire/modelwire",
    }
    with pytest.raises(AttributeError):
        APP_IDENTITY.product = "other"  # type: ignore[misc]


def test_attr_03_default_user_agent() -> None:
    assert (
        user_agent()
        == f"modelwire/{version('modelwire')} (+https://github.com/modelwire/modelwire)"
    )


def test_attr_04_fork_user_agent() -> None:
    assert user_agent(FORK) == "fork-agent/9.9.9 (+https://example.com/fork-agent)"


def test_attr_05_default_headers_are_exactly_the_user_agent() -> None:
    assert attribution_headers() == {"User-Agent": user_agent()}


def test_attr_06_fork_headers_replace_but_never_suppress() -> None:
    assert attribution_headers(FORK) == {
        "User-Agent": "fork-agent/9.9.9 (+https://example.com/fork-agent)"
    }
    headers = attribution_headers()
    headers["X-Extra"] = "1"  # each call returns a fresh dict
    assert attribution_headers() == {"User-Agent": user_agent()}
