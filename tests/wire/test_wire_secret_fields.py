"""No field of a failure carries a credential: message, request id, code (wire/status.py)."""

from __future__ import annotations

import json
import secrets

import pytest

from modelwire.errors import ErrorCode
from modelwire.vocab import LlmFailure
from modelwire.wire.status import (
    failure_for_status,
    redact_failure,
    redact_secrets,
    request_id_from,
)

KEY = f"canaryKEY{secrets.token_hex(12)}"  # not key-shaped: only explicit redaction hides it


def _body(message: str) -> str:
    return json.dumps({"error": {"message": message, "type": "rate_limit_error"}})


@pytest.mark.parametrize("status", [401, 429, 500, 503])
@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"x-request-id": KEY}, id="x-request-id"),
        pytest.param({"request-id": KEY}, id="request-id"),
        pytest.param({"x-deepseek-request-id": KEY}, id="x-deepseek-request-id"),
        pytest.param({"X-Request-Id": f"req-{KEY.upper()}"}, id="upper-cased-inside-an-id"),
        pytest.param({"x-request-id": "sk-live-0123456789abcdef"}, id="key-shaped"),
    ],
)
def test_echoed_key_never_becomes_the_request_id(status: int, headers: dict[str, str]) -> None:
    err = failure_for_status(
        status,
        _body(f"bad key {KEY}"),
        {**headers, "retry-after": KEY},
        provider="Acme",
        fallback_request_id_headers=("request-id", "x-deepseek-request-id"),
        secrets=(KEY,),
    )
    failure = err.failure
    assert failure.request_id is None
    assert failure.provider_retry_after_ms is None
    for text in (failure.message, err.message, str(err), repr(err), repr(failure)):
        assert KEY.lower() not in text.lower()
    assert failure.status == status


def test_a_tainted_request_id_header_falls_back_to_the_next_clean_one() -> None:
    headers = {"x-request-id": KEY, "request-id": "req_0123"}
    assert request_id_from(headers, ("request-id",), secrets=(KEY,)) == "req_0123"
    assert request_id_from(headers, ("request-id",)) == KEY  # no secrets known: the id as sent
    err = failure_for_status(
        503,
        "",
        headers,
        provider="Acme",
        fallback_request_id_headers=("request-id",),
        secrets=(KEY,),
    )
    assert err.failure.request_id == "req_0123"


def test_a_key_cut_by_the_length_limit_is_still_redacted_whole() -> None:
    text = "x" * (500 - len(KEY) // 2) + KEY + " trailing"
    err = failure_for_status(429, _body(text), {}, provider="Acme", secrets=(KEY,))
    assert KEY[: len(KEY) // 2] not in err.message
    assert "[redacted]" in err.message


def test_redact_failure_scrubs_every_field_and_keeps_clean_facts() -> None:
    tainted = LlmFailure(
        f"stopped: {KEY}",
        f"REJECTED {KEY.upper()}",
        status=503,
        provider_retry_after_ms=250.0,
        request_id=KEY,
    )
    clean = redact_failure(tainted, (KEY,))
    assert clean.message == "stopped: [redacted]"
    assert clean.code == ErrorCode.UNKNOWN
    assert clean.request_id is None
    assert (clean.status, clean.provider_retry_after_ms) == (503, 250.0)
    untouched = LlmFailure("fine", "SERVER", request_id="req_1")
    assert redact_failure(untouched, (KEY,)) is untouched


def test_redact_secrets_ignores_letter_case_and_prefers_the_longest_secret() -> None:
    assert redact_secrets(f"a {KEY.upper()} b", (KEY,)) == "a [redacted] b"
    assert redact_secrets(f"Bearer {KEY}", (KEY, f"Bearer {KEY}")) == "[redacted]"
