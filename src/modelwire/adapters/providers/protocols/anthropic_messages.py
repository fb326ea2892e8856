"""`anthropic-messages` request builder: `POST {base_url}/v1/messages` (spec §4.5, §1.6)."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..context import NAssistant, NContext, NImage, NText, NThinking, NToolCall, NToolResult, NUser
from ..materialize import ModelDescriptor
from .request import BuiltRequest, RequestOptions, join_url, safe_tool_id
from .transform import output_cap, prepare_messages

__all__ = ["anthropic_compat", "build_anthropic_request"]

_DEFAULTS: Final[dict[str, Any]] = {
    "supports_eager_tool_input_streaming": True,
    "supports_long_cache_retention": True,
    "supports_cache_control_on_tools": True,
    "supports_temperature": True,
    "allow_empty_signature": False,
    "supports_strict_tools": False,
    "force_adaptive_thinking": False,
}
_BUDGETS: Final = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
_ADAPTIVE: Final = {"minimal": "low", "low": "low", "medium": "medium"}


def anthropic_compat(model: ModelDescriptor) -> dict[str, Any]:
    """Effective Anthropic switches: the model's compat over the defaults."""
    return {**_DEFAULTS, **model.compat}


def _parts(content: tuple[NText | NImage, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in content:
        if isinstance(p, NText):
            if p.text.strip():
                out.append({"type": "text", "text": p.text})
        else:
            out.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": p.mime, "data": p.data},
                }
            )
    return out


def _assistant(message: NAssistant, compat: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, NText):
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, NThinking):
            if part.redacted:
                blocks.append({"type": "redacted_thinking", "data": part.signature or ""})
            elif part.signature:
                blocks.append(
                    {"type": "thinking", "thinking": part.text, "signature": part.signature}
                )
            elif part.text.strip():
                if compat["allow_empty_signature"]:
                    blocks.append({"type": "thinking", "thinking": part.text, "signature": ""})
                else:
                    blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, NToolCall):
            blocks.append(
                {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
            )
    return blocks


def _tool_result(message: NToolResult) -> dict[str, Any]:
    texts = [p.text for p in message.content if isinstance(p, NText)]
    images = [p for p in message.content if isinstance(p, NImage)]
    content: Any
    if images:
        content = _parts(message.content)
        if not texts:
            content.insert(0, {"type": "text", "text": "(see attached image)"})
    else:
        content = "\n".join(texts)
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": content,
        "is_error": message.is_error,
    }


def _thinking(
    model: ModelDescriptor, compat: dict[str, Any], options: RequestOptions, body: dict[str, Any]
) -> bool:
    if not model.reasoning:
        return False
    level_map = model.thinking_level_map or {}
    effort = options.effort
    if effort is None or effort == "off":
        if not ("off" in level_map and level_map["off"] is None):
            body["thinking"] = {"type": "disabled"}
        return False
    if compat["force_adaptive_thinking"]:
        mapped = level_map.get(effort)
        body["thinking"] = {"type": "adaptive", "display": "summarized"}
        body["output_config"] = {
            "effort": mapped if isinstance(mapped, str) else _ADAPTIVE.get(effort, "high")
        }
        return True
    level = effort if effort in _BUDGETS else "high"
    budget = (options.thinking_budgets or {}).get(level, _BUDGETS[level])
    max_tokens = min(body["max_tokens"] + budget, model.max_tokens)
    body["max_tokens"] = max_tokens
    budget = min(budget, max(0, max_tokens - 1024)) or 1024
    body["thinking"] = {"type": "enabled", "budget_tokens": budget, "display": "summarized"}
    return True


def build_anthropic_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The Messages API request for `model` (no credentials: the adapter adds `x-api-key`)."""
    compat = anthropic_compat(model)
    prepared = prepare_messages(ctx, model, lambda raw: safe_tool_id(raw, 64))
    messages: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for message in prepared:
        if isinstance(message, NToolResult):
            results.append(_tool_result(message))
            continue
        if results:
            messages.append({"role": "user", "content": results})
            results = []
        if isinstance(message, NUser):
            if isinstance(message.content, str):
                if message.content.strip():
                    messages.append({"role": "user", "content": message.content})
            else:
                parts = _parts(message.content)
                if parts:
                    messages.append({"role": "user", "content": parts})
        else:
            blocks = _assistant(message, compat)
            if blocks:
                messages.append({"role": "assistant", "content": blocks})
    if results:
        messages.append({"role": "user", "content": results})
    retention = options.cache_retention or "short"
    cache: dict[str, str] | None = None
    if retention != "none":
        cache = {"type": "ephemeral"}
        if retention == "long" and compat["supports_long_cache_retention"]:
            cache["ttl"] = "1h"
    body: dict[str, Any] = {
        "model": model.id,
        "messages": messages,
        "max_tokens": output_cap(ctx, model, options.max_tokens),
        "stream": True,
    }
    if ctx.system is not None:
        system: dict[str, Any] = {"type": "text", "text": ctx.system}
        if cache:
            system["cache_control"] = cache
        body["system"] = [system]
    if ctx.tools:
        tools = []
        for tool in ctx.tools:
            schema = tool.get("parameters") or {}
            entry: dict[str, Any] = {
                "name": tool["name"],
                "description": tool.get("description", ""),
            }
            if compat["supports_eager_tool_input_streaming"]:
                entry["eager_input_streaming"] = True
            entry["input_schema"] = {
                "type": "object",
                "properties": schema.get("properties", {}),
                "required": schema.get("required", []),
            }
            tools.append(entry)
        if cache and compat["supports_cache_control_on_tools"]:
            tools[-1]["cache_control"] = cache
        body["tools"] = tools
    thinking = _thinking(model, compat, options, body)
    if options.temperature is not None and not thinking and compat["supports_temperature"]:
        body["temperature"] = options.temperature
    if cache:
        _cache_last_user(messages, cache)
    headers = {"Accept": "application/json", "anthropic-version": "2023-06-01"}
    beta = []
    if not compat["force_adaptive_thinking"]:
        beta.append("interleaved-thinking-2025-05-14")
    if ctx.tools and not compat["supports_eager_tool_input_streaming"]:
        beta.append("fine-grained-tool-streaming-2025-05-14")
    if beta:
        headers["anthropic-beta"] = ",".join(beta)
    return BuiltRequest(
        url=join_url(model.base_url, "/v1/messages"),
        headers=headers,
        body=msgspec.json.encode(body),
    )


def _cache_last_user(messages: list[dict[str, Any]], cache: dict[str, str]) -> None:
    for message in reversed(messages):
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            content = message["content"] = [{"type": "text", "text": content}]
        if content:
            content[-1] = {**content[-1], "cache_control": cache}
        return
