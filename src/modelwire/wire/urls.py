"""Endpoint URL checks shared by every HTTP adapter's configuration."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["http_url_problem"]


def http_url_problem(value: str) -> str | None:
    """Why `value` cannot serve as an API base URL, or None when it can.

    A base URL must be absolute `http://` or `https://` with a host, and carry no credentials,
    query or fragment (those would leak into logs or be silently dropped).
    """
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
