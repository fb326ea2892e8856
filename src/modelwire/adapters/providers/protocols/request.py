"""The request-time knobs every builder reads, the request it returns, and the body fragments
more than one protocol sends (msgspec structs: UNSET fields are omitted, field order is the
body's key order)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from ....vocab import OutputSchema, ToolChoice
from ....vocab.json import JsonValue
from ...shape import merge_provider_options

__all__ = [
    "BuiltRequest",
    "CacheRetention",
    "OffWire",
    "Reasoning",
    "RequestOptions",
    "Thinking",
    "finish_body",
    "join_url",
    "off_wire",
    "safe_tool_id",
]

CacheRetention: TypeAlias = Literal["none", "short", "long"]
"""Prompt-cache retention of a route (None = the provider's default, `short`)."""


class RequestOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Per-request knobs: effort (None = provider default, `off` included), sampling, caching,
    and the answer's shape (structured output, tool choice, parallel tool calls, extra fields)."""

    effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    session_id: str | None = None
    cache_retention: CacheRetention | None = None
    thinking_budgets: Mapping[str, int] | None = None
    output: OutputSchema | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    provider_options: Mapping[str, JsonValue] | None = None


def finish_body(body: msgspec.Struct, options: RequestOptions, route: str) -> bytes:
    """Encode `body`, then append `options.provider_options` (a key the body type declares is
    refused with `INVALID_OPTION`, whether this request sets it or not)."""
    return merge_provider_options(
        msgspec.json.encode(body), type(body).__struct_fields__, options.provider_options, route
    )


class Thinking(msgspec.Struct, frozen=True, kw_only=True):
    """A ``thinking`` object (Chat Completions dialects, Anthropic)."""

    type: str
    clear_thinking: bool | UnsetType = UNSET
    budget_tokens: int | UnsetType = UNSET
    display: str | UnsetType = UNSET


class Reasoning(msgspec.Struct, frozen=True, kw_only=True):
    """A ``reasoning`` object (OpenRouter, Together, ant-ling, Responses)."""

    effort: str | UnsetType = UNSET
    summary: str | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET


OffWire: TypeAlias = str | UnsetType | None
"""What a level map says for ``off``: a wire string, None (declared, no value) or UNSET (absent)."""


def off_wire(level_map: Mapping[str, str | None]) -> OffWire:
    """The ``off`` entry of `level_map`, UNSET when the map does not mention ``off``."""
    return level_map.get("off", UNSET)


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
