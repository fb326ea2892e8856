"""API-key format check and resolution (spec/core.md §7.4).

A key is trimmed with JavaScript `trim` semantics and must then be non-empty printable ASCII
without spaces (`!`..`~`), the characters an HTTP header can carry. Error messages name the package
and where the key came from (an environment variable or the `api_key` option), never the key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import ClassVar, Final, Literal, TypeAlias

import msgspec

from ..errors import ErrorCode, LlmError

__all__ = [
    "ApiKeyAccepted",
    "ApiKeyCheck",
    "ApiKeyRejected",
    "assert_usable_api_key",
    "credential_values",
    "normalize_api_key",
    "resolve_api_key",
]

# JS `String.prototype.trim` whitespace; Python's `str.strip()` also strips U+001C..U+001F and
# U+0085, which JS keeps (and which then fail the printable-ASCII check).
_JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


class ApiKeyAccepted(msgspec.Struct, frozen=True):
    """A usable key: `value` is the trimmed key."""

    value: str
    ok: ClassVar[Literal[True]] = True


class ApiKeyRejected(msgspec.Struct, frozen=True):
    """An unusable key: `empty` after trimming, or `illegal_characters` for a header."""

    reason: Literal["empty", "illegal_characters"]
    ok: ClassVar[Literal[False]] = False


ApiKeyCheck: TypeAlias = ApiKeyAccepted | ApiKeyRejected
"""The verdict of `normalize_api_key`; test `.ok`."""

_CREDENTIAL_HEADERS: Final = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cf-aig-authorization"}
)
_CREDENTIAL_NAME: Final = re.compile(r"(?i)auth|key|token|secret|passw|cookie|signature")


def credential_values(headers: Mapping[str, str]) -> tuple[str, ...]:
    """The secrets a request's headers carry, so they can be redacted from any text: each
    credential header's value (the known names, and any name that looks like one, such as a
    configured ``X-Gateway-Token``) and the token after its auth scheme (``Bearer <token>``)."""
    found: list[str] = []
    for name, value in headers.items():
        lowered = name.lower()
        credential = lowered in _CREDENTIAL_HEADERS or _CREDENTIAL_NAME.search(lowered)
        if credential and value.strip():
            found.append(value.strip())
            scheme, _, token = value.strip().partition(" ")
            if token.strip() and scheme.isalpha():
                found.append(token.strip())
    return tuple(found)


_EMPTY: Final = ApiKeyRejected("empty")
_ILLEGAL: Final = ApiKeyRejected("illegal_characters")


def normalize_api_key(raw: str) -> ApiKeyCheck:
    """Trim `raw` (JS whitespace set) and judge it: empty, illegal characters, or accepted."""
    value = raw.strip(_JS_WHITESPACE)
    if not value:
        return _EMPTY
    # "!".."~": printable ASCII without the space (one pass each, no per-character loop)
    if not (value.isascii() and value.isprintable() and " " not in value):
        return _ILLEGAL
    return ApiKeyAccepted(value)


def assert_usable_api_key(raw: str, pkg: str, ref: str) -> str:
    """Return the trimmed key, or raise `LlmError(INVALID_CREDENTIAL)` naming `pkg` and `ref`.

    The message never contains any part of the key.
    """
    check = normalize_api_key(raw)
    if isinstance(check, ApiKeyAccepted):
        return check.value
    if check.reason == "empty":
        message = (
            f"{pkg}: the API key resolved from {ref} is blank; set {ref} to the raw key or "
            "export it in the launching environment"
        )
    else:
        message = (
            f"{pkg}: the API key resolved from {ref} contains characters no HTTP header can carry; "
            f"set {ref} to the raw key alone"
        )
    raise LlmError(message, ErrorCode.INVALID_CREDENTIAL)


def resolve_api_key(
    *,
    api_key: str | None,
    api_key_env: str | None,
    env: Mapping[str, str] | None,
    pkg: str,
) -> str:
    """The usable key from `api_key`, else from the environment variable `api_key_env`.

    `env` defaults to `os.environ`. A variable that is unset or empty raises
    `LlmError(MISSING_CREDENTIAL)` naming the variable (never a value); a key that is present but
    unusable (whitespace-only, illegal characters) raises `LlmError(INVALID_CREDENTIAL)` via
    `assert_usable_api_key`. An explicit `api_key` wins over the environment.
    """
    if api_key is not None:
        return assert_usable_api_key(api_key, pkg, "api_key")
    if not api_key_env:
        raise LlmError(
            f"{pkg}: no API key configured; pass api_key or name an environment variable in "
            "api_key_env",
            ErrorCode.MISSING_CREDENTIAL,
        )
    source = os.environ if env is None else env
    raw = source.get(api_key_env)
    if not raw:  # unset and set-to-empty both mean "no key"; whitespace-only is a blank key
        raise LlmError(
            f"{pkg}: no API key: the environment variable {api_key_env} is not set or empty; export "
            "it or pass api_key",
            ErrorCode.MISSING_CREDENTIAL,
        )
    return assert_usable_api_key(raw, pkg, api_key_env)
