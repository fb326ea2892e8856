"""One model request (`GenerateOptions`), its call-config header, and tool schemas."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, TypeAlias

import msgspec

from .json import JsonValue, freeze_json
from .messages import Message

__all__ = [
    "AdapterDefaults",
    "CallConfig",
    "GenerateOptions",
    "Purpose",
    "ToolSchema",
    "call_config_equals",
    "call_config_of",
]

Purpose: TypeAlias = Literal["compaction", "session-title"]
"""Classifies auxiliary calls; unset for ordinary conversation requests."""


class ToolSchema(msgspec.Struct, frozen=True):
    """A tool the model may call: name, description and a JSON Schema object for its parameters."""

    name: str
    description: str
    parameters: JsonValue

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "parameters", freeze_json(self.parameters))


class CallConfig(msgspec.Struct, frozen=True, omit_defaults=True):
    """The conversation-level header of a call: route, model, effort and sampling."""

    provider: str
    model: str
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.stop is not None and type(self.stop) is not tuple:
            msgspec.structs.force_setattr(self, "stop", tuple(self.stop))


class AdapterDefaults(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """Which call-config fields the adapter (not the caller) supplied."""

    reasoning_effort: bool = False
    max_tokens: bool = False


class GenerateOptions(msgspec.Struct, frozen=True, omit_defaults=True):
    """One fully assembled model request; immutable (derive variants with `msgspec.structs.replace`)."""

    provider: str
    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSchema, ...] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    reasoning_effort: str | None = None
    session_id: str | None = None
    purpose: Purpose | None = None

    def __post_init__(self) -> None:
        for name in ("messages", "tools", "stop"):
            value = getattr(self, name)
            if value is not None and type(value) is not tuple:
                msgspec.structs.force_setattr(self, name, tuple(value))


_ConfigLike: TypeAlias = CallConfig | GenerateOptions


def _num_eq(a: float | int | None, b: float | int | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, float) and math.isnan(a):
        return False
    return a == b


def call_config_equals(a: _ConfigLike, b: _ConfigLike) -> bool:
    """Compare the call-config fields of two requests/configs (stop element-wise; NaN never equal)."""
    if a.provider != b.provider or a.model != b.model or a.reasoning_effort != b.reasoning_effort:
        return False
    if not _num_eq(a.temperature, b.temperature) or not _num_eq(a.max_tokens, b.max_tokens):
        return False
    sa: Sequence[str] | None = a.stop
    sb: Sequence[str] | None = b.stop
    if sa is None or sb is None:
        return sa is None and sb is None
    return len(sa) == len(sb) and all(x == y for x, y in zip(sa, sb, strict=True))


def call_config_of(options: _ConfigLike) -> CallConfig:
    """The call-config fields of a request, as a `CallConfig`."""
    if isinstance(options, CallConfig):
        return options
    return CallConfig(
        provider=options.provider,
        model=options.model,
        reasoning_effort=options.reasoning_effort,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        stop=options.stop,
    )
