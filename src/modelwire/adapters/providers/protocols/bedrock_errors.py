"""Bedrock's HTTP errors: the failure code its ``x-amzn-ErrorType`` (or its text) implies.

A Bedrock error answer is ``{"message": ...}`` with the exception name in the
``x-amzn-ErrorType`` header (``ThrottlingException:http://internal.amazon.com/...``) and the
request id in ``x-amzn-RequestId``. The generic status mapping (`wire.status`) already gives
the right code for the common answers (400 ``INVALID_REQUEST``, 403 ``AUTH``, 429
``RATE_LIMIT``, 5xx ``SERVER``); `bedrock_http_error` refines it where the exception name or
text says more (an over-long input is ``CONTEXT_WINDOW_EXCEEDED``, a service quota ``QUOTA``,
an unknown model ``MODEL_NOT_FOUND``, a model timeout ``TIMEOUT``), appends the exception name
to the message (so Bedrock's throttle text "Too many tokens, please wait" is never read as a
context overflow downstream); the request id is read by `wire.status` (``x-amzn-requestid``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ....errors import ErrorCode, LlmError
from ....wire.status import reclassify
from .bedrock_stream import exception_code
from .common import is_overflow_text

__all__ = [
    "ERROR_TYPE_HEADER",
    "bedrock_http_error",
    "error_type_of",
    "refine_bedrock_http_error",
]

ERROR_TYPE_HEADER: Final = "x-amzn-errortype"
_UNCLASSIFIED: Final = frozenset({ErrorCode.PI_AI_ERROR, ErrorCode.UNKNOWN})


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if headers is None:
        return None
    for key, value in headers.items():
        if key.lower() == name and value.strip():
            return value.strip()
    return None


def error_type_of(headers: Mapping[str, str] | None) -> str | None:
    """The exception name of an ``x-amzn-ErrorType`` header (``ThrottlingException``)."""
    raw = _header(headers, ERROR_TYPE_HEADER)
    return raw.split(":", 1)[0] if raw else None


def bedrock_http_error(exc: LlmError, headers: Mapping[str, str] | None = None) -> LlmError:
    """`exc` (an HTTP error of a Bedrock route) with the code Bedrock's answer implies and its
    request id kept; `exc` itself when nothing changes. `headers` are the response headers when
    the caller has them (without them only the text decides)."""
    if exc.status is None:
        return exc  # not an HTTP status failure (transport, framing, ...)
    code = exc.code
    message = exc.message
    kind = error_type_of(headers)
    if kind is not None:
        found = exception_code(kind, message)
        if found not in _UNCLASSIFIED and not (exc.status in (401, 403) and found != code):
            code = found
        if kind not in message:  # the name travels along (a throttle's text stays a throttle)
            message = f"{message} ({kind})"
    elif code != ErrorCode.CONTEXT_WINDOW_EXCEEDED and is_overflow_text(message):
        code = ErrorCode.CONTEXT_WINDOW_EXCEEDED
    return reclassify(exc, code, message)  # the request id: `wire.status` reads x-amzn-requestid


def refine_bedrock_http_error(
    error: LlmError, body_text: str, headers: Mapping[str, str], secrets: tuple[str, ...] = ()
) -> LlmError:
    """The protocol's `spec.HttpError` hook: `bedrock_http_error` over the reply's headers (the
    body's ``{"message"}`` is already in the generic error's text). Idempotent."""
    del body_text, secrets  # the generic mapping already took (and redacted) the message
    return bedrock_http_error(error, headers)
