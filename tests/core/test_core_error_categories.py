"""`LlmError` category subclasses: caught by class, keeping `.code`, `.failure` and `.status`."""

from __future__ import annotations

import pytest

import modelwire as mw
from modelwire import errors
from modelwire.errors import ErrorCode, HarnessError, LlmError, LlmTimeoutError, categorized
from modelwire.vocab import LlmFailure

CATEGORIES = {
    "AuthError": {"AUTH", "MISSING_CREDENTIAL", "INVALID_CREDENTIAL"},
    "RateLimitError": {"RATE_LIMIT"},
    "QuotaError": {"QUOTA"},
    "ContextWindowError": {"CONTEXT_WINDOW_EXCEEDED"},
    "LlmTimeoutError": {"TIMEOUT"},
    "TransportError": {"TRANSPORT", "STREAM_CLOSED", "PROXY"},
    "ServerError": {"SERVER", "INSUFFICIENT_SYSTEM_RESOURCE"},
    "ContentFilterError": {"CONTENT_FILTER"},
    "ModelNotFoundError": {"MODEL_NOT_FOUND", "UNKNOWN_MODEL"},
    "InvalidRequestError": {
        "INVALID_REQUEST",
        "INVALID_OPTION",
        "UNSUPPORTED_OPTION",
        "UNSUPPORTED_CONTENT",
        "UNSUPPORTED_REASONING_EFFORT",
    },
    "ResponseError": {"MALFORMED_RESPONSE", "EMPTY_RESPONSE"},
    "OutputInvalidError": {"OUTPUT_INVALID"},
}
"""Category class name -> the codes it stands for (each class in `modelwire.errors` and `mw`)."""
CASES = [(name, code) for name, codes in CATEGORIES.items() for code in sorted(codes)]


def test_every_category_code_is_a_known_code_and_claimed_once() -> None:
    claimed = [code for codes in CATEGORIES.values() for code in codes]
    assert len(claimed) == len(set(claimed))
    assert set(claimed) <= {c.value for c in ErrorCode}
    for name, codes in CATEGORIES.items():
        kind = getattr(errors, name)
        assert issubclass(kind, LlmError) and kind.codes == codes
        assert getattr(mw, name) is kind and name in mw.__all__ and name in errors.__all__


@pytest.mark.parametrize(("name", "code"), CASES, ids=[c for _, c in CASES])
def test_from_failure_builds_the_category_and_keeps_the_facts(name: str, code: str) -> None:
    kind = getattr(errors, name)
    failure = LlmFailure("boom", code, status=429, provider_retry_after_ms=250, request_id="r1")
    root = ConnectionError("reset")
    err = LlmError.from_failure(failure, cause=root)
    assert type(err) is kind and isinstance(err, LlmError) and isinstance(err, HarnessError)
    assert (err.code, err.status, err.failure, err.cause, err.name) == (
        code,
        429,
        failure,
        root,
        kind.__name__,
    )
    with pytest.raises(kind):
        raise err


def test_a_code_without_a_category_and_direct_construction_stay_plain() -> None:
    assert type(LlmError.from_failure(LlmFailure("x", "NO_ADAPTER"))) is LlmError
    assert type(LlmError("x", "RATE_LIMIT")) is LlmError  # the constructor never dispatches
    assert type(mw.RateLimitError("x", "RATE_LIMIT")) is mw.RateLimitError
    assert type(mw.RateLimitError.from_failure(LlmFailure("x", "SERVER"))) is mw.RateLimitError


def test_categorized_gives_the_subclass_with_the_same_facts() -> None:
    plain = LlmError("slow", "TIMEOUT", status=504, request_id="r9")
    twin = categorized(plain)
    assert type(twin) is LlmTimeoutError and twin.failure == plain.failure
    assert categorized(twin) is twin
    other = LlmError("odd", "CUSTOM_CODE")
    assert categorized(other) is other


def test_the_timeout_category_is_not_a_builtin_timeout() -> None:
    assert not issubclass(LlmTimeoutError, TimeoutError)
