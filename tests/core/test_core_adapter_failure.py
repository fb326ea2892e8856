"""Failure normalization R-NORM-1..3 (spec/core.md §11.9 AF-01..05) at the adapter boundary."""

from __future__ import annotations

from typing import Any

import pytest

from modelwire import HarnessError, LlmError, LlmFailure
from modelwire.errors import normalize_llm_failure

FALLBACK = LlmFailure("LLM adapter failed", "UNKNOWN")


class Hostile:
    def __str__(self) -> str:
        raise RuntimeError("no string for you")


class AccessorError(Exception):
    """`failure` and `code` are class-level properties, not own data."""

    @property
    def failure(self) -> LlmFailure:
        return LlmFailure("provider failed", "FOREIGN")

    @property
    def code(self) -> str:
        return "FOREIGN"


class AccessorCode(Exception):
    @property
    def code(self) -> str:
        return "FOREIGN"


class RaisingDictError(Exception):
    """Valid own data, but looking up the instance dict raises."""

    def __getattribute__(self, name: str) -> Any:
        if name == "__dict__":
            raise RuntimeError("reflection refused")
        return super().__getattribute__(name)


class EverythingRaisesError(Exception):
    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")


class RaisingMessageDict(dict[str, object]):
    def get(self, key: str, default: object = None) -> object:
        if key == "message":
            raise RuntimeError("message getter failed")
        return super().get(key, default)


class RaisingStrError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("message accessor failed")


def foreign(message: str = "provider failed", **data: object) -> Exception:
    err = Exception(message)
    for key, value in data.items():
        setattr(err, key, value)
    return err


def test_af_01_hostile_non_exception() -> None:
    assert normalize_llm_failure(Hostile()) == FALLBACK


def test_af_02_non_exceptions_and_untrusted_facts() -> None:
    assert normalize_llm_failure("") == FALLBACK
    assert normalize_llm_failure(None) == LlmFailure("null", "UNKNOWN")
    assert normalize_llm_failure("plain provider failure") == LlmFailure(
        "plain provider failure", "UNKNOWN"
    )
    assert normalize_llm_failure(AccessorError("provider failed")) == LlmFailure(
        "provider failed", "UNKNOWN"
    )
    err = AccessorCode("provider failed")
    err.failure = {"message": "provider failed", "code": "FOREIGN"}  # type: ignore[attr-defined]
    assert normalize_llm_failure(err) == LlmFailure("provider failed", "UNKNOWN")
    assert normalize_llm_failure(foreign(failure=None, code="FOREIGN")) == LlmFailure(
        "provider failed", "UNKNOWN"
    )


def test_af_02_trusted_cross_package_copy() -> None:
    data = {"message": "provider failed", "code": "FOREIGN", "status": 503, "request_id": "r-1"}
    assert normalize_llm_failure(foreign(failure=data, code="FOREIGN")) == LlmFailure(
        "provider failed", "FOREIGN", status=503, request_id="r-1"
    )
    mismatched = foreign(failure=data, code="OTHER")
    assert normalize_llm_failure(mismatched) == LlmFailure("provider failed", "UNKNOWN")


def test_af_03_reflection_that_raises_falls_back() -> None:
    err = RaisingDictError("provider failed")
    object.__setattr__(err, "code", "FOREIGN")
    object.__setattr__(err, "failure", LlmFailure("provider failed", "FOREIGN"))
    assert normalize_llm_failure(err) == LlmFailure("provider failed", "UNKNOWN")
    assert normalize_llm_failure(EverythingRaisesError("provider failed")) == LlmFailure(
        "provider failed", "UNKNOWN"
    )


def test_af_04_invalid_snapshots_fall_back() -> None:
    bad_request_id = {"message": "provider failed", "code": "FOREIGN", "request_id": ""}
    assert normalize_llm_failure(foreign(failure=bad_request_id, code="FOREIGN")) == LlmFailure(
        "provider failed", "UNKNOWN"
    )
    raising = RaisingMessageDict(message="provider failed", code="FOREIGN")
    assert normalize_llm_failure(foreign(failure=raising, code="FOREIGN")) == LlmFailure(
        "provider failed", "UNKNOWN"
    )


def test_af_05_raising_message_accessor() -> None:
    assert normalize_llm_failure(RaisingStrError()) == FALLBACK


def test_af_06_llm_error_and_harness_error_keep_their_facts() -> None:
    err = LlmError(
        "provider busy", "RATE_LIMIT", status=429, provider_retry_after_ms=1500, request_id="req-7"
    )
    assert normalize_llm_failure(err) == LlmFailure(
        "provider busy", "RATE_LIMIT", status=429, provider_retry_after_ms=1500, request_id="req-7"
    )
    assert normalize_llm_failure(HarnessError("no route", "NO_ADAPTER")) == LlmFailure(
        "no route", "NO_ADAPTER"
    )
    assert normalize_llm_failure(HarnessError("", "NO_ADAPTER")) == LlmFailure(
        "LLM adapter failed", "NO_ADAPTER"
    )


def test_af_06_third_party_code_attribute_is_not_trusted() -> None:
    assert normalize_llm_failure(foreign("sdk failed", code="ECONNRESET")) == LlmFailure(
        "sdk failed", "UNKNOWN"
    )


@pytest.mark.parametrize("hostile_code", ["property", "empty"])
def test_af_06_harness_error_with_unusable_code(hostile_code: str) -> None:
    class Odd(HarnessError):
        pass

    err = Odd("odd failure", "X")
    if hostile_code == "empty":
        err.code = ""
    else:
        del err.code

        def boom(self: Odd) -> str:
            raise RuntimeError("code accessor failed")

        Odd.code = property(boom)  # type: ignore[assignment]
    assert normalize_llm_failure(err) == LlmFailure("odd failure", "UNKNOWN")
