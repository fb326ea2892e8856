"""`openai-completions` request builder: `POST {base_url}/chat/completions` (spec §4.3, §1.6)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..context import NAssistant, NContext, NImage, NText, NThinking, NToolCall, NToolResult, NUser
from ..materialize import ModelDescriptor
from .detect import detect_completions_compat
from .request import BuiltRequest, RequestOptions, join_url, safe_tool_id
from .transform import output_cap, prepare_messages

__all__ = ["build_completions_request", "completions_compat"]


def completions_compat(model: ModelDescriptor) -> dict[str, Any]:
    """Effective switches: the model's configured compat over endpoint detection."""
    compat = detect_completions_compat(model.provider, model.base_url, model.id)
    compat.update(model.compat)
    return compat


def _mapped(model: ModelDescriptor, level: str) -> str | None:
    m = model.thinking_level_map or {}
    value = m.get(level, level)
    return value if value is not None else None


def _reasoning_fields(
    model: ModelDescriptor, compat: dict[str, Any], effort: str | None, body: dict[str, Any]
) -> None:
    if not model.reasoning:
        return
    level_map = model.thinking_level_map or {}
    off = effort is None or effort == "off"
    off_value = level_map.get("off") if "off" in level_map else ...  # ... = absent key
    fmt = compat["thinking_format"]
    wire = None if off else (_mapped(model, effort or "") or effort)
    supports_effort = compat["supports_reasoning_effort"]
    if fmt == "openai":
        if not off and supports_effort:
            body["reasoning_effort"] = wire
        elif off and isinstance(off_value, str):
            body["reasoning_effort"] = off_value
    elif fmt == "deepseek":
        if not off:
            body["thinking"] = {"type": "enabled"}
            if supports_effort:
                body["reasoning_effort"] = wire
        elif off_value is not None:
            body["thinking"] = {"type": "disabled"}
    elif fmt == "openrouter":
        if not off:
            body["reasoning"] = {"effort": wire}
        elif off_value is not None:
            body["reasoning"] = {"effort": off_value if isinstance(off_value, str) else "none"}
    elif fmt == "zai":
        if not off:
            body["thinking"] = {"type": "enabled", "clear_thinking": False}
            if supports_effort:
                body["reasoning_effort"] = wire
        else:
            body["thinking"] = {"type": "disabled"}
    elif fmt == "qwen":
        body["enable_thinking"] = not off
    elif fmt == "qwen-chat-template":
        body["chat_template_kwargs"] = {"enable_thinking": not off, "preserve_thinking": not off}
    elif fmt == "chat-template":
        kwargs = _template_kwargs(compat.get("chat_template_kwargs") or {}, off, wire, off_value)
        if kwargs:
            body["chat_template_kwargs"] = kwargs
    elif fmt == "together":
        body["reasoning"] = {"enabled": not off}
        if not off and supports_effort:
            body["reasoning_effort"] = wire
    elif fmt == "string-thinking":
        if not off:
            body["thinking"] = wire
        elif off_value is not None:
            body["thinking"] = off_value if isinstance(off_value, str) else "none"
    elif fmt == "ant-ling" and not off:
        mapped = level_map.get(effort or "")
        if isinstance(mapped, str):
            body["reasoning"] = {"effort": mapped}


def _template_kwargs(
    spec: dict[str, Any], off: bool, wire: str | None, off_value: object
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if not isinstance(value, dict):
            out[key] = value
            continue
        if off and value.get("omit_when_off"):
            continue
        if value.get("$var") == "thinking.enabled":
            out[key] = not off
        elif not off:
            out[key] = wire
        elif isinstance(off_value, str):
            out[key] = off_value
    return out


def _parts(content: tuple[NText | NImage, ...]) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": p.text}
        if isinstance(p, NText)
        else {"type": "image_url", "image_url": {"url": f"data:{p.mime};base64,{p.data}"}}
        for p in content
    ]


def _assistant(
    message: NAssistant, model: ModelDescriptor, compat: dict[str, Any]
) -> dict[str, Any] | None:
    texts = [p.text for p in message.content if isinstance(p, NText) and p.text.strip()]
    thinking = [p for p in message.content if isinstance(p, NThinking) and p.text.strip()]
    calls = [p for p in message.content if isinstance(p, NToolCall)]
    out: dict[str, Any] = {"role": "assistant"}
    content: Any = "".join(texts) if texts else None
    if content is None and compat["requires_assistant_after_tool_result"]:
        content = ""
    reasoning_set = False
    if thinking:
        if compat["requires_thinking_as_text"]:
            joined = "\n\n".join(t.text for t in thinking)
            content = [
                {"type": "text", "text": joined},
                *([{"type": "text", "text": content}] if content else []),
            ]
        elif thinking[0].signature:
            out[thinking[0].signature] = "\n".join(t.text for t in thinking)
            reasoning_set = True
    out["content"] = content
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": msgspec.json.encode(c.arguments).decode(),
                },
            }
            for c in calls
        ]
        details = [msgspec.json.decode(c.thought_signature) for c in calls if c.thought_signature]
        if details:
            out["reasoning_details"] = details
    if (
        compat["requires_reasoning_content_on_assistant_messages"]
        and model.reasoning
        and not reasoning_set
    ):
        out["reasoning_content"] = ""
    if content in (None, "") and not calls and not reasoning_set:
        return None
    return out


def build_completions_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The Chat Completions request for `model` (no credentials: the adapter adds auth)."""
    compat = completions_compat(model)
    limit = 40
    prepared = prepare_messages(ctx, model, lambda raw: safe_tool_id(raw, limit))
    messages: list[dict[str, Any]] = []
    if ctx.system is not None:
        role = "developer" if model.reasoning and compat["supports_developer_role"] else "system"
        messages.append({"role": role, "content": ctx.system})
    pending_images: list[dict[str, Any]] = []
    last_was_tool = False
    for message in prepared:
        if isinstance(message, NToolResult):
            texts = [p.text for p in message.content if isinstance(p, NText)]
            images = [p for p in message.content if isinstance(p, NImage)]
            text = (
                "\n".join(texts)
                if texts
                else ("(see attached image)" if images else "(no tool output)")
            )
            entry: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": message.tool_call_id,
                "content": text,
            }
            if compat["requires_tool_result_name"]:
                entry["name"] = message.tool_name
            messages.append(entry)
            pending_images.extend(_parts(tuple(images)))
            last_was_tool = True
            continue
        if pending_images:
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Attached image(s) from tool result:"},
                        *pending_images,
                    ],
                }
            )
            pending_images = []
        if isinstance(message, NUser):
            if last_was_tool and compat["requires_assistant_after_tool_result"]:
                messages.append(
                    {"role": "assistant", "content": "I have processed the tool results."}
                )
            if isinstance(message.content, str):
                messages.append({"role": "user", "content": message.content})
            elif message.content:
                messages.append({"role": "user", "content": _parts(message.content)})
        else:
            built = _assistant(message, model, compat)
            if built is not None:
                messages.append(built)
        last_was_tool = False
    if pending_images:
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Attached image(s) from tool result:"},
                    *pending_images,
                ],
            }
        )
    body: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    if compat["supports_usage_in_streaming"]:
        body["stream_options"] = {"include_usage": True}
    if compat["supports_store"]:
        body["store"] = False
    body[compat["max_tokens_field"]] = output_cap(ctx, model, options.max_tokens)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if ctx.tools:
        tools = []
        for tool in ctx.tools:
            fn: dict[str, Any] = dict(tool)
            if compat["supports_strict_mode"]:
                fn["strict"] = False
            tools.append({"type": "function", "function": fn})
        body["tools"] = tools
    elif any(
        isinstance(m, NToolResult)
        or (isinstance(m, NAssistant) and any(isinstance(p, NToolCall) for p in m.content))
        for m in prepared
    ):
        body["tools"] = []
    _reasoning_fields(model, compat, options.effort, body)
    retention = options.cache_retention or "short"
    if options.session_id and (
        ("api.openai.com" in model.base_url and retention != "none")
        or (retention == "long" and compat["supports_long_cache_retention"])
    ):
        body["prompt_cache_key"] = options.session_id[:64]
        if retention == "long":
            body["prompt_cache_retention"] = "24h"
    return BuiltRequest(
        url=join_url(model.base_url, "/chat/completions"),
        headers={"Accept": "text/event-stream"},
        body=msgspec.json.encode(body),
    )
