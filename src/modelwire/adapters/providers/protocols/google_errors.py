"""Google's error envelope (Gemini API, Vertex AI): the facts its ``details`` carry and the codes
they imply beyond the HTTP status.

Google answers ``{"error": {"code", "message", "status", "details": [...]}}`` (or that object
inside a JSON array, the form ``streamGenerateContent`` without ``alt=sse`` uses). The details
are typed by ``@type``: ``google.rpc.ErrorInfo`` names a ``reason`` (``API_KEY_INVALID`` comes
with HTTP 400, yet it is a credential failure), ``google.rpc.RetryInfo`` a ``retryDelay``
(a protobuf Duration such as ``"34.4s"``; the only retry hint Gemini gives, there is no
``Retry-After`` header) and ``google.rpc.QuotaFailure`` the quota ids that ran out (a
``...PerDay...`` quota does not come back within a retry; a per-minute one does).

`refine_google_http_error` is the Google protocols' `WireProtocol.http_error` hook (Gemini and
Anthropic on Vertex): the generic status mapping (`wire.status`) first, then what the envelope
says on top of it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Final, NamedTuple

import msgspec

from ....codes import ErrorCode
from ....errors import LlmError
from ....errortext import is_context_window_exceeded_error
from ....wire.durations import duration_s
from ....wire.status import reclassify

__all__ = [
    "GoogleErrorFacts",
    "google_error_code",
    "google_error_facts",
    "google_status_code",
    "refine_google_http_error",
]

_MAX_DELAY_MS: Final = float(2**53 - 1)
_OVERFLOW: Final = re.compile(r"input token count.{0,40}exceeds", re.IGNORECASE | re.DOTALL)
_STATUS_CODES: Final[dict[str, str]] = {
    "RESOURCE_EXHAUSTED": ErrorCode.RATE_LIMIT,
    "UNAVAILABLE": ErrorCode.SERVER,
    "INTERNAL": ErrorCode.SERVER,
    "UNKNOWN": ErrorCode.SERVER,
    "DEADLINE_EXCEEDED": ErrorCode.TIMEOUT,
    "UNAUTHENTICATED": ErrorCode.AUTH,
    "PERMISSION_DENIED": ErrorCode.AUTH,
    "INVALID_ARGUMENT": ErrorCode.INVALID_REQUEST,
    "FAILED_PRECONDITION": ErrorCode.INVALID_REQUEST,
    "OUT_OF_RANGE": ErrorCode.INVALID_REQUEST,
    "NOT_FOUND": ErrorCode.MODEL_NOT_FOUND,
}


class GoogleErrorFacts(NamedTuple):
    """What one Google error object says besides its message."""

    status: str | None  # the canonical status name, e.g. RESOURCE_EXHAUSTED
    reasons: tuple[str, ...]  # ErrorInfo.reason values
    quota_ids: tuple[str, ...]  # QuotaFailure violations' quotaId values
    retry_delay_ms: float | None  # RetryInfo.retryDelay, in milliseconds


def _duration_ms(value: object) -> float | None:
    """Milliseconds of a protobuf Duration string (``"37s"``, ``"34.4s"``); None if unusable."""
    if not isinstance(value, str):
        return None
    seconds = duration_s(value)
    if seconds is None:
        return None
    ms = round(seconds * 1000.0, 3)
    if not math.isfinite(ms) or ms <= 0 or ms > _MAX_DELAY_MS:
        return None
    return ms


def google_error_facts(status: object, details: object) -> GoogleErrorFacts | None:
    """The facts of an error object's ``status`` and ``details``; None when it has neither
    (not Google's envelope)."""
    name = status if isinstance(status, str) and status else None
    if name is None and not isinstance(details, (list, tuple)):
        return None
    reasons: list[str] = []
    quota_ids: list[str] = []
    delay: float | None = None
    for detail in details if isinstance(details, (list, tuple)) else ():
        if not isinstance(detail, Mapping):
            continue
        kind = detail.get("@type")
        kind = kind.rsplit("/", 1)[-1] if isinstance(kind, str) else ""
        if kind == "google.rpc.ErrorInfo":
            reason = detail.get("reason")
            if isinstance(reason, str) and reason:
                reasons.append(reason)
        elif kind == "google.rpc.RetryInfo":
            delay = _duration_ms(detail.get("retryDelay")) if delay is None else delay
        elif kind == "google.rpc.QuotaFailure":
            violations = detail.get("violations")
            for violation in violations if isinstance(violations, (list, tuple)) else ():
                quota = violation.get("quotaId") if isinstance(violation, Mapping) else None
                if isinstance(quota, str) and quota:
                    quota_ids.append(quota)
    return GoogleErrorFacts(name, tuple(reasons), tuple(quota_ids), delay)


def _credential_reason(reason: str) -> bool:
    return reason.startswith(("API_KEY_", "ACCESS_TOKEN_")) or reason == "CREDENTIALS_MISSING"


def google_error_code(http_status: int, facts: GoogleErrorFacts, message: str) -> str | None:
    """The code Google's envelope implies where the status rule would get it wrong, else None:
    a credential ``ErrorInfo.reason`` is ``AUTH`` (Gemini answers a bad key with 400); a 429
    whose quota is per day is ``QUOTA``, one with a retry delay or per-minute quotas is
    ``RATE_LIMIT`` even when its text says "exceeded your current quota"; a 400 saying the input
    token count exceeds the limit is ``CONTEXT_WINDOW_EXCEEDED``."""
    if any(_credential_reason(reason) for reason in facts.reasons):
        return ErrorCode.AUTH
    if http_status == 429 or facts.status == "RESOURCE_EXHAUSTED":
        if any("PerDay" in quota for quota in facts.quota_ids):
            return ErrorCode.QUOTA
        if facts.retry_delay_ms is not None or facts.quota_ids:
            return ErrorCode.RATE_LIMIT
    if http_status == 400 and (
        _OVERFLOW.search(message) or is_context_window_exceeded_error(message)
    ):
        return ErrorCode.CONTEXT_WINDOW_EXCEEDED
    return None


def google_status_code(status: object) -> str | None:
    """The failure code of a canonical status name (an in-stream error's ``error.status``)."""
    return _STATUS_CODES.get(status) if isinstance(status, str) else None


class _ErrorObject(msgspec.Struct):
    message: object = None
    status: object = None
    details: object = None


class _Envelope(msgspec.Struct):
    error: _ErrorObject | str | None = None


_ENVELOPE: Final = msgspec.json.Decoder(_Envelope | list[_Envelope])


def refine_google_http_error(
    error: LlmError, body_text: str, headers: Mapping[str, str], secrets: tuple[str, ...]
) -> LlmError:
    """The protocol's `spec.HttpError` hook: `google_error_code` over the reply's envelope (the
    plain object or the first of a JSON array), and its `RetryInfo` delay as the retry hint when
    no ``Retry-After`` header gave one. Idempotent; status, message and request id are kept."""
    try:
        found = _ENVELOPE.decode(body_text)
    except (msgspec.DecodeError, ValueError):
        return error
    envelope = (found[0] if found else None) if isinstance(found, list) else found
    err = envelope.error if envelope is not None else None
    if not isinstance(err, _ErrorObject):
        return error
    facts = google_error_facts(err.status, err.details)
    if facts is None:
        return error
    status = error.status if error.status is not None else 0
    message = err.message if isinstance(err.message, str) else ""
    refined = reclassify(error, google_error_code(status, facts, message) or error.code)
    if refined.failure.provider_retry_after_ms is None and facts.retry_delay_ms is not None:
        failure = msgspec.structs.replace(
            refined.failure, provider_retry_after_ms=facts.retry_delay_ms
        )
        refined = LlmError.from_failure(failure, cause=error)
    return refined
