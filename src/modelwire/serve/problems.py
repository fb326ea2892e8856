"""Gateway failures and the error bodies each client's SDK parses.

A `GatewayError` carries an HTTP status, a stable code (the code table's, plus the gateway's own
`BUDGET_EXCEEDED`) and a message naming what is at fault, never a key. `error_body` shapes it for
the protocol of the endpoint that was called: OpenAI's `{"error": {message, type, code, param}}`
(which `openai.APIStatusError` reads) or Anthropic's `{"type": "error", "error": {type, message}}`
(which `anthropic.APIStatusError` reads).
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from ..vocab import LlmFailure

__all__ = [
    "GatewayError",
    "Protocol",
    "error_body",
    "failure_error",
    "failure_status",
]

Protocol: TypeAlias = Literal["openai", "anthropic"]
"""Whose error shape a client expects: the Chat Completions / Responses one, or Messages'."""

_STATUS_OF_CODE: Final[dict[str, int]] = {
    "RATE_LIMIT": 429,
    "QUOTA": 429,
    "BUDGET_EXCEEDED": 429,
    "CONTEXT_WINDOW_EXCEEDED": 400,
    "INVALID_REQUEST": 400,
    "INVALID_OPTION": 400,
    "UNSUPPORTED_OPTION": 400,
    "UNSUPPORTED_CONTENT": 400,
    "UNSUPPORTED_REASONING_EFFORT": 400,
    "OUTPUT_INVALID": 502,
    "CONTENT_FILTER": 400,
    "MODEL_NOT_FOUND": 404,
    "UNKNOWN_MODEL": 404,
    "NO_ADAPTER": 404,
    "TIMEOUT": 504,
    "ABORTED": 499,
}
"""The status a failure of an upstream call reaches the client with; anything else (the
upstream's own server, transport or credential failures) is a 502 from the gateway: the client's
key is not at fault when the route's provider key is."""

_OPENAI_TYPES: Final[dict[int, str]] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    501: "not_implemented_error",
}
_ANTHROPIC_TYPES: Final[dict[int, str]] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class GatewayError(Exception):
    """A request the gateway answers with an error: `status`, `code`, `message`, and the seconds
    a client should wait (`retry_after_s`, sent as `Retry-After`)."""

    def __init__(
        self, status: int, code: str, message: str, *, retry_after_s: int | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s

    def headers(self) -> dict[str, str]:
        """The response headers this error adds (`Retry-After`)."""
        if self.retry_after_s is None:
            return {}
        return {"Retry-After": str(max(1, self.retry_after_s))}


def failure_status(failure: LlmFailure) -> int:
    """The HTTP status an upstream failure reaches the client with (see `_STATUS_OF_CODE`)."""
    return _STATUS_OF_CODE.get(failure.code, 502)


def failure_error(failure: LlmFailure, where: str) -> GatewayError:
    """The client-facing error of a failed upstream call on `where` (`route:model`)."""
    retry = failure.provider_retry_after_ms
    retry_s = None if retry is None else int(-(-retry // 1000))
    status = failure_status(failure)
    if status == 429 and retry_s is None:
        retry_s = 1
    return GatewayError(status, failure.code, f"{where}: {failure.message}", retry_after_s=retry_s)


def error_body(protocol: Protocol, error: GatewayError) -> dict[str, object]:
    """The JSON error body `protocol`'s SDK parses for `error`."""
    if protocol == "anthropic":
        kind = _ANTHROPIC_TYPES.get(error.status, "api_error")
        return {
            "type": "error",
            "error": {"type": kind, "message": error.message, "code": error.code},
        }
    kind = _OPENAI_TYPES.get(error.status, "api_error")
    return {"error": {"message": error.message, "type": kind, "code": error.code, "param": None}}
