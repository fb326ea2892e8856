"""In-stream provider errors: the failure code an error's `type`/`code` implies, and the
classification of error text (overflow, rate limit, auth, ...) when no known type says it."""

from __future__ import annotations

import re
from typing import Final

from ....errors import ErrorCode, is_context_window_exceeded_error, is_quota_exceeded_error

__all__ = ["PI_AI_ERROR", "classify_error_text", "error_type_code", "is_overflow_text"]


_RATE_LIMIT_TEXT: Final = re.compile(
    r"rate.?limit|too many requests|ThrottlingException|throttl", re.IGNORECASE
)
_OVERFLOW_TEXT: Final = re.compile(
    r"prompt is too long|request_too_large|exceeds the context window|input is too long"
    r"|maximum context length is \d+ tokens|model_context_window_exceeded|context_length_exceeded"
    r"|too many tokens|token limit exceeded|exceeds the maximum number of tokens"
    r"|reduce the length of the messages|context window exceeds limit|exceeded model token limit"
    r"|input token count.*exceeds|longer than the model's context length"
    r"|^4(?:00|13)\s*(?:status code )?\(no body\)",
    re.IGNORECASE,
)
_CLASSIFY: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r"\b(?:401|403)\b"), ErrorCode.AUTH),
    (re.compile(r"\b429\b|rate.?limit", re.IGNORECASE), ErrorCode.RATE_LIMIT),
    (
        re.compile(
            r"\b413\b|failed to buffer the request body: length limit exceeded"
            r"|payload too large|request body too large",
            re.IGNORECASE,
        ),
        ErrorCode.INVALID_REQUEST,
    ),
    (re.compile(r"\b400\b|invalid.?request", re.IGNORECASE), ErrorCode.INVALID_REQUEST),
    (re.compile(r"\b5\d\d\b"), ErrorCode.SERVER),
    (re.compile(r"timed out|time out|timeout", re.IGNORECASE), ErrorCode.TIMEOUT),
    (re.compile(r"stream ended (?:before|without)", re.IGNORECASE), ErrorCode.TRANSPORT),
    (
        re.compile(
            r"network|connection|socket|fetch|ECONN\w*|other side closed"
            r"|HTTP2 request did not get a response|WebSocket closed unexpectedly"
            r"|terminated|premature close",
            re.IGNORECASE,
        ),
        ErrorCode.TRANSPORT,
    ),
)
PI_AI_ERROR: Final = ErrorCode.PI_AI_ERROR

_ERROR_TYPES: Final[dict[str, str]] = {
    # Anthropic `error.type`
    "overloaded_error": ErrorCode.SERVER,
    "api_error": ErrorCode.SERVER,
    "rate_limit_error": ErrorCode.RATE_LIMIT,
    "authentication_error": ErrorCode.AUTH,
    "permission_error": ErrorCode.AUTH,
    "request_too_large": ErrorCode.INVALID_REQUEST,
    "invalid_request_error": ErrorCode.INVALID_REQUEST,
    "billing_error": ErrorCode.QUOTA,
    "not_found_error": ErrorCode.MODEL_NOT_FOUND,
    # OpenAI-style `error.type` / `error.code` (Chat Completions hosts: OpenAI, Groq, ...)
    "server_error": ErrorCode.SERVER,
    "rate_limit_exceeded": ErrorCode.RATE_LIMIT,
    "insufficient_quota": ErrorCode.QUOTA,
    "invalid_api_key": ErrorCode.AUTH,
    "context_length_exceeded": ErrorCode.CONTEXT_WINDOW_EXCEEDED,
    "model_not_found": ErrorCode.MODEL_NOT_FOUND,
}


def error_type_code(*kinds: object) -> str | None:
    """The failure code the first known in-stream error `type` / `code` among `kinds` implies
    (`invalid_request_error` → INVALID_REQUEST); None when none is known (the text decides)."""
    for kind in kinds:
        if isinstance(kind, str) and kind in _ERROR_TYPES:
            return _ERROR_TYPES[kind]
    return None


def is_overflow_text(text: str) -> bool:
    """True when error text says the context window overflowed (and is not a rate limit)."""
    if _RATE_LIMIT_TEXT.search(text):
        return False
    return bool(_OVERFLOW_TEXT.search(text)) or is_context_window_exceeded_error(text)


def classify_error_text(text: str) -> str:
    """The failure code for an in-stream error message (first matching rule wins)."""
    first, *rest = _CLASSIFY
    if first[0].search(text):
        return first[1]
    if is_quota_exceeded_error(text):
        return ErrorCode.QUOTA
    for pattern, code in rest:
        if pattern.search(text):
            return code
    return PI_AI_ERROR
