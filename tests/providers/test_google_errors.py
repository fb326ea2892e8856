"""Gemini HTTP errors (`google-generative-ai/errors/`): each recording maps to its category's code,
status and retry delay (Google's `RetryInfo.retryDelay` when no Retry-After header came), and
Google's envelope rules hold: a 400 `API_KEY_INVALID` is AUTH, a per-minute 429 RATE_LIMIT
whatever its wording, a per-day one QUOTA, the JSON-array form is unwrapped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google_fixtures import error_cases

from modelwire.adapters.providers.protocols import protocol
from modelwire.adapters.providers.protocols.google_errors import google_status_code
from modelwire.errors import DEFAULT_RETRYABLE_CODES, LlmError
from modelwire.wire import status


def failure_for_status(
    code: int, body: str, headers: dict[str, str], *, provider: str, secrets: Any = ()
) -> LlmError:
    """The generic mapping, then the Google protocol's `http_error` hook (as `stream_post` runs
    them): Google's envelope is read by its protocol, not by the shared wire layer."""
    error = status.failure_for_status(code, body, headers, provider=provider, secrets=secrets)
    refine = protocol("google-generative-ai").http_error
    assert refine is not None
    return refine(error, body, headers, tuple(secrets))


CATEGORY_CODES = {
    "rate_limit": "RATE_LIMIT",
    "quota": "QUOTA",
    "context_length": "CONTEXT_WINDOW_EXCEEDED",
    "auth": "AUTH",
    "not_found": "MODEL_NOT_FOUND",
    "invalid_request": "INVALID_REQUEST",
    "server": "SERVER",
    "overloaded": "SERVER",
}
ERRORS = error_cases()


def _load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    expected = path.with_name(path.name.replace(".http.json", ".expected.json"))
    return json.loads(path.read_text()), json.loads(expected.read_text())


def test_the_folder_holds_the_seven_recorded_errors() -> None:
    assert len(ERRORS) == 7


@pytest.mark.parametrize("path", ERRORS)
def test_recorded_error_maps_to_its_category_status_retry_delay_and_message(path: Path) -> None:
    http, expected = _load(path)
    failure = failure_for_status(
        http["status"], http["body"], http["headers"], provider="Google Gemini"
    ).failure
    assert failure.code == CATEGORY_CODES[expected["category"]]
    assert (failure.code in DEFAULT_RETRYABLE_CODES) == expected["retryable"]
    assert failure.status == expected["status"]
    if expected["retry_after_s"] is None:
        assert failure.provider_retry_after_ms is None
    else:
        assert failure.provider_retry_after_ms == pytest.approx(expected["retry_after_s"] * 1000)
    assert failure.message.startswith(f"Google Gemini API error (HTTP {http['status']}): ")
    assert expected["error"]["message"] in failure.message


def _google(code: int, status: str, message: str, *details: dict[str, Any]) -> str:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return json.dumps({"error": error})


RETRY = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}


def _quota(quota_id: str) -> dict[str, Any]:
    return {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{"quotaMetric": "m", "quotaId": quota_id}],
    }


def test_retry_info_delay_is_the_retry_hint_and_a_header_wins() -> None:
    body = _google(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted", RETRY)
    failure = failure_for_status(429, body, {}, provider="G").failure
    assert (failure.code, failure.provider_retry_after_ms) == ("RATE_LIMIT", 37000.0)
    headed = failure_for_status(429, body, {"Retry-After": "3"}, provider="G").failure
    assert headed.provider_retry_after_ms == 3000.0


def test_a_per_day_quota_is_quota_and_a_per_minute_one_a_rate_limit() -> None:
    text = "You exceeded your current quota, please check your plan and billing details."
    day = _google(
        429, "RESOURCE_EXHAUSTED", text, _quota("GenerateRequestsPerDayPerProject"), RETRY
    )
    minute = _google(429, "RESOURCE_EXHAUSTED", text, _quota("GenerateRequestsPerMinute"))
    assert failure_for_status(429, day, {}, provider="G").code == "QUOTA"
    assert failure_for_status(429, minute, {}, provider="G").code == "RATE_LIMIT"


def test_credential_reasons_are_auth_whatever_the_status() -> None:
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_EXPIRED"}
    body = _google(400, "INVALID_ARGUMENT", "API key expired. Please renew the API key.", info)
    assert failure_for_status(400, body, {}, provider="G").code == "AUTH"


def test_an_input_token_overflow_400_is_context_window_exceeded() -> None:
    body = _google(
        400,
        "INVALID_ARGUMENT",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    )
    assert failure_for_status(400, body, {}, provider="G").code == "CONTEXT_WINDOW_EXCEEDED"


def test_an_unusable_retry_delay_gives_no_hint() -> None:
    for delay in ("0s", "soon", "-3s", 12):
        detail = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
        body = _google(429, "RESOURCE_EXHAUSTED", "slow down", detail)
        assert (
            failure_for_status(429, body, {}, provider="G").failure.provider_retry_after_ms is None
        )


def test_the_key_never_appears_in_a_google_error_message() -> None:
    key = "AIzaSyD-fake-key-0123456789"
    body = _google(400, "INVALID_ARGUMENT", f"API key not valid: {key}")
    err = failure_for_status(400, body, {}, provider="G", secrets=[key])
    assert key not in err.message and key not in repr(err.failure)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        ("RESOURCE_EXHAUSTED", "RATE_LIMIT"),
        ("UNAVAILABLE", "SERVER"),
        ("DEADLINE_EXCEEDED", "TIMEOUT"),
        ("PERMISSION_DENIED", "AUTH"),
        ("INVALID_ARGUMENT", "INVALID_REQUEST"),
        ("NOT_FOUND", "MODEL_NOT_FOUND"),
        ("SOMETHING_NEW", None),
        (None, None),
    ],
)
def test_canonical_status_names_map_to_codes(status: str | None, code: str | None) -> None:
    assert google_status_code(status) == code
