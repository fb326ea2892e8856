"""Session-log URLs in messages: `redact_url` (the URL without its password) and `url_secrets`
(the password-looking parts, to scrub from a dependency's own error text).

Both work on text that no URL parser accepts (``postgresql://alice:pw@[broken/db``): the
password-looking part is then everything between ``://`` and the last ``@``, less the user name
before its first ``:``. In a query string, the value of every parameter whose name looks like a
credential (``password``, ``sslpassword``, ``token``, ``api_key``, ``auth``, …) is hidden as
``***``; other parameters (``?mode=ro``, ``?sslmode=require``) are kept. A fragment is dropped.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

__all__ = ["redact_url", "url_secrets"]

_SECRET_NAME: Final = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred|sig")
_QUERY_PARAM: Final = re.compile(r"([^?&;#=]*)=([^&;#]*)")


def _split(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # an unparseable port raises ValueError too
    except ValueError:
        return None
    return parts


def _positional(url: str) -> tuple[str, str, str] | None:
    """(text up to and including ``://``, userinfo, text after its ``@``), or None without one.

    For text no parser accepts, or where an ``@`` lies outside the parsed authority: the
    userinfo runs to the *last* ``@``, so a password holding an unencoded ``@``, ``/``, ``?``
    or ``#`` is still covered (removing too much from a message is harmless).
    """
    head, sep, rest = url.partition("://")
    if not sep:
        head, sep, rest = url.partition(":")
        if not sep:
            return None
    at = rest.rfind("@")
    if at < 0:
        return None
    return head + sep, rest[:at], rest[at + 1 :]


def _secret_param(name: str) -> bool:
    return _SECRET_NAME.search(unquote(name)) is not None


def _hide_query(text: str) -> str:
    """`text` with its fragment dropped and credential-looking query values hidden."""
    text = text.partition("#")[0]
    base, question, query = text.partition("?")
    if not question:
        return base

    def hide(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"{name}=***" if _secret_param(name) else match.group(0)

    return f"{base}?{_QUERY_PARAM.sub(hide, query)}"


def redact_url(url: str) -> str:
    """`url` for a message: no password, no credential-looking query value, no fragment.

    A URL with none of those is returned unchanged (its spelling, e.g. ``sqlite:////abs.db``,
    stays copy-pasteable). One that no parser accepts is still scrubbed by position.
    """
    parts = _split(url)
    if parts is not None and "@" not in parts.path + parts.query + parts.fragment:
        if "@" not in parts.netloc:
            return _hide_query(url)
        userinfo, _, host = parts.netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{host}" if user else host
        query = f"?{parts.query}" if parts.query else ""
        return _hide_query(f"{parts.scheme}://{netloc}{parts.path}{query}")
    found = _positional(url)
    if found is None:
        return _hide_query(url)
    head, userinfo, host = found
    user = userinfo.split(":", 1)[0]
    return head + _hide_query((f"{user}@" if user else "") + host)


def url_secrets(url: str) -> tuple[str, ...]:
    """Every password-looking part of `url`, as written and percent-decoded, longest first:
    the userinfo password (parsed, else by position) and credential-looking query values."""
    found: set[str] = set()
    parts = _split(url)
    if parts is not None:
        try:
            if parts.password:
                found.add(parts.password)
        except ValueError:
            pass
        for name, value in parse_qsl(parts.query, keep_blank_values=False):
            if _secret_param(name) and value:
                found.add(value)
    positional = _positional(url)
    if positional is not None:
        _, colon, password = positional[1].partition(":")
        if colon and password:
            found.add(password)
    query = url.partition("?")[2].partition("#")[0]
    found.update(v for n, v in _QUERY_PARAM.findall(query) if v and _secret_param(n))
    found.update({unquote(secret) for secret in found})
    return tuple(sorted((s for s in found if s), key=len, reverse=True))
