"""`openai-responses` request builder: `POST {base_url}/responses` (spec §4.4, §1.6).

The body is a tree of msgspec structs (`responses_body`): field order is key order and UNSET
fields are omitted.
"""

from __future__ import annotations

import hashlib
from typing import Final

import msgspec
from msgspec import UNSET, UnsetType

from ....errors import ErrorCode, LlmError
from ..compat import overlay
from ..context import (
    NAssistant,
    NContext,
    NDocument,
    NImage,
    NPart,
    NText,
    NThinking,
    NToolCall,
    NToolResult,
    NUser,
)
from ..materialize import ModelDescriptor
from .request import BuiltRequest, Reasoning, RequestOptions, finish_body, join_url, safe_tool_id
from .responses_body import (
    INCLUDE_ENCRYPTED,
    ApplyPatchCall,
    ApplyPatchOutput,
    ApplyPatchSpec,
    Body,
    CustomToolCall,
    CustomToolOutput,
    CustomToolSpec,
    FunctionCall,
    FunctionOutput,
    GrammarInput,
    InputFile,
    InputImage,
    InputPart,
    InputText,
    Item,
    JsonSchemaFormat,
    LocalShellCall,
    LocalShellOutput,
    LocalShellSpec,
    OutputMessage,
    OutputText,
    ProviderToolSpec,
    ResponsesCompat,
    Role,
    TextConfig,
    TextInput,
    TextSignature,
    ToolChoiceCustom,
    ToolChoiceFunction,
    ToolSpec,
)
from .transform import kept_parts, output_cap, prepare_messages

__all__ = ["build_responses_request", "responses_compat"]

_TEXT_SIGNATURE = msgspec.json.Decoder(TextSignature)
_DEFAULTS = ResponsesCompat()


def responses_compat(model: ModelDescriptor) -> ResponsesCompat:
    """Effective switches: the model's configured compat over the Responses defaults."""
    return overlay(_DEFAULTS, model.compat)


def _user_part(p: NPart) -> InputPart:
    """One user part (audio never gets here: `documents.check_media` refused it)."""
    if isinstance(p, NText):
        return InputText(p.text)
    if isinstance(p, NImage):
        return InputImage(image_url=f"data:{p.mime};base64,{p.data}")
    if isinstance(p, NDocument):
        if p.url is not None:
            return InputFile(file_url=p.url)
        name = p.name or "document.pdf"
        return InputFile(filename=name, file_data=f"data:{p.mime};base64,{p.data or ''}")
    raise LlmError("openai-responses takes no audio input", ErrorCode.UNSUPPORTED_CONTENT)


def _user_parts(content: tuple[NPart, ...]) -> list[InputPart]:
    return [_user_part(p) for p in content]


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


def _client_call(part: NToolCall) -> Item:
    """A custom, apply-patch or local-shell call: its item as it came (same model), else built
    from the call."""
    if part.item is not None:
        try:
            msgspec.json.decode(part.item)
        except msgspec.DecodeError:
            pass  # a damaged log: rebuilt below
        else:
            return msgspec.Raw(part.item.encode())
    call_id, _, item_id = part.id.partition("|")
    if part.call_type == "custom":
        return CustomToolCall(call_id=call_id, name=part.name, input=part.input or "")
    if part.call_type == "apply_patch":
        return ApplyPatchCall(call_id=call_id, operation=part.arguments)
    return LocalShellCall(id=item_id or call_id, call_id=call_id, action=part.arguments)


def _assistant(message: NAssistant, n: int, model: ModelDescriptor) -> list[Item]:
    items: list[Item] = []
    same_provider = message.provider == model.provider and message.api == model.api
    other_model = same_provider and message.model != model.id
    kept = kept_parts(message) if message.opaque else {}
    for k, part in enumerate(message.content):
        if kept:
            items.extend(kept.pop(k, ()))
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
        elif isinstance(part, NToolCall) and part.call_type in _CLIENT_CALLS:
            items.append(_client_call(part))
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
    for rest in kept.values():  # the items after the last block
        items.extend(rest)
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


def _tool_output(message: NToolResult, model: ModelDescriptor, call_type: str | None) -> Item:
    """The output item answering a call of `call_type` (None: a function call)."""
    call_id = message.tool_call_id.partition("|")[0]
    texts = [p.text for p in message.content if isinstance(p, NText)]
    images = [p for p in message.content if isinstance(p, NImage)]
    text = "\n".join(texts) if texts else ("(see attached image)" if images else "(no tool output)")
    if call_type == "apply_patch":
        status = "failed" if message.is_error else "completed"
        return ApplyPatchOutput(call_id=call_id, status=status, output=text)
    if call_type == "local_shell":
        return LocalShellOutput(id=call_id, output=text)
    if images and "image" in model.input:
        parts = _user_parts(message.content)
        return CustomToolOutput(call_id, parts) if call_type else FunctionOutput(call_id, parts)
    return CustomToolOutput(call_id, text) if call_type else FunctionOutput(call_id, text)


_CLIENT_CALLS: Final = frozenset({"custom", "apply_patch", "local_shell"})


def _tools(
    ctx: NContext, strict: bool | UnsetType
) -> list[ToolSpec | CustomToolSpec | ProviderToolSpec]:
    """The request's tools: functions, free-text (custom) tools, provider client tools."""
    out: list[ToolSpec | CustomToolSpec | ProviderToolSpec] = []
    for t in ctx.tools:
        if t.free_text is not None:
            grammar = t.free_text.grammar
            fmt: TextInput | GrammarInput = (
                TextInput()
                if grammar is None
                else GrammarInput(syntax=t.free_text.syntax, definition=grammar)
            )
            out.append(CustomToolSpec(name=t.name, description=t.description or UNSET, format=fmt))
        elif t.provider_tool == "apply_patch":
            out.append(ApplyPatchSpec())
        elif t.provider_tool == "local_shell":
            out.append(LocalShellSpec())
        else:
            out.append(ToolSpec(t.name, t.description, t.parameters, strict))
    return out


def _choice(ctx: NContext, name: str) -> ToolChoiceFunction | ToolChoiceCustom | ProviderToolSpec:
    """The forced-tool choice naming `name` in the shape of its kind."""
    for t in ctx.tools:
        if t.name == name and t.free_text is not None:
            return ToolChoiceCustom(name)
        if t.name == name and t.provider_tool == "apply_patch":
            return ApplyPatchSpec()
        if t.name == name and t.provider_tool == "local_shell":
            return LocalShellSpec()
    return ToolChoiceFunction(name)


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
    call_types: dict[str, str] = {}  # the calls that are no plain function, by id
    for n, message in enumerate(prepared):
        if isinstance(message, NUser):
            content = message.content
            parts = (NText(content),) if isinstance(content, str) else content
            if parts:
                items.append(Role("user", _user_parts(parts)))
        elif isinstance(message, NAssistant):
            items.extend(_assistant(message, n, model))
            for part in message.content:
                if isinstance(part, NToolCall) and part.call_type in _CLIENT_CALLS:
                    call_types[part.id] = part.call_type
        else:
            items.append(_tool_output(message, model, call_types.get(message.tool_call_id)))
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
        body.tools = _tools(ctx, False if compat.supports_strict_mode else UNSET)
    _effort(model, options.effort, body)
    choice = options.tool_choice
    if choice is not None:
        body.tool_choice = choice if isinstance(choice, str) else _choice(ctx, choice.name)
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
