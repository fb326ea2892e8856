"""Mistral's HTTP error answers, beyond the shared status mapping (`wire.status`).

Mistral's envelope is flat (``{"object": "error", "message", "type", "code"}``, the code a
string such as ``"1300"``). Two answers need more than the status: a validation error (HTTP
422) whose ``message`` is an object (``{"detail": [{"loc", "msg", "type"}]}``) is an invalid
request naming the fields, and a 429 from a plan whose request limit is zero
(``x-ratelimit-limit-*: 0``) is a QUOTA failure, which no retry can cure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

from ....errors import ErrorCode, LlmError
from ....wire.status import reclassify, redact_secrets

__all__ = ["refine_mistral_http_error"]


class _Detail(msgspec.Struct):
    loc: list[str | int] = []
    msg: str | None = None


class _Validation(msgspec.Struct):
    detail: list[_Detail] = []


class _Envelope(msgspec.Struct):
    message: _Validation | str | None = None


_DECODE: Final = msgspec.json.Decoder(_Envelope).decode
_MAX: Final = 500


def _validation_text(body_text: str) -> str | None:
    try:
        envelope = _DECODE(body_text)
    except (msgspec.DecodeError, ValueError):
        return None
    message = envelope.message
    if not isinstance(message, _Validation) or not message.detail:
        return None
    parts = []
    for item in message.detail:
        where = ".".join(str(p) for p in item.loc)
        parts.append(f"{where}: {item.msg}" if where else str(item.msg))
    return "; ".join(parts)


def _zero_limit(headers: Mapping[str, str]) -> bool:
    return any(
        k.lower().startswith("x-ratelimit-limit") and v.strip() == "0" for k, v in headers.items()
    )


def refine_mistral_http_error(
    error: LlmError, body_text: str, headers: Mapping[str, str], secrets: tuple[str, ...] = ()
) -> LlmError:
    """`error` (the shared mapping of a non-2xx Mistral answer) refined from the response's
    body and headers; `error` itself when nothing Mistral-specific applies (or when it was
    refined already: refining twice changes nothing)."""
    status = error.status
    if status == 422 or (status is not None and 400 <= status < 500 and status != 429):
        detail = _validation_text(body_text)
        if detail is not None:
            text = redact_secrets(detail, secrets)
            if len(text) > _MAX:
                text = text[:_MAX] + "…"
            if text in error.message:  # refined already
                return error
            return reclassify(error, ErrorCode.INVALID_REQUEST, f"{error.message}: {text}")
        if status == 422 and error.code != ErrorCode.INVALID_REQUEST:
            return reclassify(error, ErrorCode.INVALID_REQUEST)
    if status == 429 and error.code == ErrorCode.RATE_LIMIT and _zero_limit(headers):
        return reclassify(
            error,
            ErrorCode.QUOTA,
            f"{error.message} (the plan's request limit is 0: quota, not a passing rate limit)",
        )
    return error
