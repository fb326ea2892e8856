"""Base-URL checks shared by the adapters' configuration (`modelwire.wire.urls`)."""

from __future__ import annotations

import pytest

from modelwire.wire.urls import http_url_problem


@pytest.mark.parametrize(
    "url",
    ["https://api.deepseek.com", "http://127.0.0.1:8080/v1", "http://[::1]:9/x", "https://h/"],
)
def test_http_url_accepts_absolute_http_urls_with_a_host(url: str) -> None:
    assert http_url_problem(url) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://h", "must start with http:// or https://"),
        ("localhost:8080", "must start with http:// or https://"),
        ("http://", "has no host"),
        ("http://127.0.0.1:99999", "is not a valid URL"),
        ("https://user:secret@h", "must not carry credentials"),
        ("https://h/v1?key=abc", "must not carry a query string or fragment"),
        ("http://h:0", "has port 0"),
    ],
)
def test_http_url_problems_are_named(url: str, problem: str) -> None:
    found = http_url_problem(url)
    assert found is not None and found.startswith(problem)
    assert "secret" not in found
