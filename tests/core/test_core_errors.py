"""Errors: R-ERR-1/2, R-LLMERR-1..3, classifiers R-CLS-1/2, error_chain R-CHAIN-1/2 (§11.12 SVC-01..08, 74..77)."""

from __future__ import annotations

import math

import pytest

from modelwire import (
    ErrorCode,
    HarnessError,
    LlmError,
    LlmFailure,
    error_chain,
    is_context_window_exceeded_error,
    is_harness_error,
    is_quota_exceeded_error,
)

# ---- HarnessError / LlmError -----------------------------------------------------------------


def test_err_01_harness_error_fields_and_name() -> None:
    root = ValueError("root")
    err = HarnessError("wrapper", "UNKNOWN", cause=root)
    assert isinstance(err, Exception)
    assert err.name == "HarnessError"
    assert (err.message, err.code, err.cause) == ("wrapper", "UNKNOWN", root)
    assert err.__cause__ is root
    assert str(err) == "wrapper"
    assert HarnessError("w", "UNKNOWN", cause="text").cause == "text"


def test_err_02_is_harness_error_only_for_real_instances() -> None:
    class Duck:
        code = "UNKNOWN"
        message = "quack"

    assert is_harness_error(HarnessError("x", "UNKNOWN"))
    assert is_harness_error(LlmError("x", "AUTH"))
    assert not is_harness_error(Exception("plain"))
    assert not is_harness_error("string")
    assert not is_harness_error(Duck())


def test_llmerr_02_llm_error_is_a_harness_error() -> None:
    root = ConnectionError("reset")
    err = LlmError("boom", "AUTH", cause=root)
    assert err.name == "LlmError"
    assert isinstance(err, HarnessError)
    assert is_harness_error(err)
    assert (err.code, err.cause, err.status) == ("AUTH", root, None)
    custom = LlmError("something went wrong", "CUSTOM_CODE")
    assert (custom.message, custom.code) == ("something went wrong", "CUSTOM_CODE")


def test_llmerr_03_failure_has_only_present_keys() -> None:
    assert LlmError("old route failed", "AUTH").failure == LlmFailure("old route failed", "AUTH")
    full = LlmError(
        "provider busy", "RATE_LIMIT", status=429, provider_retry_after_ms=1500, request_id="req-7"
    )
    assert full.failure == LlmFailure(
        "provider busy", "RATE_LIMIT", status=429, provider_retry_after_ms=1500, request_id="req-7"
    )
    assert full.failure.code == full.code
    assert "failure" in vars(full)  # an instance attribute (the normalization trust rule)
    with pytest.raises(AttributeError):
        full.failure.code = "OTHER"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param({"status": 42}, "status", id="status-42"),
        pytest.param({"status": 600}, "status", id="status-600"),
        pytest.param({"status": True}, "status", id="status-bool"),
        pytest.param({"status": 429.0}, "status", id="status-float"),
        pytest.param(
            {"provider_retry_after_ms": math.nan}, "provider_retry_after_ms", id="delay-nan"
        ),
        pytest.param({"provider_retry_after_ms": 0}, "provider_retry_after_ms", id="delay-zero"),
        pytest.param(
            {"provider_retry_after_ms": math.inf}, "provider_retry_after_ms", id="delay-inf"
        ),
        pytest.param({"request_id": ""}, "request_id", id="request-id-empty"),
        pytest.param({"request_id": 7}, "request_id", id="request-id-number"),
    ],
)
def test_llmerr_01_optional_facts_are_validated(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        LlmError("m", "CODE", **kwargs)  # type: ignore[arg-type]
    assert not isinstance(info.value, LlmError)


@pytest.mark.parametrize(
    ("message", "code", "match"),
    [
        pytest.param(7, "CODE", "message", id="message-number"),
        pytest.param("", "CODE", "message", id="message-empty"),
        pytest.param("m", 7, "code", id="code-number"),
        pytest.param("m", "", "code", id="code-empty"),
    ],
)
def test_llmerr_01_message_and_code_are_validated_first(
    message: object, code: object, match: str
) -> None:
    with pytest.raises(ValueError, match=f"LlmError {match} must be a non-empty string"):
        LlmError(message, code, status=42)  # type: ignore[arg-type]


def test_llmerr_04_no_policy_on_the_error() -> None:
    err = LlmError("x", ErrorCode.RATE_LIMIT)
    assert not hasattr(err, "retryable")
    assert not hasattr(err.failure, "retryable")
    assert err.code == "RATE_LIMIT"
    assert type(err.failure.code) is str


# ---- classifiers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "context_length_exceeded maximum context length",
        "context-window-overflowed",
        "This model maximum context length is 128000 tokens",
        "input is too long for this model",
        "request too large for model context",
        "input exceeds the model context window limit",
    ],
)
def test_cls_01_context_window_positive(text: str) -> None:
    assert is_context_window_exceeded_error(text)
    assert is_context_window_exceeded_error(text.upper())


@pytest.mark.parametrize(
    "text",
    [
        "invalid request: malformed tool arguments",
        "invalid input: temperature exceeds maximum allowed value",
        "input exceeds maximum allowed value",
        "context window size must be positive",
    ],
)
def test_cls_01_context_window_negative(text: str) -> None:
    assert not is_context_window_exceeded_error(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("insufficient_quota", True),
        ("account balance depleted", True),
        ("usage-limit-exceeded", True),
        ("out of credits", True),
        (
            "OpenAI API error (429): You exceeded your current quota, please check your plan and "
            "billing details.",
            True,
        ),
        ("HTTP 429: rate limit reached", False),
        ("quota resets in one minute", False),
    ],
)
def test_cls_02_quota(text: str, expected: bool) -> None:
    assert is_quota_exceeded_error(text) is expected


# ---- error_chain -----------------------------------------------------------------------------


def caused(outer: Exception, cause: BaseException | None) -> Exception:
    outer.__cause__ = cause
    return outer


class HostileStr:
    def __str__(self) -> str:
        raise RuntimeError("no")


class HostileError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


def test_chain_01_causes_join_with_colons() -> None:
    err = caused(TypeError("fetch failed"), ConnectionError("connect ECONNREFUSED 127.0.0.1:443"))
    assert error_chain(err) == "fetch failed: connect ECONNREFUSED 127.0.0.1:443"


def test_chain_01_group_members_in_brackets() -> None:
    group = ExceptionGroup(
        "",
        [
            ConnectionError("connect ECONNREFUSED ::1:443"),
            ConnectionError("connect ECONNREFUSED 127.0.0.1:443"),
        ],
    )
    err = caused(TypeError("fetch failed"), group)
    assert error_chain(err) == (
        "fetch failed: ExceptionGroup [connect ECONNREFUSED ::1:443; "
        "connect ECONNREFUSED 127.0.0.1:443]"
    )


def test_chain_02_non_exceptions_and_hostile_nodes() -> None:
    assert error_chain("plain string") == "plain string"
    assert error_chain({"message": "structured provider failure", "code": "SERVER"}) == (
        "structured provider failure"
    )
    assert error_chain(HostileStr()) == "<unrenderable value>"
    outer = Exception("outer")
    outer.__cause__ = outer
    assert error_chain(outer) == "outer: <circular cause>"
    assert error_chain(caused(Exception("outer"), HostileError())) == "outer: <unrenderable value>"


def test_chain_02_diamond_cause_renders_on_both_branches() -> None:
    shared = Exception("shared")
    group = ExceptionGroup("agg", [caused(Exception("a"), shared), caused(Exception("b"), shared)])
    assert error_chain(group) == "agg [a: shared; b: shared]"


def test_chain_02_empty_message_falls_back_to_type_name() -> None:
    assert error_chain(caused(TypeError(""), None)) == "TypeError"


def test_chain_02_explicit_cause_attribute_wins_and_none_stops() -> None:
    err = HarnessError("wrapper", "UNKNOWN", cause=None)
    err.__cause__ = ValueError("hidden")
    assert error_chain(err) == "wrapper"
    assert error_chain(HarnessError("wrapper", "UNKNOWN", cause="inner text")) == (
        "wrapper: inner text"
    )


def test_chain_02_wrapper_does_not_repeat_itself() -> None:
    assert error_chain(HarnessError("boom", "UNKNOWN", cause="boom")) == "boom"
    original = ValueError("same text")
    assert error_chain(HarnessError("same text", "UNKNOWN", cause=original)) == "same text"
