"""The compat-switch vocabulary: which switch each protocol takes, its value type, and withheld
keys; `CompatSwitches`, the switches one catalog entry, route or model wrote (typed, each UNSET
when not written); and `overlay`, which lays written switches over a protocol's effective ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, TypeAlias, TypeVar, get_args

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "BOOL_SWITCHES",
    "ENUM_SWITCHES",
    "LEVELS",
    "MODALITIES",
    "MODALITIES_TEXT",
    "NO_SWITCHES",
    "PROTOCOLS",
    "SWITCH_PROTOCOLS",
    "THINKING_FORMATS",
    "WITHHELD_SWITCHES",
    "CacheControlFormat",
    "CompatSwitches",
    "MaxTokensField",
    "TemplateValue",
    "TemplateVar",
    "ThinkingFormat",
    "overlay",
    "switch_value_error",
    "written",
]

ThinkingFormat: TypeAlias = Literal[
    "openai",
    "deepseek",
    "openrouter",
    "together",
    "zai",
    "qwen",
    "chat-template",
    "qwen-chat-template",
    "string-thinking",
    "ant-ling",
]
"""The Chat Completions reasoning dialects."""
MaxTokensField: TypeAlias = Literal["max_completion_tokens", "max_tokens"]
"""The body field a Chat Completions endpoint reads the output cap from."""
CacheControlFormat: TypeAlias = Literal["anthropic"]
"""How a Chat Completions endpoint marks prompt-cache breakpoints."""

PROTOCOLS: Final[tuple[str, ...]] = (
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
    "mistral-conversations",
    "azure-openai-responses",
    "azure-openai-completions",
    "bedrock-converse-stream",
    "anthropic-bedrock",
    "anthropic-vertex",
)
"""The protocols a route may name (`api`); `protocols.registry` serves each."""

LEVELS: Final[tuple[str, ...]] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
"""Reasoning levels in escalation order."""

MODALITIES: Final[frozenset[str]] = frozenset({"text", "image", "document", "audio"})
"""Input modalities a model may accept."""
MODALITIES_TEXT: Final = "text, image, document and/or audio"

THINKING_FORMATS: Final[tuple[str, ...]] = get_args(ThinkingFormat)
"""The Chat Completions reasoning dialects, in order."""

_C0 = "openai-completions"
_C = (_C0, "azure-openai-completions")  # Azure chat wraps the Chat Completions builder
_R = "openai-responses"
_A = ("anthropic-messages", "anthropic-bedrock", "anthropic-vertex")  # one Messages builder
# Catalog-only protocols that share a compat type (reached only through catalog data).
_R3 = (_R, "azure-openai-responses", "openai-codex-responses")

SWITCH_PROTOCOLS: Final[dict[str, tuple[str, ...]]] = {
    "supports_store": _C,
    "supports_developer_role": (*_C, *_R3),
    "supports_reasoning_effort": _C,
    "supports_usage_in_streaming": _C,
    "max_tokens_field": _C,
    "requires_tool_result_name": _C,
    "requires_assistant_after_tool_result": _C,
    "requires_thinking_as_text": _C,
    "requires_reasoning_content_on_assistant_messages": _C,
    "thinking_format": _C,
    "chat_template_kwargs": _C,
    "supports_strict_mode": (*_C, *_R3, "bedrock-converse-stream"),
    "cache_control_format": _C,
    "supports_long_cache_retention": (*_C, *_R3, *_A),
    "supports_eager_tool_input_streaming": _A,
    "supports_cache_control_on_tools": _A,
    "supports_temperature": _A,
    "force_adaptive_thinking": _A,
    "allow_empty_signature": _A,
    "supports_strict_tools": _A,
}
"""Every configurable switch and the protocols whose compat type declares it."""

ENUM_SWITCHES: Final[dict[str, tuple[str, ...]]] = {
    "max_tokens_field": get_args(MaxTokensField),
    "thinking_format": THINKING_FORMATS,
    "cache_control_format": get_args(CacheControlFormat),
}
"""Switches whose value is one of a fixed set of strings."""

BOOL_SWITCHES: Final[frozenset[str]] = frozenset(
    k for k in SWITCH_PROTOCOLS if k not in ENUM_SWITCHES and k != "chat_template_kwargs"
)
"""Switches whose value is a boolean."""

WITHHELD_SWITCHES: Final[frozenset[str]] = frozenset(
    {
        "open_router_routing",
        "vercel_gateway_routing",
        "zai_tool_stream",
        "supports_openai_grammar_tools",
        "send_session_affinity_headers",
        "deferred_tools_mode",
        "session_affinity_format",
        "supports_tool_search",
        "supports_explicit_prompt_cache_mode",
        "supports_tool_references",
    }
)
"""Vendor switches the catalog sets for named providers; a profile may not write them."""

_TEMPLATE_VARS: Final = frozenset({"thinking.enabled", "thinking.effort"})


def switch_value_error(key: str, value: object) -> str | None:
    """Why `value` is not a valid value for switch `key` (None when it is valid)."""
    if key in BOOL_SWITCHES:
        return None if isinstance(value, bool) else "must be true or false"
    if key in ENUM_SWITCHES:
        allowed = ENUM_SWITCHES[key]
        if value in allowed:
            return None
        return "must be one of " + ", ".join(allowed)
    if not isinstance(value, dict):
        return "must be a mapping"
    for name, item in value.items():
        if isinstance(item, dict):
            var = item.get("$var")
            extra = set(item) - {"$var", "omit_when_off"}
            if var not in _TEMPLATE_VARS or extra:
                return f'entry "{name}" must be {{$var: thinking.enabled|thinking.effort}}'
            if not isinstance(item.get("omit_when_off", False), bool):
                return f'entry "{name}" omit_when_off must be true or false'
        elif not (item is None or isinstance(item, (str, int, float, bool))):
            return f'entry "{name}" must be a string, number, boolean or null'
    return None


class TemplateVar(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """A `chat_template_kwargs` entry resolved per request: ``{$var, omit_when_off?}``."""

    var: Literal["thinking.enabled", "thinking.effort"] = msgspec.field(name="$var")
    omit_when_off: bool = False


TemplateValue: TypeAlias = str | int | float | bool | TemplateVar | None
"""One `chat_template_kwargs` value: a literal sent as is, or a `TemplateVar`."""


class CompatSwitches(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, repr_omit_defaults=True
):
    """The compat switches one catalog entry, route or model wrote; UNSET where it wrote none.

    Absent and written stay distinct (spec §1.7): a protocol's effective switches are its
    defaults (or endpoint detection) with the written ones laid over them (`overlay`). The
    withheld vendor switches appear only in the installed catalog; no builder reads them.
    """

    supports_store: bool | UnsetType = UNSET
    supports_developer_role: bool | UnsetType = UNSET
    supports_reasoning_effort: bool | UnsetType = UNSET
    supports_usage_in_streaming: bool | UnsetType = UNSET
    max_tokens_field: MaxTokensField | UnsetType = UNSET
    requires_tool_result_name: bool | UnsetType = UNSET
    requires_assistant_after_tool_result: bool | UnsetType = UNSET
    requires_thinking_as_text: bool | UnsetType = UNSET
    requires_reasoning_content_on_assistant_messages: bool | UnsetType = UNSET
    thinking_format: ThinkingFormat | UnsetType = UNSET
    chat_template_kwargs: Mapping[str, TemplateValue] | UnsetType = UNSET
    supports_strict_mode: bool | UnsetType = UNSET
    cache_control_format: CacheControlFormat | UnsetType = UNSET
    supports_long_cache_retention: bool | UnsetType = UNSET
    supports_eager_tool_input_streaming: bool | UnsetType = UNSET
    supports_cache_control_on_tools: bool | UnsetType = UNSET
    supports_temperature: bool | UnsetType = UNSET
    force_adaptive_thinking: bool | UnsetType = UNSET
    allow_empty_signature: bool | UnsetType = UNSET
    supports_strict_tools: bool | UnsetType = UNSET
    # withheld: set by the catalog for named vendors, never by a profile
    open_router_routing: Mapping[str, object] | UnsetType = UNSET
    vercel_gateway_routing: Mapping[str, object] | UnsetType = UNSET
    zai_tool_stream: bool | UnsetType = UNSET
    supports_openai_grammar_tools: bool | UnsetType = UNSET
    send_session_affinity_headers: bool | UnsetType = UNSET
    deferred_tools_mode: str | UnsetType = UNSET
    session_affinity_format: str | UnsetType = UNSET
    supports_tool_search: bool | UnsetType = UNSET
    supports_explicit_prompt_cache_mode: bool | UnsetType = UNSET
    supports_tool_references: bool | UnsetType = UNSET


NO_SWITCHES: Final = CompatSwitches()
"""Nothing written."""

_S = TypeVar("_S", bound=msgspec.Struct)


def written(switches: CompatSwitches) -> tuple[str, ...]:
    """The names of the switches `switches` writes, in declaration order."""
    return tuple(n for n in switches.__struct_fields__ if getattr(switches, n) is not UNSET)


def overlay(base: _S, top: CompatSwitches, names: tuple[str, ...] | None = None) -> _S:
    """`base` with every field that `top` writes (of `names`, default all) replaced by it."""
    fields = base.__struct_fields__
    changes = {
        n: getattr(top, n)
        for n in (written(top) if names is None else names)
        if n in fields and getattr(top, n) is not UNSET
    }
    return msgspec.structs.replace(base, **changes) if changes else base
