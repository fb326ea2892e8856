"""`openai-completions` endpoint detection (spec §1.7): the switches pi-ai derives from a model's
provider id (the route key, so only catalog routes match by id) and its base URL.

An unrecognized endpoint answers like OpenAI (`COMPLETIONS_DEFAULTS`). Configured compat (model →
route → catalog entry) is applied over the detected values by the request builder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

import msgspec

from ..compat import MaxTokensField, TemplateValue, ThinkingFormat

__all__ = ["COMPLETIONS_DEFAULTS", "CompletionsCompat", "detect_completions_compat"]


class CompletionsCompat(msgspec.Struct, frozen=True, kw_only=True):
    """The effective switches of one Chat Completions model (what the request builder reads);
    the defaults are pi-ai's OpenAI-shaped answer for an unrecognized endpoint."""

    supports_store: bool = True
    supports_developer_role: bool = True
    supports_reasoning_effort: bool = True
    supports_usage_in_streaming: bool = True
    max_tokens_field: MaxTokensField = "max_completion_tokens"
    requires_tool_result_name: bool = False
    requires_assistant_after_tool_result: bool = False
    requires_thinking_as_text: bool = False
    requires_reasoning_content_on_assistant_messages: bool = False
    thinking_format: ThinkingFormat = "openai"
    supports_strict_mode: bool = True
    supports_long_cache_retention: bool = True
    chat_template_kwargs: Mapping[str, TemplateValue] | None = None


COMPLETIONS_DEFAULTS: Final = CompletionsCompat()
"""What an unrecognized Chat Completions endpoint gets (pi-ai's OpenAI-shaped defaults)."""


class _Vendor(NamedTuple):
    """One vendor of pi-ai's detection matrix and what recognizing it flips."""

    providers: frozenset[str]
    urls: tuple[str, ...]
    nonstandard: bool  # no `store`, no `developer` role
    max_tokens: bool  # `max_tokens` instead of `max_completion_tokens`
    no_effort: bool  # no `reasoning_effort`
    no_long_cache: bool  # no long prompt-cache retention
    thinking_format: ThinkingFormat | None


def _v(
    providers: tuple[str, ...], urls: tuple[str, ...], flags: str, fmt: ThinkingFormat | None
) -> _Vendor:
    return _Vendor(
        frozenset(providers), urls, "S" in flags, "M" in flags, "E" in flags, "C" in flags, fmt
    )


# Flags: S nonstandard, M max_tokens, E no reasoning_effort, C no long cache retention.
# Order matters only for the thinking format (first recognized vendor with one wins).
_VENDORS: Final[tuple[_Vendor, ...]] = (
    _v(("zai", "zai-coding-cn"), ("api.z.ai", "open.bigmodel.cn"), "SME", "zai"),
    _v(("together",), ("api.together.ai", "api.together.xyz"), "SMEC", "together"),
    _v(("ant-ling",), ("api.ant-ling.com",), "SMEC", "ant-ling"),
    _v(("openrouter",), ("openrouter.ai",), "", "openrouter"),
    _v(("moonshotai", "moonshotai-cn"), ("api.moonshot.",), "SME", None),
    _v(("cloudflare-workers-ai",), ("api.cloudflare.com",), "SC", None),
    _v(("cloudflare-ai-gateway",), ("gateway.ai.cloudflare.com",), "SMEC", None),
    _v(("nvidia",), ("integrate.api.nvidia.com",), "SMEC", None),
    _v(("cerebras",), ("cerebras.ai",), "S", None),
    _v(("xai",), ("api.x.ai",), "SE", None),
    _v((), ("chutes.ai",), "SM", None),
    _v(("opencode",), ("opencode.ai",), "S", None),
)
_OPENROUTER_DEVELOPER_PREFIXES: Final = ("anthropic/", "openai/")


def detect_completions_compat(provider: str, base_url: str, model_id: str) -> CompletionsCompat:
    """The detected switches of one Chat Completions model.

    DeepSeek (spec §1.7): the provider id or a `deepseek.com` URL selects the `deepseek` thinking
    format and reasoning content on assistant messages; only the URL also drops `store` and the
    `developer` role (the catalog entries set those explicitly).
    """
    d = COMPLETIONS_DEFAULTS
    url = base_url.lower()
    deepseek_url = "deepseek.com" in url
    matched = [v for v in _VENDORS if provider in v.providers or any(u in url for u in v.urls)]
    nonstandard = deepseek_url or any(v.nonstandard for v in matched)
    openrouter = any(v.thinking_format == "openrouter" for v in matched)
    developer = d.supports_developer_role
    if nonstandard or openrouter:
        developer = openrouter and model_id.startswith(_OPENROUTER_DEVELOPER_PREFIXES)
    deepseek = provider == "deepseek" or deepseek_url
    fmt = next((v.thinking_format for v in matched if v.thinking_format), None)
    return CompletionsCompat(
        supports_store=False if nonstandard else d.supports_store,
        supports_developer_role=developer,
        supports_reasoning_effort=not any(v.no_effort for v in matched),
        supports_usage_in_streaming=d.supports_usage_in_streaming,
        max_tokens_field="max_tokens" if any(v.max_tokens for v in matched) else d.max_tokens_field,
        requires_reasoning_content_on_assistant_messages=deepseek,
        thinking_format="deepseek" if deepseek else (fmt or d.thinking_format),
        supports_strict_mode=d.supports_strict_mode,
        supports_long_cache_retention=not any(v.no_long_cache for v in matched),
    )
