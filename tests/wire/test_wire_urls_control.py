"""Base URLs with control characters are refused at configuration, naming the field.

`urllib.parse.urlsplit` silently drops CR, LF and TAB and strips leading controls, so a URL that
passed the check could send the request to a different path than the one configured.
"""

from __future__ import annotations

import pytest

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.errors import HarnessError
from modelwire.wire.urls import http_url_problem

BAD = [
    pytest.param("https://api.deepseek.com\r\n/v1", id="crlf"),
    pytest.param("https://api.deepseek.com/v1\n", id="trailing-lf"),
    pytest.param("https://api.deepseek.com/v\t1", id="tab"),
    pytest.param("https://api.deepseek.com/\x00v1", id="nul"),
    pytest.param("\x01https://api.deepseek.com", id="leading-control"),
    pytest.param("https://api.deepseek.com/v1\x7f", id="del"),
]


@pytest.mark.parametrize("url", BAD)
def test_base_url_with_control_characters_is_refused(url: str) -> None:
    problem = http_url_problem(url)
    assert problem is not None and problem.startswith("must not contain control characters")


@pytest.mark.parametrize("url", [" https://h", "https://h/v1 "])
def test_base_url_with_surrounding_spaces_is_refused(url: str) -> None:
    assert http_url_problem(url) == "must not start or end with whitespace"


@pytest.mark.parametrize("url", BAD)
def test_deepseek_base_url_with_control_characters_is_invalid_config(url: str) -> None:
    with pytest.raises(HarnessError) as info:
        DeepSeekAdapter(api_key="sk-test-key-123456", base_url=url, env={})
    assert info.value.code == "INVALID_CONFIG"
    assert "base_url must not contain control characters" in info.value.message


def test_deepseek_base_url_from_the_environment_is_checked_the_same_way() -> None:
    with pytest.raises(HarnessError) as info:
        DeepSeekAdapter(api_key="sk-test-key-123456", env={"DEEPSEEK_BASE_URL": "https://h/v1\n"})
    assert info.value.code == "INVALID_CONFIG" and "base_url" in info.value.message


@pytest.mark.parametrize("url", BAD)
def test_providers_base_url_with_control_characters_is_invalid_config(url: str) -> None:
    profile = {
        "api": "openai-completions",
        "base_url": url,
        "api_key_env": "ACME_KEY",
        "models": [{"id": "m"}],
    }
    with pytest.raises(HarnessError) as info:
        ProvidersAdapter.from_config({"providers": {"acme": profile}}, env={"ACME_KEY": "k"})
    assert info.value.code == "INVALID_CONFIG"
    assert "providers.acme.base_url" in info.value.message
    assert "must not contain control characters" in info.value.message
