"""Endpoint URL checks shared by every HTTP adapter's configuration."""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit

__all__ = ["http_url_problem"]

_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def http_url_problem(value: str) -> str | None:
    """Why `value` cannot serve as an API base URL, or None when it can.

    A base URL must be absolute `http://` or `https://` with a host, and carry no credentials,
    query or fragment (those would leak into logs or be silently dropped). Control characters
    (CR, LF, TAB, NUL, ...) and surrounding spaces are refused: the URL parser silently strips
    them, so the request would go somewhere other than what the check saw.
    """
    control = _CONTROL.search(value)
    if control is not None:
        return (
            f"must not contain control characters (U+{ord(control.group()):04X} at index "
            f"{control.start()})"
        )
    if value != value.strip():
        return "must not start or end with whitespace"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname:
        return "has no host"
    if parts.username is not None or parts.password is not None:
        return "must not carry credentials (use the api_key settings)"
    if parts.query or parts.fragment:
        return "must not carry a query string or fragment"
    if port == 0:
        return "has port 0"
    return None
