"""`openai-responses` request builder: `POST {base_url}/responses` (spec §4.4, §1.6)."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from ..context import NAssistant, NContext, NImage, NText, NThinking, NToolCall, NToolResult, NUser
from ..materialize import ModelDescriptor
from .request import BuiltRequest, RequestOptions, join_url, safe_tool_id
from .transform import output_cap, prepare_messages

__all__ = ["build_responses_request"]


def _user_parts(content: tuple[NText | NImage, ...]) -> list[dict[str, Any]]:
    return [
        {"type": "input_text", "text": p.text}
        if isinstance(p, NText)
        else {
            "type": "input_image",
            "detail": "auto",
            "image_url": f"data:{p.mime};base64,{p.data}",
        }
        for p in content
    ]


def _normalize(raw: str) -> str:
    call, _, item = raw.partition("|")
    call_id = safe_tool_id(call, 64)
    item_id = safe_tool_id(item, 64) if item else ""
    return f"{call_id}|{item_id}" if item_id.startswith("fc") else call_id


def _assistant(message: NAssistant, n: int, model: ModelDescriptor) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    same_provider = message.provider == model.provider and message.api == model.api
    other_model = same_provider and message.model != model.id
    for k, part in enumerate(message.content):
        if isinstance(part, NThinking):
            if part.signature:
                try:
                    items.append(msgspec.json.decode(part.signature))
                except msgspec.DecodeError:
                    continue
        elif isinstance(part, NText):
            msg_id: str | None = None
            phase = None
            if part.signature:
                try:
                    sig = msgspec.json.decode(part.signature)
                    msg_id, phase = sig.get("id"), sig.get("phase")
                except (msgspec.DecodeError, AttributeError):
                    msg_id = None
            if not msg_id:
                msg_id = f"msg_pi_{n}" + (f"_{k}" if k else "")
            elif len(msg_id) > 64:
                msg_id = "msg_" + hashlib.sha256(msg_id.encode()).hexdigest()[:32]
            item: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "id": msg_id,
                "content": [{"type": "output_text", "text": part.text, "annotations": []}],
            }
            if phase is not None:
                item["phase"] = phase
            items.append(item)
        elif isinstance(part, NToolCall):
            call_id, _, item_id = part.id.partition("|")
            call: dict[str, Any] = {"type": "function_call", "call_id": call_id}
            if item_id.startswith("fc_") and not other_model:
                call["id"] = item_id
            call["name"] = part.name
            call["arguments"] = msgspec.json.encode(part.arguments).decode()
            items.append(call)
    return items


def _effort(model: ModelDescriptor, effort: str | None, body: dict[str, Any]) -> None:
    if not model.reasoning:
        return
    level_map = model.thinking_level_map or {}
    if effort is None or effort == "off":
        if "off" in level_map and level_map["off"] is None:
            return
        off = level_map.get("off")
        body["reasoning"] = {"effort": off if isinstance(off, str) else "none"}
        return
    wire = level_map.get(effort) or effort
    body["reasoning"] = {"effort": wire, "summary": "auto"}
    body["include"] = ["reasoning.encrypted_content"]


def build_responses_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The Responses API request for `model` (no credentials: the adapter adds auth)."""
    compat = model.compat
    prepared = prepare_messages(ctx, model, _normalize)
    items: list[dict[str, Any]] = []
    if ctx.system is not None:
        developer = model.reasoning and compat.get("supports_developer_role", True) is not False
        items.append({"role": "developer" if developer else "system", "content": ctx.system})
    for n, message in enumerate(prepared):
        if isinstance(message, NUser):
            content = message.content
            parts = (NText(content),) if isinstance(content, str) else content
            if parts:
                items.append({"role": "user", "content": _user_parts(parts)})
        elif isinstance(message, NAssistant):
            items.extend(_assistant(message, n, model))
        else:
            items.append(_tool_output(message, model))
    body: dict[str, Any] = {"model": model.id, "input": items, "stream": True, "store": False}
    retention = options.cache_retention or "short"
    if options.session_id and retention != "none":
        body["prompt_cache_key"] = options.session_id[:64]
        if retention == "long" and compat.get("supports_long_cache_retention", True):
            body["prompt_cache_retention"] = "24h"
    body["max_output_tokens"] = max(output_cap(ctx, model, options.max_tokens), 16)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if ctx.tools:
        strict = compat.get("supports_strict_mode", False)
        body["tools"] = [
            {"type": "function", **dict(t), **({"strict": False} if strict else {})}
            for t in ctx.tools
        ]
    _effort(model, options.effort, body)
    return BuiltRequest(
        url=join_url(model.base_url, "/responses"),
        headers={"Accept": "text/event-stream"},
        body=msgspec.json.encode(body),
    )


def _tool_output(message: NToolResult, model: ModelDescriptor) -> dict[str, Any]:
    call_id = message.tool_call_id.partition("|")[0]
    texts = [p.text for p in message.content if isinstance(p, NText)]
    images = [p for p in message.content if isinstance(p, NImage)]
    output: Any
    if images and "image" in model.input:
        output = _user_parts(message.content)
    else:
        output = (
            "\n".join(texts)
            if texts
            else ("(see attached image)" if images else "(no tool output)")
        )
    return {"type": "function_call_output", "call_id": call_id, "output": output}
