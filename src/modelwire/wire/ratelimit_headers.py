"""The rate-limit state providers publish in response headers, read into one neutral struct.

- OpenAI and the OpenAI-compatible servers: ``x-ratelimit-remaining-requests`` /
  ``-tokens`` and ``x-ratelimit-reset-requests`` / ``-tokens``, a duration in Go's format
  (``1s``, ``6m0s``, ``20ms``, ``1h2m3.5s``); a bare number is seconds (above 10^9: epoch
  seconds).
- Anthropic: ``anthropic-ratelimit-requests-remaining`` / ``-reset`` and
  ``anthropic-ratelimit-tokens-remaining`` / ``-reset`` (else the ``input-tokens`` pair), the
  reset an RFC 3339 time. It is measured against the response's ``Date`` when our clock is more
  than `SKEW_S` away from it (the server's clock decides when its budget resets), else against
  ours (``Date`` has whole seconds only).
- ``retry-after`` (seconds or an HTTP date, read as `wire.status` reads it) and
  ``retry-after-ms``.

Every value is checked (finite, not negative; a reset must lie ahead): anything else is ignored,
never an error, so a malformed header can neither fail nor stall a call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Final

import msgspec

from .durations import duration_s
from .status import parse_retry_after

__all__ = ["SKEW_S", "RateLimitHeaders", "parse_duration_s", "parse_rate_limit_headers"]

SKEW_S: Final = 2.0
"""Beyond this distance between our clock and the response's ``Date``, resets given as a time
are measured against ``Date``."""

_EPOCH_FLOOR: Final = 1e9


class RateLimitHeaders(msgspec.Struct, frozen=True, kw_only=True):
    """What one response said, in seconds from now (None: not said, or not usable)."""

    remaining_requests: float | None = None
    requests_reset_s: float | None = None
    remaining_tokens: float | None = None
    tokens_reset_s: float | None = None
    retry_after_s: float | None = None


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def parse_duration_s(text: str | None, *, now: float) -> float | None:
    """Seconds from `now` in an OpenAI-style reset (``6m0s``, ``20ms``, ``2``), else None."""
    if text is None:
        return None
    text = text.strip()
    plain = _number(text)
    if plain is not None:
        return max(plain - now, 0.0) if plain > _EPOCH_FLOOR else plain
    return duration_s(text)


def _instant(text: str | None) -> float | None:
    """An RFC 3339 time (``2024-05-01T12:00:30Z``) as epoch seconds, else None."""
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        return None
    return when.timestamp() if when.tzinfo is not None else None


def _server_now(date: str | None, now: float) -> float:
    """The server's idea of now: the ``Date`` header when our clock is far from it, else `now`."""
    if date:
        try:
            when = parsedate_to_datetime(date)
        except (TypeError, ValueError, IndexError, OverflowError):
            return now
        if when is not None and when.tzinfo is not None and abs(when.timestamp() - now) > SKEW_S:
            return when.timestamp()
    return now


def _until(text: str | None, base: float) -> float | None:
    at = _instant(text)
    return None if at is None else max(at - base, 0.0)


def parse_rate_limit_headers(headers: Mapping[str, str], *, now: float) -> RateLimitHeaders | None:
    """The rate-limit facts of one response's `headers` (None when it carries none);
    `now` is the epoch seconds the response arrived at."""
    found: dict[str, str] = {}
    date: str | None = None
    for key, value in headers.items():
        low = key.lower()
        if "ratelimit" in low or low.startswith("retry-after"):
            found[low] = value
        elif low == "date":
            date = value
    if not found:
        return None
    remaining_requests = _number(found.get("x-ratelimit-remaining-requests"))
    requests_reset = parse_duration_s(found.get("x-ratelimit-reset-requests"), now=now)
    remaining_tokens = _number(found.get("x-ratelimit-remaining-tokens"))
    tokens_reset = parse_duration_s(found.get("x-ratelimit-reset-tokens"), now=now)
    prefix = "anthropic-ratelimit-"
    if any(k.startswith(prefix) for k in found):
        base = _server_now(date, now)
        if remaining_requests is None:
            remaining_requests = _number(found.get(prefix + "requests-remaining"))
            requests_reset = _until(found.get(prefix + "requests-reset"), base)
        kind = "tokens" if prefix + "tokens-remaining" in found else "input-tokens"
        if remaining_tokens is None:
            remaining_tokens = _number(found.get(f"{prefix}{kind}-remaining"))
            tokens_reset = _until(found.get(f"{prefix}{kind}-reset"), base)
    retry_ms = parse_retry_after(found.get("retry-after"), now=now)
    if retry_ms is None:
        retry_ms = _number(found.get("retry-after-ms")) or None
    result = RateLimitHeaders(
        remaining_requests=remaining_requests,
        requests_reset_s=requests_reset,
        remaining_tokens=remaining_tokens,
        tokens_reset_s=tokens_reset,
        retry_after_s=None if retry_ms is None else retry_ms / 1000.0,
    )
    return None if result == _NOTHING else result


_NOTHING: Final = RateLimitHeaders()
