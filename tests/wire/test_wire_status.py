"""HTTP failure mapping (spec B.2): codes, Retry-After, request ids, redaction, error fixtures."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path

import pytest
from error_categories import CATEGORY_CODES

from modelwire.errors import DEFAULT_RETRYABLE_CODES
from modelwire.wire.status import (
    failure_for_status,
    http_error_code,
    parse_retry_after,
    redact_secrets,
    request_id_from,
)

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures"
NOW = 1_700_000_000.0


def _date(offset_s: float) -> str:
    return format_datetime(datetime.fromtimestamp(NOW + offset_s, tz=UTC), usegmt=True)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("2", 2000.0, id="seconds"),
        pytest.param("0", None, id="zero"),
        pytest.param("9" * 400, None, id="400-digit-overflow"),
        pytest.param("not-a-date", None, id="invalid-text"),
        pytest.param("Thu, 01 Jan 1970 00:00:00 GMT", None, id="epoch-0-date"),
        pytest.param(None, None, id="absent"),
        pytest.param("", None, id="empty"),
        pytest.param("-1", None, id="negative"),
        pytest.param("1.5", None, id="fraction-is-not-digits"),
    ],
)
def test_b15_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected


def test_b15_retry_after_future_http_date_against_injected_clock() -> None:
    assert parse_retry_after(_date(3), now=NOW) == pytest.approx(3000.0)
    assert parse_retry_after(_date(-3), now=NOW) is None


def test_b16_request_id_prefers_x_request_id_then_fallback() -> None:
    assert (
        request_id_from(
            {"x-request-id": "a", "x-deepseek-request-id": "b"}, ["x-deepseek-request-id"]
        )
        == "a"
    )
    assert request_id_from({"X-DeepSeek-Request-Id": "b"}, ["x-deepseek-request-id"]) == "b"
    assert (
        request_id_from(
            {"x-request-id": "", "x-deepseek-request-id": "b"}, ["x-deepseek-request-id"]
        )
        == "b"
    )
    assert request_id_from({}, ["x-deepseek-request-id"]) is None


@pytest.mark.parametrize(
    ("status", "detail", "code"),
    [
        pytest.param(401, "", "AUTH", id="401"),
        pytest.param(403, "insufficient_quota", "AUTH", id="403-before-quota"),
        pytest.param(413, "context_length_exceeded", "INVALID_REQUEST", id="413-overflow-code"),
        pytest.param(429, "insufficient_quota", "QUOTA", id="429-quota"),
        pytest.param(429, "HTTP 429: rate limit reached", "RATE_LIMIT", id="429-rate"),
        pytest.param(402, "Insufficient Balance", "QUOTA", id="402-balance"),
        pytest.param(
            400, "request too large for model context", "CONTEXT_WINDOW_EXCEEDED", id="400-ctx"
        ),
        pytest.param(
            400,
            "invalid input: temperature exceeds maximum allowed value",
            "INVALID_REQUEST",
            id="400-temp",
        ),
        pytest.param(500, "", "SERVER", id="500"),
        pytest.param(503, "out of credits", "QUOTA", id="503-quota"),
        pytest.param(418, "", "HTTP_418", id="418"),
        pytest.param(404, "", "HTTP_404", id="404"),
    ],
)
def test_b12_http_error_code(status: int, detail: str, code: str) -> None:
    assert http_error_code(status, detail) == code


def test_b11_message_names_provider_status_and_provider_text() -> None:
    err = failure_for_status(
        429,
        '{"error":{"message":"slow down","type":"rate_limit"}}',
        {"retry-after": "2", "x-request-id": "req-429"},
        provider="DeepSeek",
    )
    assert err.code == "RATE_LIMIT"
    assert err.message == "DeepSeek API error (HTTP 429): slow down"
    assert err.failure.status == 429
    assert err.failure.provider_retry_after_ms == 2000
    assert err.failure.request_id == "req-429"


def test_b11_non_json_and_html_bodies_keep_status_message() -> None:
    err = failure_for_status(502, "<html><body>Bad gateway</body></html>", {}, provider="DeepSeek")
    assert (err.code, err.message) == ("SERVER", "DeepSeek API error (HTTP 502)")
    err = failure_for_status(500, '{"error":{"type":"x"}}', {}, provider="DeepSeek")
    assert (err.code, err.message) == ("SERVER", "DeepSeek API error (HTTP 500)")


def test_b11_credentials_redacted_from_provider_text() -> None:
    body = '{"error":{"message":"Incorrect API key provided: sk-live-abcdefghijkl. Bearer tok123"}}'
    err = failure_for_status(401, body, {}, provider="DeepSeek", secrets=["tok123"])
    assert "sk-live-abcdefghijkl" not in err.message and "tok123" not in err.message
    assert err.code == "AUTH"


def _error_fixtures() -> list[Path]:
    folder = FIXTURES / "errors"
    return sorted(folder.glob("*.http.json")) if folder.is_dir() else []


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=p.name.removesuffix(".http.json")) for p in _error_fixtures()]
)
def test_fixture_error_maps_to_its_category_with_status_retry_after_and_request_id(
    path: Path,
) -> None:
    """Every recorded error response, whatever its provider: the category's code, whether the
    default policy retries it, the status, Retry-After, the request id (header or body) and the
    provider's message (with anything key-shaped redacted)."""
    http = json.loads(path.read_text())
    expected = json.loads(
        path.with_name(path.name.replace(".http.json", ".expected.json")).read_text()
    )
    failure = failure_for_status(
        http["status"], http["body"], http["headers"], provider="Provider"
    ).failure
    assert failure.code == CATEGORY_CODES[expected["category"]]
    assert (failure.code in DEFAULT_RETRYABLE_CODES) == expected["retryable"]
    assert failure.status == expected["status"]
    want_after = expected["retry_after_s"]
    if want_after is None:
        assert failure.provider_retry_after_ms is None
    else:
        assert failure.provider_retry_after_ms == pytest.approx(want_after * 1000)
    if "request_id" in expected["error"]:
        assert failure.request_id == expected["error"]["request_id"]
    message = expected["error"]["message"]
    if message:
        assert redact_secrets(message, ())[:200] in failure.message


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.name.removesuffix(".http.json"))
        for p in _error_fixtures()
        if p.name.startswith("deepseek")
    ],
)
def test_fixture_deepseek_error_maps_to_category_code(path: Path) -> None:
    http = json.loads(path.read_text())
    expected = json.loads(
        path.with_name(path.name.replace(".http.json", ".expected.json")).read_text()
    )
    err = failure_for_status(http["status"], http["body"], http["headers"], provider="DeepSeek")
    category = expected["category"]
    want = CATEGORY_CODES.get(category, f"HTTP_{http['status']}")
    assert err.code == want
    assert err.failure.status == http["status"]
    assert expected["error"]["message"] in err.message


def test_fixture_errors_folder_present() -> None:
    if not (FIXTURES / "errors").is_dir():
        pytest.fail("../shared/fixtures/errors is not available")
    assert any(p.name.startswith("deepseek") for p in _error_fixtures())
