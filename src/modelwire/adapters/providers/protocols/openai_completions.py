"""`openai-completions` request builder: `POST {base_url}/chat/completions` (spec §4.3, §1.6).

The body is a tree of msgspec structs (`completions_body`): field order is key order and UNSET
fields are omitted, so each dialect's optional fields appear exactly where, and only when, the
dialect sends them.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from msgspec import UNSET, UnsetType

from ....never import assert_never
from ....vocab import ToolChoice
from ..compat import TemplateValue, TemplateVar, overlay
from ..context import (
    NAssistant,
    NAudio,
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
from .completions_body import (
    ATTACHED_IMAGES,
    Assistant,
    AudioPart,
    Body,
    CustomCall,
    CustomInput,
    CustomSpec,
    CustomToolSpec,
    FileData,
    FilePart,
    Function,
    FunctionSpec,
    Grammar,
    GrammarFormat,
    ImagePart,
    ImageUrl,
    InputAudio,
    JsonSchemaSpec,
    Message,
    NamedFunction,
    Part,
    ResponseFormat,
    StreamOptions,
    TemplateKwarg,
    TextFormat,
    TextPart,
    ToolCall,
    ToolChoiceCustom,
    ToolChoiceFunction,
    ToolMessage,
    ToolSpec,
    thought_message,
)
from .detect import CompletionsCompat, detect_completions_compat
from .request import (
    BuiltRequest,
    OffWire,
    Reasoning,
    RequestOptions,
    Thinking,
    finish_body,
    join_url,
    off_wire,
    safe_tool_id,
)
from .transform import output_cap, prepare_messages

__all__ = ["build_completions_request", "completions_compat"]

_INCLUDE_USAGE = StreamOptions(include_usage=True)
_ENABLED = Thinking(type="enabled")
_DISABLED = Thinking(type="disabled")


def completions_compat(model: ModelDescriptor) -> CompletionsCompat:
    """Effective switches: the model's configured compat over endpoint detection."""
    return overlay(
        detect_completions_compat(model.provider, model.base_url, model.id), model.compat
    )


def _mapped(model: ModelDescriptor, level: str) -> str | None:
    m = model.thinking_level_map or {}
    return m.get(level, level)


def _reasoning_fields(
    model: ModelDescriptor, compat: CompletionsCompat, effort: str | None, body: Body
) -> None:
    if not model.reasoning:
        return
    level_map = model.thinking_level_map or {}
    off = effort is None or effort == "off"
    off_value = off_wire(level_map)
    wire = "" if effort is None or off else (_mapped(model, effort) or effort)  # when not off
    supports_effort = compat.supports_reasoning_effort
    fmt = compat.thinking_format
    match fmt:
        case "openai":
            if not off and supports_effort:
                body.reasoning_effort = wire
            elif off and isinstance(off_value, str):
                body.reasoning_effort = off_value
        case "deepseek":
            if not off:
                body.thinking = _ENABLED
                if supports_effort:
                    body.reasoning_effort = wire
            elif off_value is not None:
                body.thinking = _DISABLED
        case "openrouter":
            if not off:
                body.reasoning = Reasoning(effort=wire)
            elif off_value is not None:
                body.reasoning = Reasoning(
                    effort=off_value if isinstance(off_value, str) else "none"
                )
        case "zai":
            if not off:
                body.thinking = Thinking(type="enabled", clear_thinking=False)
                if supports_effort:
                    body.reasoning_effort = wire
            else:
                body.thinking = _DISABLED
        case "qwen":
            body.enable_thinking = not off
        case "qwen-chat-template":
            body.chat_template_kwargs = {"enable_thinking": not off, "preserve_thinking": not off}
        case "chat-template":
            kwargs = _template_kwargs(compat.chat_template_kwargs or {}, off, wire, off_value)
            if kwargs:
                body.chat_template_kwargs = kwargs
        case "together":
            body.reasoning = Reasoning(enabled=not off)
            if not off and supports_effort:
                body.reasoning_effort = wire
        case "string-thinking":
            if not off:
                body.thinking = wire
            elif off_value is not None:
                body.thinking = off_value if isinstance(off_value, str) else "none"
        case "ant-ling":
            mapped = None if off else level_map.get(effort or "")
            if isinstance(mapped, str):
                body.reasoning = Reasoning(effort=mapped)
        case _:
            assert_never(fmt, "Chat Completions thinking format")


def _template_kwargs(
    spec: Mapping[str, TemplateValue], off: bool, wire: str, off_value: OffWire
) -> dict[str, TemplateKwarg]:
    out: dict[str, TemplateKwarg] = {}
    for key, value in spec.items():
        if not isinstance(value, TemplateVar):
            out[key] = value
            continue
        if off and value.omit_when_off:
            continue
        if value.var == "thinking.enabled":
            out[key] = not off
        elif not off:
            out[key] = wire
        elif isinstance(off_value, str):
            out[key] = off_value
    return out


def _part(p: NPart) -> Part:  # noqa: RET503 - the match is exhaustive
    """One user part (a document by URL or of text never gets here: `documents.check_media`)."""
    match p:
        case NText():
            return TextPart(p.text)
        case NImage():
            return ImagePart(ImageUrl(f"data:{p.mime};base64,{p.data}"))
        case NDocument():
            name = p.name or "document.pdf"
            return FilePart(FileData(name, f"data:{p.mime};base64,{p.data or ''}"))
        case NAudio():
            return AudioPart(InputAudio(p.data, "mp3" if "mp" in p.mime else "wav"))
        case _:
            assert_never(p)


def _parts(content: tuple[NPart, ...]) -> list[Part]:
    return [_part(p) for p in content]


def _raw_json(text: str) -> msgspec.Raw:
    """`text` re-encoded compactly (what decoding it into the body would send)."""
    return msgspec.Raw(msgspec.json.encode(msgspec.json.decode(text)))


def _assistant(
    message: NAssistant, model: ModelDescriptor, compat: CompletionsCompat
) -> msgspec.Struct | None:
    texts = [p.text for p in message.content if isinstance(p, NText) and p.text.strip()]
    thinking = [p for p in message.content if isinstance(p, NThinking) and p.text.strip()]
    calls = [p for p in message.content if isinstance(p, NToolCall)]
    text: str | None = "".join(texts) if texts else None
    if text is None and compat.requires_assistant_after_tool_result:
        text = ""
    content: str | list[TextPart] | None = text
    thought: type[msgspec.Struct] | None = None  # the message type naming the reasoning field
    if thinking:
        if compat.requires_thinking_as_text:
            joined = "\n\n".join(t.text for t in thinking)
            content = [TextPart(joined), *([TextPart(text)] if text else [])]
        elif thinking[0].signature:
            thought = thought_message(thinking[0].signature)
    tool_calls: list[ToolCall | CustomCall] | UnsetType = UNSET
    details: list[msgspec.Raw] | UnsetType = UNSET
    if calls:
        tool_calls = [
            CustomCall(c.id, CustomInput(c.name, c.input or ""))
            if c.call_type == "custom"
            else ToolCall(
                c.id, "function", Function(c.name, msgspec.json.encode(c.arguments).decode())
            )
            for c in calls
        ]
        details = [_raw_json(c.thought_signature) for c in calls if c.thought_signature] or UNSET
    if thought is not None:
        return thought(
            thought="\n".join(t.text for t in thinking),
            content=content,
            tool_calls=tool_calls,
            reasoning_details=details,
        )
    if content in (None, "") and not calls:
        return None
    filler = compat.requires_reasoning_content_on_assistant_messages and model.reasoning
    return Assistant(
        content=content,
        tool_calls=tool_calls,
        reasoning_details=details,
        reasoning_content="" if filler else UNSET,
    )


def _tools(ctx: NContext, strict: bool | UnsetType) -> list[ToolSpec | CustomToolSpec]:
    """Functions, and free-text tools as OpenAI's ``custom`` tools (a provider client tool such
    as ``apply_patch`` is the plain function it describes: Chat Completions has no such tools)."""
    out: list[ToolSpec | CustomToolSpec] = []
    for t in ctx.tools:
        free = t.free_text
        if free is None:
            out.append(ToolSpec(FunctionSpec(t.name, t.description, t.parameters, strict)))
            continue
        fmt: TextFormat | GrammarFormat = (
            TextFormat()
            if free.grammar is None
            else GrammarFormat(Grammar(definition=free.grammar, syntax=free.syntax))
        )
        about = t.description or UNSET
        out.append(CustomToolSpec(CustomSpec(name=t.name, description=about, format=fmt)))
    return out


def _choice(ctx: NContext, choice: ToolChoice) -> str | ToolChoiceFunction | ToolChoiceCustom:
    if isinstance(choice, str):
        return choice
    if any(t.name == choice.name and t.free_text is not None for t in ctx.tools):
        return ToolChoiceCustom(NamedFunction(choice.name))
    return ToolChoiceFunction(NamedFunction(choice.name))


def _attached(images: list[Part]) -> Message:
    return Message("user", [TextPart(ATTACHED_IMAGES), *images])


def _messages(
    ctx: NContext, model: ModelDescriptor, compat: CompletionsCompat
) -> tuple[list[msgspec.Struct], bool]:
    """The wire messages, and whether the history holds tool calls or results."""
    prepared = prepare_messages(ctx, model, lambda raw: safe_tool_id(raw, 40))
    messages: list[msgspec.Struct] = []
    if ctx.system is not None:
        role = "developer" if model.reasoning and compat.supports_developer_role else "system"
        messages.append(Message(role, ctx.system))
    pending_images: list[Part] = []
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
            name = message.tool_name if compat.requires_tool_result_name else UNSET
            messages.append(ToolMessage(message.tool_call_id, text, name))
            pending_images.extend(_parts(tuple(images)))
            last_was_tool = True
            continue
        if pending_images:
            messages.append(_attached(pending_images))
            pending_images = []
        if isinstance(message, NUser):
            if last_was_tool and compat.requires_assistant_after_tool_result:
                messages.append(Message("assistant", "I have processed the tool results."))
            if isinstance(message.content, str):
                messages.append(Message("user", message.content))
            elif message.content:
                messages.append(Message("user", _parts(message.content)))
        else:
            built = _assistant(message, model, compat)
            if built is not None:
                messages.append(built)
        last_was_tool = False
    if pending_images:
        messages.append(_attached(pending_images))
    tool_history = any(
        isinstance(m, NToolResult)
        or (isinstance(m, NAssistant) and any(isinstance(p, NToolCall) for p in m.content))
        for m in prepared
    )
    return messages, tool_history


def build_completions_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The Chat Completions request for `model` (no credentials: the adapter adds auth)."""
    compat = completions_compat(model)
    messages, tool_history = _messages(ctx, model, compat)
    body = Body(model=model.id, messages=messages)
    if compat.supports_usage_in_streaming:
        body.stream_options = _INCLUDE_USAGE
    if compat.supports_store:
        body.store = False
    if options.max_tokens is not None or model.max_tokens_known:  # else the server's own cap
        cap = output_cap(ctx, model, options.max_tokens)
        if compat.max_tokens_field == "max_tokens":
            body.max_tokens = cap
        else:
            body.max_completion_tokens = cap
    if options.temperature is not None:
        body.temperature = options.temperature
    if ctx.tools:
        body.tools = _tools(ctx, False if compat.supports_strict_mode else UNSET)
    elif tool_history:
        body.tools = []
    _reasoning_fields(model, compat, options.effort, body)
    retention = options.cache_retention or "short"
    if options.session_id and (
        ("api.openai.com" in model.base_url and retention != "none")
        or (retention == "long" and compat.supports_long_cache_retention)
    ):
        body.prompt_cache_key = options.session_id[:64]
        if retention == "long":
            body.prompt_cache_retention = "24h"
    choice = options.tool_choice
    if choice is not None:
        body.tool_choice = _choice(ctx, choice)
    if options.parallel_tool_calls is not None:
        body.parallel_tool_calls = options.parallel_tool_calls
    out = options.output
    if out is not None:
        about = UNSET if out.description is None else out.description
        strict = out.strict and compat.supports_strict_mode
        body.response_format = ResponseFormat(
            JsonSchemaSpec(name=out.name, description=about, schema=out.schema, strict=strict)
        )
    return BuiltRequest(
        url=join_url(model.base_url, "/chat/completions"),
        headers={"Accept": "text/event-stream"},
        body=finish_body(body, options, model.provider),
    )
