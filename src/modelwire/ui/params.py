"""Query parameters of the JSON endpoints, checked: a bad one is a 400 naming it."""

from __future__ import annotations

from aiohttp import web

from ..errors import ErrorCode, HarnessError
from ..session.ids import check_session_id

__all__ = ["ascii_int", "int_param", "session_param", "text_param"]


def _bad(message: str) -> HarnessError:
    return HarnessError(message, ErrorCode.INVALID_ARGS)


def session_param(request: web.Request) -> str:
    """The `id` parameter: a valid session id (`INVALID_SESSION_ID` otherwise)."""
    value = request.query.get("id")
    if value is None:
        raise _bad("missing query parameter `id` (the session id)")
    return check_session_id(value)


def int_param(
    request: web.Request, name: str, default: int | None, *, low: int = 0, high: int = 2**53 - 1
) -> int:
    """An integer parameter within [low, high]; absent → `default` (required when None)."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        if default is None:
            raise _bad(f"missing query parameter `{name}`")
        return default
    return ascii_int(raw, f"query parameter `{name}`", low=low, high=high)


def ascii_int(raw: str, what: str, *, low: int = 0, high: int = 2**53 - 1) -> int:
    """`raw` as an integer within [low, high]: ASCII digits only, with a ``-`` when `low` < 0
    (``int()`` would also take ``²``'s kin, ``٣``, ``1_000``, ``+5`` and spaces, or raise on
    some); anything else is `INVALID_ARGS` naming `what` (a 400)."""
    digits = raw[1:] if raw.startswith("-") and low < 0 else raw
    if not (0 < len(digits) <= 20 and digits.isascii() and digits.isdigit()):
        raise _bad(f"{what} must be an integer, got {raw[:40]!r}")
    value = int(raw, 10)
    if not low <= value <= high:
        raise _bad(f"{what} must be within [{low}, {high}], got {value}")
    return value


def text_param(
    request: web.Request, name: str, default: str, *, choices: frozenset[str] | None = None
) -> str:
    """A text parameter (at most 200 characters), optionally one of `choices`."""
    value = request.query.get(name, default)
    if len(value) > 200:
        raise _bad(f"query parameter `{name}` is longer than 200 characters")
    if choices is not None and value not in choices:
        raise _bad(f"query parameter `{name}` must be one of {', '.join(sorted(choices))}")
    return value
