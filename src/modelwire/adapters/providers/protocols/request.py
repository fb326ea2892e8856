"""The request-time knobs every builder reads, and the request it returns."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import msgspec

__all__ = ["BuiltRequest", "RequestOptions", "join_url", "safe_tool_id"]


class RequestOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Per-request knobs: effort (None = provider default, `off` included), sampling, caching."""

    effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    session_id: str | None = None
    cache_retention: str | None = None
    thinking_budgets: Mapping[str, int] | None = None


class BuiltRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One provider request: endpoint URL, protocol headers (no auth) and the JSON body."""

    url: str
    headers: dict[str, str]
    body: bytes


def join_url(base: str, path: str) -> str:
    """`base` without trailing slashes, then `path` (path segments of the base are kept)."""
    return base.rstrip("/") + path


_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")


def safe_tool_id(raw: str, limit: int) -> str:
    """A tool-call id restricted to `[A-Za-z0-9_-]` and at most `limit` characters."""
    return _UNSAFE.sub("_", raw)[:limit] or "call"
