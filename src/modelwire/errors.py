"""Errors and the stable failure-code table.

Every failure modelwire reports carries a stable ``code`` (route on it, never on message text)::

    Exception
     └── HarnessError                 code: str, cause: object | None, status, failure (None here)
          ├── LlmError                + status: int | None, failure: LlmFailure
          │    └── one category subclass per group of codes (below, `# ---- failure categories`)
          ├── InvalidChunkError       (also ValueError)     code INVALID_CHUNK
          ├── UnreachableVariantError (also AssertionError) code INVARIANT or the caller's
          └── (plugin errors: runtime and retry invariant errors, tool errors, ...)

    ErrorCode (StrEnum)
     ├── registry        NO_ADAPTER DUPLICATE_ADAPTER INVALID_ADAPTER REGISTRATION_DISPOSED
     │                   INVALID_DIRECTORY DUPLICATE_DIRECTORY INVALID_DISCOVERY DUPLICATE_DISCOVERY
     │                   NO_DISCOVERY SCOPE_CLOSED
     ├── model metadata  INVALID_CATALOG INVALID_MODEL_INFO INVALID_MODEL_CONTEXT
     │                   INVALID_MODEL_MAX_TOKENS INVALID_MODEL_REASONING UNSUPPORTED_REASONING_EFFORT
     │                   UNKNOWN_MODEL
     ├── calls           INVALID_PREPARED_CALL INVALID_CONFIG UNSUPPORTED_CONTENT INVALID_REQUEST
     │                   UNSUPPORTED_OPTION INVALID_OPTION OUTPUT_INVALID
     ├── credentials     MISSING_CREDENTIAL INVALID_CREDENTIAL AUTH
     ├── provider        RATE_LIMIT QUOTA SERVER CONTEXT_WINDOW_EXCEEDED MODEL_NOT_FOUND HTTP_<status>
     │                   PI_AI_ERROR (an unclassified in-stream provider error)
     ├── transport       TRANSPORT PROXY TIMEOUT ABORTED
     ├── stream          STREAM_CLOSED MALFORMED_RESPONSE EMPTY_RESPONSE INVALID_REPLAY_STATE
     │                   INVALID_CHUNK CONTENT_FILTER INSUFFICIENT_SYSTEM_RESOURCE
     ├── discovery       DISCOVERY_FAILED DISCOVERY_UNSUPPORTED
     ├── session log     SESSION_NOT_FOUND INVALID_SESSION_ID INVALID_EVENT LOG_UNAVAILABLE
     │                   LOG_CORRUPT SEQ_CONFLICT STALE_WRITE
     ├── replay          REPLAY_EXHAUSTED REPLAY_MISMATCH INVALID_REPLAY_FILE
     │                   REPLAY_UNRECORDED_SESSION REPLAY_UNCONSUMED
     ├── agent           UNKNOWN_TOOL TOOL_FAILED TOOL_INTERRUPTED TOOL_TIMEOUT NOTHING_TO_RESUME
     │                   LEASE_LOST TURN_IN_PROGRESS TURN_LIMIT TURN_BLOCKED MCP
     ├── approval        TOOL_DENIED TURN_PAUSED APPROVAL_PENDING UNKNOWN_CALL ALREADY_DECIDED
     └── other           INVALID_ARGS INVARIANT UNKNOWN; BUDGET_EXCEEDED (a gateway key's budget)

Default-retryable (normal retry mode): EMPTY_RESPONSE RATE_LIMIT SERVER TIMEOUT TRANSPORT.
`LlmError.from_failure` (every re-raise of a failure) builds the category subclass of the code;
`LlmError(message, code)` stays a plain `LlmError`. All keep `.code`, `.failure` and `.status`.
"""

from __future__ import annotations

import math
from typing import ClassVar, Final

from .codes import DEFAULT_RETRYABLE_CODES, ErrorCode
from .errortext import is_context_window_exceeded_error, is_quota_exceeded_error
from .vocab.usage import LlmFailure

__all__ = [
    "DEFAULT_RETRYABLE_CODES",
    "AuthError",
    "ContentFilterError",
    "ContextWindowError",
    "ErrorCode",
    "HarnessError",
    "InvalidChunkError",
    "InvalidRequestError",
    "LlmError",
    "LlmTimeoutError",
    "ModelNotFoundError",
    "OutputInvalidError",
    "QuotaError",
    "RateLimitError",
    "ResponseError",
    "ServerError",
    "TransportError",
    "TurnLimitError",
    "UnreachableVariantError",
    "categorized",
    "error_chain",
    "is_context_window_exceeded_error",
    "is_harness_error",
    "is_quota_exceeded_error",
    "normalize_llm_failure",
]


class HarnessError(Exception):
    """Base of every modelwire error: human `message`, stable `code`, optional chained `cause`.

    `status` and `failure` are None here; `LlmError` fills them for model-call failures.
    """

    status: int | None = None
    failure: LlmFailure | None = None

    def __init__(self, message: str, code: str, *, cause: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = str(code)
        self.cause = cause
        if isinstance(cause, BaseException):
            self.__cause__ = cause

    @property
    def name(self) -> str:
        """The concrete class name (`HarnessError`, `LlmError`, ...)."""
        return type(self).__name__

    def __str__(self) -> str:
        return self.message


class InvalidChunkError(HarnessError, ValueError):
    """A chunk sequence the assembler cannot turn into blocks (code `INVALID_CHUNK`)."""


class UnreachableVariantError(HarnessError, AssertionError):
    """A value that no branch of an exhaustive match over a closed union handles."""


def is_harness_error(value: object) -> bool:
    """True only for real `HarnessError` instances (subclasses included)."""
    return isinstance(value, HarnessError)


_CATEGORIES: dict[str, type[LlmError]] = {}  # failure code -> its `LlmError` category subclass


class LlmError(HarnessError):
    """A model-call failure; `failure` is the immutable `LlmFailure` built from the same facts."""

    failure: LlmFailure
    status: int | None
    codes: ClassVar[frozenset[str]] = frozenset()
    """The failure codes a category subclass stands for (empty here)."""

    def __init_subclass__(cls, codes: tuple[str, ...] = (), **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.codes = frozenset(codes)
        for code in codes:
            _CATEGORIES.setdefault(code, cls)

    def __init__(
        self,
        message: str,
        code: str,
        *,
        cause: object = None,
        status: int | None = None,
        provider_retry_after_ms: float | None = None,
        request_id: str | None = None,
    ) -> None:
        if not isinstance(message, str) or not message:
            raise ValueError("LlmError message must be a non-empty string")
        if not isinstance(code, str) or not code:
            raise ValueError("LlmError code must be a non-empty string")
        if status is not None and not _is_status(status):
            raise ValueError("LlmError status must be an integer from 100 through 599")
        if provider_retry_after_ms is not None and not _is_positive_finite(provider_retry_after_ms):
            raise ValueError("LlmError provider_retry_after_ms must be a positive finite number")
        if request_id is not None and (not isinstance(request_id, str) or not request_id):
            raise ValueError("LlmError request_id must be a non-empty string")
        super().__init__(message, code, cause=cause)
        self.status = status
        self.failure = LlmFailure(
            message,
            str(code),
            status=status,
            provider_retry_after_ms=provider_retry_after_ms,
            request_id=request_id,
        )

    @classmethod
    def from_failure(cls, failure: LlmFailure, *, cause: object = None) -> LlmError:
        """Raise-able twin of a failure snapshot: the category subclass of its code, if any."""
        kind = _CATEGORIES.get(failure.code, cls) if cls is LlmError else cls
        return kind(
            failure.message,
            failure.code,
            cause=cause,
            status=failure.status,
            provider_retry_after_ms=failure.provider_retry_after_ms,
            request_id=failure.request_id,
        )


def _is_status(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599


def _is_positive_finite(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


# ---- failure categories ----------------------------------------------------------------------


class AuthError(LlmError, codes=("AUTH", "MISSING_CREDENTIAL", "INVALID_CREDENTIAL")):
    """The credential is missing, malformed or refused."""


class RateLimitError(LlmError, codes=("RATE_LIMIT",)):
    """The provider throttled the call (`RATE_LIMIT`); see `failure.provider_retry_after_ms`."""


class QuotaError(LlmError, codes=("QUOTA",)):
    """The account's quota or balance is exhausted (`QUOTA`); waiting does not help."""


class ContextWindowError(LlmError, codes=("CONTEXT_WINDOW_EXCEEDED",)):
    """The request does not fit the model's context window (`CONTEXT_WINDOW_EXCEEDED`)."""


class LlmTimeoutError(LlmError, codes=("TIMEOUT",)):
    """The provider did not answer in time (`TIMEOUT`); not a builtin `TimeoutError`."""


class TransportError(LlmError, codes=("TRANSPORT", "STREAM_CLOSED", "PROXY")):
    """The connection failed or the stream was cut (`TRANSPORT`, `STREAM_CLOSED`), or the
    proxy refused, failed or asked for credentials (`PROXY`)."""


class ServerError(LlmError, codes=("SERVER", "INSUFFICIENT_SYSTEM_RESOURCE")):
    """The provider failed on its side (`SERVER`, `INSUFFICIENT_SYSTEM_RESOURCE`)."""


class ContentFilterError(LlmError, codes=("CONTENT_FILTER",)):
    """The model refused, or a content filter stopped the answer (`CONTENT_FILTER`)."""


class ModelNotFoundError(LlmError, codes=("MODEL_NOT_FOUND", "UNKNOWN_MODEL")):
    """The route does not serve the model (`MODEL_NOT_FOUND`, `UNKNOWN_MODEL`)."""


class InvalidRequestError(
    LlmError,
    codes=(
        "INVALID_REQUEST",
        "INVALID_OPTION",
        "UNSUPPORTED_OPTION",
        "UNSUPPORTED_CONTENT",
        "UNSUPPORTED_REASONING_EFFORT",
    ),
):
    """The request is malformed or asks for what the route cannot do (`INVALID_OPTION`, ...)."""


class ResponseError(LlmError, codes=("MALFORMED_RESPONSE", "EMPTY_RESPONSE")):
    """The provider's answer could not be used (`MALFORMED_RESPONSE`, `EMPTY_RESPONSE`)."""


class OutputInvalidError(LlmError, codes=("OUTPUT_INVALID",)):
    """The answer does not match the requested output schema or type (`OUTPUT_INVALID`)."""


class TurnLimitError(LlmError, codes=("TURN_LIMIT",)):
    """A limit ended the turn (`TURN_LIMIT`): `max_steps`, a token budget, or `max_tokens`."""


def categorized(error: LlmError) -> LlmError:
    """`error` as its category subclass (the same object when it already is one, or none fits):
    a new instance with the same failure facts and cause (raise it `from error`)."""
    kind = _CATEGORIES.get(error.code)
    if kind is None or isinstance(error, kind):
        return error
    return kind.from_failure(error.failure, cause=error.cause)


# ---- error_chain -----------------------------------------------------------------------------


def error_chain(value: object) -> str:
    """Render an error and its causes as `outer: cause: ...` for diagnostics (never parse it)."""
    return _render(value, [])


def _cause_of(value: BaseException) -> object:
    if "cause" in vars(value):
        return vars(value)["cause"]
    return value.__cause__


def _render(value: object, path: list[int]) -> str:
    if id(value) in path:
        return "<circular cause>"
    path.append(id(value))
    try:
        try:
            if not isinstance(value, BaseException):
                own = vars(value).get("message") if hasattr(value, "__dict__") else None
                if isinstance(own, str):
                    return own
                if isinstance(value, dict) and isinstance(value.get("message"), str):
                    return str(value["message"])
                return str(value)
            msg = value.message if isinstance(value, HarnessError) else _exc_message(value)
            if not msg:
                msg = type(value).__name__
            members = ""
            if isinstance(value, BaseExceptionGroup) and value.exceptions:
                members = " [" + "; ".join(_render(e, path) for e in value.exceptions) + "]"
            cause = _cause_of(value)
            tail = ""
            if cause is not None:
                rendered = _render(cause, path)
                if rendered and rendered != msg:
                    tail = f": {rendered}"
            return f"{msg}{members}{tail}"
        except Exception:
            return "<unrenderable value>"
    finally:
        path.pop()


def _exc_message(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return str(exc.message)
    return str(exc)


# ---- normalization ---------------------------------------------------------------------------

_FALLBACK_MESSAGE: Final = "LLM adapter failed"


def normalize_llm_failure(value: object) -> LlmFailure:
    """Turn anything raised at the adapter boundary into immutable provider-neutral facts."""
    # `type()` checks, not `isinstance`: isinstance consults `__class__`, which a hostile object
    # can make raise, and nothing may escape the failure boundary.
    kind = type(value)
    is_harness = issubclass(kind, HarnessError)
    if not issubclass(kind, BaseException):
        try:
            text = "null" if value is None else str(value)
        except Exception:
            text = ""
        wrapped = HarnessError(text or _FALLBACK_MESSAGE, ErrorCode.UNKNOWN, cause=value)
        return LlmFailure(wrapped.message, ErrorCode.UNKNOWN)
    assert isinstance(value, BaseException)  # narrowed by the type() check above
    trusted = _trusted_failure(value)
    if trusted is not None:
        return trusted
    try:
        message: object = value.message if is_harness else str(value)  # type: ignore[attr-defined]
        if not isinstance(message, str) or not message:
            message = _FALLBACK_MESSAGE
    except Exception:
        message = _FALLBACK_MESSAGE
    code: object = ErrorCode.UNKNOWN
    if is_harness:
        try:
            code = value.code  # type: ignore[attr-defined]
        except Exception:  # a hostile `code` accessor must not escape the failure boundary
            code = ErrorCode.UNKNOWN
        if not isinstance(code, str) or not code:
            code = ErrorCode.UNKNOWN
    return LlmFailure(message, str(code))


def _trusted_failure(exc: BaseException) -> LlmFailure | None:
    try:
        own = vars(exc)
        failure = own.get("failure")
        code = own.get("code")
        if failure is None or not isinstance(code, str):
            return None
        message: object
        fcode: object
        status: object
        delay: object
        request_id: object
        if isinstance(failure, LlmFailure):
            message, fcode = failure.message, failure.code
            status, delay, request_id = (
                failure.status,
                failure.provider_retry_after_ms,
                failure.request_id,
            )
        elif isinstance(failure, dict):
            message, fcode = failure.get("message"), failure.get("code")
            status = failure.get("status")
            delay = failure.get("provider_retry_after_ms")
            request_id = failure.get("request_id")
        else:
            return None
        if not isinstance(message, str) or not message or not isinstance(fcode, str) or not fcode:
            return None
        if status is not None and not _is_status(status):
            return None
        if delay is not None and not _is_positive_finite(delay):
            return None
        if request_id is not None and (not isinstance(request_id, str) or not request_id):
            return None
        if fcode != code:
            return None
        return LlmFailure(
            message, fcode, status=status, provider_retry_after_ms=delay, request_id=request_id
        )
    except Exception:
        return None
