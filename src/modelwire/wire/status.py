"""HTTP failure mapping shared by every HTTP adapter: status → `LlmError`, Retry-After, request id.

`failure_for_status` classifies a non-2xx response (spec B.2, rule B12) in this order: 401/403
``AUTH``; 413 ``INVALID_REQUEST``; quota wording in the error detail ``QUOTA``; 429
``RATE_LIMIT``; 400 with context-overflow wording ``CONTEXT_WINDOW_EXCEEDED``, else
``INVALID_REQUEST``; 5xx ``SERVER``; anything else ``HTTP_<status>``. The message names the
provider and the status and carries the provider's own error text, with credentials redacted.
An envelope wrapped in a JSON array is read as its first element. What a vendor's envelope says
beyond that (Google's typed details, Mistral's 422, Azure's content filter, Bedrock's exception
header) is its protocol's `WireProtocol.http_error` hook, applied on top of this mapping.

Every field of a failure that came from the provider is kept free of credentials, not only the
message: `redact_failure` scrubs message, code and request id. Every adapter's non-2xx answer
reaches `failure_for_status` through `stream_post`, which hands it the request's credentials;
the DeepSeek translator scrubs its in-stream failures the same way (the providers' translators
build in-stream failures whose only provider text is the message, redacted in
`protocols/common.py`). A request id that carries a secret is dropped (it would be useless for
correlation anyway), and a code that does becomes ``UNKNOWN``.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Mapping
from email.utils import parsedate_to_datetime
from typing import Final

import msgspec

from ..errors import (
    ErrorCode,
    LlmError,
    is_context_window_exceeded_error,
    is_quota_exceeded_error,
)
from ..vocab import LlmFailure

__all__ = [
    "error_detail",
    "failure_for_status",
    "http_error_code",
    "parse_retry_after",
    "reclassify",
    "redact_failure",
    "redact_secrets",
    "request_id_from",
]

_MAX_RETRY_AFTER_MS: Final = float(2**53 - 1)
_MAX_TEXT: Final = 500
_SECRET_SHAPES: Final = re.compile(
    r"(?i)\b(?:sk|pk|rk|key|api[_-]?key)[-_][A-Za-z0-9_\-]{8,}|\bBearer\s+[^\s\"',;]+"
)


class _ErrorObject(msgspec.Struct):
    message: object = None
    type: object = None
    code: object = None
    status: object = None  # a canonical status name (RESOURCE_EXHAUSTED, ...)


class _ErrorEnvelope(msgspec.Struct):
    error: _ErrorObject | str | None = None
    message: object = None
    request_id: object = None  # Anthropic's envelope carries it beside the error


_ENVELOPE: Final = msgspec.json.Decoder(_ErrorEnvelope | list[_ErrorEnvelope])


def _decode(body_text: str) -> _ErrorEnvelope | None:
    """The error envelope of a JSON body (the first one of a JSON array), or None when the body
    is not one."""
    try:
        found = _ENVELOPE.decode(body_text)
    except (msgspec.DecodeError, ValueError):
        return None
    if isinstance(found, list):
        return found[0] if found else None
    return found


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None and not hasattr(headers, "getall"):  # plain dict: match case-insensitively
        for key, candidate in headers.items():
            if key.lower() == name:
                value = candidate
                break
    return value or None


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Milliseconds a ``Retry-After`` header asks for, or None when absent or unusable.

    All-digit values are seconds; anything else is an HTTP date measured against `now` (epoch
    seconds, default the wall clock). Only finite values > 0 are kept (``0``, overflowing digit
    strings, past dates and invalid text give None); values are not rounded.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        ms = float(text) * 1000.0
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when is None or when.tzinfo is None:
            return None
        ms = (when.timestamp() - (time.time() if now is None else now)) * 1000.0
    if not math.isfinite(ms) or ms <= 0 or ms > _MAX_RETRY_AFTER_MS:
        return None
    return ms


def request_id_from(
    headers: Mapping[str, str], fallback_names: Iterable[str] = (), *, secrets: Iterable[str] = ()
) -> str | None:
    """The provider request id: ``x-request-id``, else the first present `fallback_names` header.

    An empty header value counts as absent, and so does one that carries any of `secrets` or
    anything shaped like an API key (a proxy that echoes the caller's key into the request id
    header must not turn the key into a logged id): the next candidate header is tried.
    """
    kept = tuple(secret for secret in secrets if secret)
    for name in ("x-request-id", *(n.lower() for n in fallback_names)):
        found = _header(headers, name)
        if found is not None and redact_secrets(found, kept) == found:
            return found
    return None


def redact_secrets(text: str, secrets: Iterable[str]) -> str:
    """`text` with every one of `secrets` (in any letter case), and anything shaped like an API
    key or a Bearer token, replaced by ``[redacted]`` (for provider text that becomes a message)."""
    kept = sorted({secret for secret in secrets if secret}, key=len, reverse=True)
    if kept:
        pattern = "|".join(re.escape(secret) for secret in kept)
        text = re.sub(pattern, "[redacted]", text, flags=re.IGNORECASE)
    return _SECRET_SHAPES.sub("[redacted]", text)


_redact = redact_secrets


def redact_failure(failure: LlmFailure, secrets: Iterable[str]) -> LlmFailure:
    """`failure` with no field carrying any of `secrets` (or anything shaped like a key).

    The message is redacted; a request id that carries a secret becomes None; a code that does
    becomes ``UNKNOWN``. Returns `failure` itself when nothing had to change.
    """
    kept = tuple(secret for secret in secrets if secret)
    message = _redact(failure.message, kept)
    code = failure.code
    if _redact(code, kept) != code:
        code = ErrorCode.UNKNOWN
    request_id = failure.request_id
    if request_id is not None and _redact(request_id, kept) != request_id:
        request_id = None
    if (message, code, request_id) == (failure.message, failure.code, failure.request_id):
        return failure
    return LlmFailure(
        message,
        code,
        status=failure.status,
        provider_retry_after_ms=failure.provider_retry_after_ms,
        request_id=request_id,
    )


def _body_request_id(envelope: _ErrorEnvelope | None) -> str | None:
    rid = envelope.request_id if envelope is not None else None
    return rid if isinstance(rid, str) and rid else None


def _parse(envelope: _ErrorEnvelope | None) -> tuple[str | None, str, bool]:
    if envelope is None:
        return None, "", False
    err = envelope.error
    if isinstance(err, str):
        return (err or None), err, True
    if err is None:
        top = envelope.message
        return (top if isinstance(top, str) and top else None), "", True
    parts = [str(v) for v in (err.code, err.type, err.status, err.message) if v]
    message = err.message if isinstance(err.message, str) and err.message else None
    return message, " ".join(parts), True


def error_detail(body_text: str) -> tuple[str | None, str]:
    """Parse a provider error body into (provider message or None, classification detail).

    The detail joins the truthy ``error.code``, ``error.type``, ``error.status`` and
    ``error.message`` with one space; a non-JSON body gives an empty detail (the status alone
    decides).
    """
    message, detail, _ = _parse(_decode(body_text))
    return message, detail


def http_error_code(status: int, detail: str) -> str:
    """The failure code for a non-2xx `status` given the error `detail` text (rule B12)."""
    if status in (401, 403):
        return ErrorCode.AUTH
    if status == 413:
        return ErrorCode.INVALID_REQUEST
    if detail and is_quota_exceeded_error(detail):
        return ErrorCode.QUOTA
    if status == 429:
        return ErrorCode.RATE_LIMIT
    if status == 400:
        if detail and is_context_window_exceeded_error(detail):
            return ErrorCode.CONTEXT_WINDOW_EXCEEDED
        return ErrorCode.INVALID_REQUEST
    if status >= 500:
        return ErrorCode.SERVER
    if status == 404 and _NOT_FOUND.search(detail):
        return ErrorCode.MODEL_NOT_FOUND  # the model, deployment or resource named is unknown
    return ErrorCode.http(status)


_NOT_FOUND: Final = re.compile(
    r"not[\s_-]?found|does not exist|DeploymentNotFound|model_not_found|unknown model", re.I
)
_REQUEST_ID_HEADERS: Final = (
    "request-id",
    "apim-request-id",
    "x-ms-request-id",
    "x-amzn-requestid",
)
"""Request-id headers tried after ``x-request-id`` and an adapter's own fallbacks (Anthropic,
Azure API Management, Azure)."""


def _plain_text(body_text: str) -> str | None:
    text = " ".join(body_text.split())
    if not text or text.startswith("<") or len(text) > 200:
        return None  # empty, an HTML gateway page, or too long to be a message
    return text


def _safe_id(value: str | None, secrets: tuple[str, ...]) -> str | None:
    return value if value is not None and redact_secrets(value, secrets) == value else None


def failure_for_status(
    status: int,
    body_text: str,
    headers: Mapping[str, str],
    *,
    provider: str,
    fallback_request_id_headers: Iterable[str] = (),
    secrets: Iterable[str] = (),
    now: float | None = None,
) -> LlmError:
    """Build the `LlmError` for a non-2xx response of `provider` (display name, e.g. DeepSeek).

    Carries `status`, ``provider_retry_after_ms`` from ``Retry-After`` and the request id. The
    message is ``<provider> API error (HTTP <status>)`` plus ``: <provider error text>`` when the
    body has one. No field carries any of `secrets` (or anything shaped like an API key): the
    text is redacted before it is shortened (a key cut in half would survive), and a request id
    header that echoes a secret is skipped (`request_id_from`).
    """
    kept = tuple(secret for secret in secrets if secret)
    envelope = _decode(body_text)
    provider_message, detail, parsed = _parse(envelope)
    code = http_error_code(status, detail)
    text = provider_message
    if text is None and not parsed:
        text = _plain_text(body_text)
    message = f"{provider} API error (HTTP {status})"
    location = _header(headers, "location") if 300 <= status < 400 else None
    if location and (shown := _plain_text(location)):  # never followed: say where it pointed
        message = f"{message} redirecting to {_redact(shown, kept)}"
    if text:
        text = _redact(text, kept)
        if len(text) > _MAX_TEXT:
            text = text[:_MAX_TEXT] + "…"
        message = f"{message}: {text}"
    valid_status = status if 100 <= status <= 599 else None
    retry_after = parse_retry_after(_header(headers, "retry-after"), now=now)
    failure = LlmFailure(
        message,
        code,
        status=valid_status,
        provider_retry_after_ms=retry_after,
        request_id=request_id_from(headers, fallback_request_id_headers, secrets=kept)
        or _safe_id(_body_request_id(envelope), kept)
        or request_id_from(headers, _REQUEST_ID_HEADERS, secrets=kept),
    )
    return LlmError.from_failure(redact_failure(failure, kept))


def reclassify(error: LlmError, code: str, message: str | None = None) -> LlmError:
    """`error` with another code (and message), every other fact of its failure kept: status,
    provider Retry-After and request id; the original is the cause. `error` itself when nothing
    changes. For protocol readings of an error reply (`WireProtocol.http_error`)."""
    text = error.message if message is None else message
    if code == error.code and text == error.message:
        return error
    failure = msgspec.structs.replace(error.failure, code=code, message=text)
    return LlmError.from_failure(failure, cause=error)
