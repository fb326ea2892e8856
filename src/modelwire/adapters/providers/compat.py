"""The compat-switch vocabulary: which switch each protocol takes, its value type, and withheld keys."""

from __future__ import annotations

from typing import Final

__all__ = [
    "BOOL_SWITCHES",
    "ENUM_SWITCHES",
    "LEVELS",
    "MODALITIES",
    "PROTOCOLS",
    "SWITCH_PROTOCOLS",
    "THINKING_FORMATS",
    "WITHHELD_SWITCHES",
    "switch_value_error",
]

PROTOCOLS: Final[tuple[str, ...]] = ("openai-completions", "openai-responses", "anthropic-messages")
"""The protocols a profile can describe completely with a key, an endpoint and headers."""

LEVELS: Final[tuple[str, ...]] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
"""Reasoning levels in escalation order."""

MODALITIES: Final[frozenset[str]] = frozenset({"text", "image"})
"""Input modalities a model may accept."""

THINKING_FORMATS: Final[tuple[str, ...]] = (
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
)
"""The Chat Completions reasoning dialects."""

_C = "openai-completions"
_R = "openai-responses"
_A = "anthropic-messages"
# Catalog-only protocols that share a compat type (reached only through catalog data).
_R3 = (_R, "azure-openai-responses", "openai-codex-responses")

SWITCH_PROTOCOLS: Final[dict[str, tuple[str, ...]]] = {
    "supports_store": (_C,),
    "supports_developer_role": (_C, *_R3),
    "supports_reasoning_effort": (_C,),
    "supports_usage_in_streaming": (_C,),
    "max_tokens_field": (_C,),
    "requires_tool_result_name": (_C,),
    "requires_assistant_after_tool_result": (_C,),
    "requires_thinking_as_text": (_C,),
    "requires_reasoning_content_on_assistant_messages": (_C,),
    "thinking_format": (_C,),
    "chat_template_kwargs": (_C,),
    "supports_strict_mode": (_C, *_R3, "bedrock-converse-stream"),
    "cache_control_format": (_C,),
    "supports_long_cache_retention": (_C, *_R3, _A),
    "supports_eager_tool_input_streaming": (_A,),
    "supports_cache_control_on_tools": (_A,),
    "supports_temperature": (_A,),
    "force_adaptive_thinking": (_A,),
    "allow_empty_signature": (_A,),
    "supports_strict_tools": (_A,),
}
"""Every configurable switch and the protocols whose compat type declares it."""

ENUM_SWITCHES: Final[dict[str, tuple[str, ...]]] = {
    "max_tokens_field": ("max_completion_tokens", "max_tokens"),
    "thinking_format": THINKING_FORMATS,
    "cache_control_format": ("anthropic",),
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
