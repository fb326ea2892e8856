"""One model request (`GenerateOptions`), its call-config header, and tool schemas."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

import msgspec

from .json import JsonValue, freeze_json
from .messages import Message

__all__ = [
    "AdapterDefaults",
    "CallConfig",
    "FreeText",
    "GenerateOptions",
    "OutputSchema",
    "ProviderTool",
    "Purpose",
    "ToolChoice",
    "ToolChoiceTool",
    "ToolSchema",
    "call_config_equals",
    "call_config_of",
]

Purpose: TypeAlias = Literal["compaction", "session-title"]
"""Classifies auxiliary calls; unset for ordinary conversation requests."""


class FreeText(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A tool whose input is free text instead of JSON arguments (OpenAI's custom tools): its
    calls carry the model's raw text as `ToolCallBlock.arguments`. `grammar` constrains that text
    (its `syntax` is ``lark`` or ``regex``); None leaves it unconstrained."""

    grammar: str | None = None
    syntax: Literal["lark", "regex"] = "lark"


ProviderTool: TypeAlias = Literal["apply_patch", "local_shell"]
"""A client tool a provider defines itself (OpenAI Responses ``apply_patch``, ``local_shell``):
the user implements it; elsewhere it is sent as the plain function it describes."""


class ToolSchema(msgspec.Struct, frozen=True, omit_defaults=True):
    """A tool the model may call: name, description and a JSON Schema object for its parameters.

    `free_text` makes it a free-text tool (its calls carry raw text, see `FreeText`);
    `provider_tool` names the provider-defined client tool it implements (its calls carry that
    tool's JSON: the patch operation, the shell action)."""

    name: str
    description: str
    parameters: JsonValue
    free_text: FreeText | None = None
    provider_tool: ProviderTool | None = None

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "parameters", freeze_json(self.parameters))


class OutputSchema(msgspec.Struct, frozen=True, omit_defaults=True):
    """The answer must be one JSON value matching the JSON Schema `schema` (structured output).

    `name` identifies the schema to providers that want one (1-64 of `A-Za-z0-9_-`); `strict`
    asks for the provider's strict mode where it has one.
    """

    name: str
    schema: JsonValue
    description: str | None = None
    strict: bool = True

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "schema", freeze_json(self.schema))


class ToolChoiceTool(msgspec.Struct, frozen=True, tag="tool", tag_field="type"):
    """Force a call of the tool named `name` (it must be one of the request's tools)."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | ToolChoiceTool
"""Whether the model may (`auto`), must not (`none`) or must (`required`, or one named tool)
call a tool."""


class CallConfig(msgspec.Struct, frozen=True, omit_defaults=True):
    """The conversation-level header of a call: route, model, effort, sampling, and the answer's
    shape (tool choice and structured output), so a prepared call pins them too."""

    provider: str
    model: str
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    tool_choice: ToolChoice | None = None
    output: OutputSchema | None = None

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
    output: OutputSchema | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    provider_options: Mapping[str, JsonValue] | None = None
    """Extra top-level body fields for this call (a key modelwire writes itself is refused)."""
    timeout_ms: int | None = None
    """This call's total deadline in ms (overrides the route's `timeout_ms`; 0 = none)."""
    first_token_timeout_ms: int | None = None
    """This call's deadline until its first chunk, in ms (overrides the route's; 0 = none)."""

    def __post_init__(self) -> None:
        for name in ("messages", "tools", "stop"):
            value = getattr(self, name)
            if value is not None and type(value) is not tuple:
                msgspec.structs.force_setattr(self, name, tuple(value))
        if self.provider_options is not None:
            frozen = freeze_json(self.provider_options)
            msgspec.structs.force_setattr(self, "provider_options", frozen)


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
    if a.tool_choice != b.tool_choice or a.output != b.output:
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
        tool_choice=options.tool_choice,
        output=options.output,
    )
