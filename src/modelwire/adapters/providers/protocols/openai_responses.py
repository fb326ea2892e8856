"""`openai-responses` request builder: `POST {base_url}/responses` (spec §4.4, §1.6).

The body is a tree of msgspec structs (`responses_body`): field order is key order and UNSET
fields are omitted.
"""

from __future__ import annotations

import hashlib

import msgspec
from msgspec import UNSET

from ..compat import overlay
from ..context import NAssistant, NContext, NImage, NText, NThinking, NToolCall, NToolResult, NUser
from ..materialize import ModelDescriptor
from .request import BuiltRequest, Reasoning, RequestOptions, finish_body, join_url, safe_tool_id
from .responses_body import (
    INCLUDE_ENCRYPTED,
    Body,
    FunctionCall,
    FunctionOutput,
    InputImage,
    InputPart,
    InputText,
    Item,
    JsonSchemaFormat,
    OutputMessage,
    OutputText,
    ResponsesCompat,
    Role,
    TextConfig,
    TextSignature,
    ToolChoiceFunction,
    ToolSpec,
)
from .transform import output_cap, prepare_messages

__all__ = ["build_responses_request", "responses_compat"]

_TEXT_SIGNATURE = msgspec.json.Decoder(TextSignature)
_DEFAULTS = ResponsesCompat()


def responses_compat(model: ModelDescriptor) -> ResponsesCompat:
    """Effective switches: the model's configured compat over the Responses defaults."""
    return overlay(_DEFAULTS, model.compat)


def _user_parts(content: tuple[NText | NImage, ...]) -> list[InputPart]:
    return [
        InputText(p.text)
        if isinstance(p, NText)
        else InputImage(image_url=f"data:{p.mime};base64,{p.data}")
        for p in content
    ]


def _normalize(raw: str) -> str:
    call, _, item = raw.partition("|")
    call_id = safe_tool_id(call, 64)
    item_id = safe_tool_id(item, 64) if item else ""
    return f"{call_id}|{item_id}" if item_id.startswith("fc") else call_id


def _message_item(part: NText, n: int, k: int) -> OutputMessage:
    msg_id: str | None = None
    phase: object = None
    if part.signature:
        try:
            sig = _TEXT_SIGNATURE.decode(part.signature)
        except msgspec.DecodeError:  # not an object of that shape
            pass
        else:
            msg_id, phase = sig.id, sig.phase
    if not msg_id:
        msg_id = f"msg_pi_{n}" + (f"_{k}" if k else "")
    elif len(msg_id) > 64:
        msg_id = "msg_" + hashlib.sha256(msg_id.encode()).hexdigest()[:32]
    return OutputMessage(
        id=msg_id, content=[OutputText(part.text)], phase=UNSET if phase is None else phase
    )


def _assistant(message: NAssistant, n: int, model: ModelDescriptor) -> list[Item]:
    items: list[Item] = []
    same_provider = message.provider == model.provider and message.api == model.api
    other_model = same_provider and message.model != model.id
    for k, part in enumerate(message.content):
        if isinstance(part, NThinking):
            if part.signature:  # the stored reasoning item, re-sent as it was decoded
                try:
                    items.append(
                        msgspec.Raw(msgspec.json.encode(msgspec.json.decode(part.signature)))
                    )
                except msgspec.DecodeError:
                    continue
        elif isinstance(part, NText):
            items.append(_message_item(part, n, k))
        elif isinstance(part, NToolCall):
            call_id, _, item_id = part.id.partition("|")
            items.append(
                FunctionCall(
                    call_id=call_id,
                    id=item_id if item_id.startswith("fc_") and not other_model else UNSET,
                    name=part.name,
                    arguments=msgspec.json.encode(part.arguments).decode(),
                )
            )
    return items


def _effort(model: ModelDescriptor, effort: str | None, body: Body) -> None:
    if not model.reasoning:
        return
    level_map = model.thinking_level_map or {}
    if effort is None or effort == "off":
        if "off" in level_map and level_map["off"] is None:
            return
        off = level_map.get("off")
        body.reasoning = Reasoning(effort=off if isinstance(off, str) else "none")
        return
    body.reasoning = Reasoning(effort=level_map.get(effort) or effort, summary="auto")
    body.include = INCLUDE_ENCRYPTED


def _tool_output(message: NToolResult, model: ModelDescriptor) -> FunctionOutput:
    call_id = message.tool_call_id.partition("|")[0]
    texts = [p.text for p in message.content if isinstance(p, NText)]
    images = [p for p in message.content if isinstance(p, NImage)]
    if images and "image" in model.input:
        return FunctionOutput(call_id, _user_parts(message.content))
    text = "\n".join(texts) if texts else ("(see attached image)" if images else "(no tool output)")
    return FunctionOutput(call_id, text)


def build_responses_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The Responses API request for `model` (no credentials: the adapter adds auth)."""
    compat = responses_compat(model)
    prepared = prepare_messages(ctx, model, _normalize)
    items: list[Item] = []
    if ctx.system is not None:
        developer = model.reasoning and compat.supports_developer_role
        items.append(Role("developer" if developer else "system", ctx.system))
    for n, message in enumerate(prepared):
        if isinstance(message, NUser):
            content = message.content
            parts = (NText(content),) if isinstance(content, str) else content
            if parts:
                items.append(Role("user", _user_parts(parts)))
        elif isinstance(message, NAssistant):
            items.extend(_assistant(message, n, model))
        else:
            items.append(_tool_output(message, model))
    body = Body(model=model.id, input=items)
    retention = options.cache_retention or "short"
    if options.session_id and retention != "none":
        body.prompt_cache_key = options.session_id[:64]
        if retention == "long" and compat.supports_long_cache_retention:
            body.prompt_cache_retention = "24h"
    body.max_output_tokens = max(output_cap(ctx, model, options.max_tokens), 16)
    if options.temperature is not None:
        body.temperature = options.temperature
    if ctx.tools:
        strict = False if compat.supports_strict_mode else UNSET
        body.tools = [ToolSpec(t.name, t.description, t.parameters, strict) for t in ctx.tools]
    _effort(model, options.effort, body)
    choice = options.tool_choice
    if choice is not None:
        body.tool_choice = choice if isinstance(choice, str) else ToolChoiceFunction(choice.name)
    if options.parallel_tool_calls is not None:
        body.parallel_tool_calls = options.parallel_tool_calls
    out = options.output
    if out is not None:
        about = UNSET if out.description is None else out.description
        body.text = TextConfig(
            JsonSchemaFormat(name=out.name, description=about, schema=out.schema, strict=out.strict)
        )
    return BuiltRequest(
        url=join_url(model.base_url, "/responses"),
        headers={"Accept": "text/event-stream"},
        body=finish_body(body, options, model.provider),
    )
