"""`mistral-conversations`: Mistral's ``POST {base_url}/v1/chat/completions`` streaming protocol.

The request follows pi-ai's Mistral provider: Mistral content chunks (a replayed Magistral turn
sends its reasoning back as a ``thinking`` chunk), tool-call ids in Mistral's 9-character form
(the results answering them carry the same id), ``tool_choice`` ``any`` for a required call,
``prompt_mode: reasoning`` for reasoning models, or ``reasoning_effort`` for the models that
take an effort, and the session id as ``prompt_cache_key`` plus the ``x-affinity`` header (KV
cache reuse) unless caching is off. The stream is read by `MistralTranslator`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec
from msgspec import UNSET

from ....vocab import StructuredOutputSupport
from ..context import (
    NAssistant,
    NContext,
    NImage,
    NMessage,
    NText,
    NThinking,
    NToolCall,
    NToolResult,
    NUser,
)
from ..materialize import ModelDescriptor
from .mistral_body import (
    AssistantChunk,
    AssistantMessage,
    Body,
    Function,
    FunctionSpec,
    ImageChunk,
    JsonSchemaSpec,
    Message,
    NamedFunction,
    ResponseFormat,
    SystemMessage,
    TextChunk,
    ThinkingChunk,
    ToolCall,
    ToolChoiceFunction,
    ToolIds,
    ToolMessage,
    ToolSpec,
    UserChunk,
    UserMessage,
)
from .mistral_errors import refine_mistral_http_error
from .mistral_stream import MistralTranslator
from .request import BuiltRequest, RequestOptions, finish_body
from .spec import WireProtocol
from .transform import output_cap, prepare_messages

__all__ = ["PROTOCOL", "build_mistral_request", "mistral_url"]

EFFORT_MODELS: Final = frozenset(
    {"mistral-small-2603", "mistral-small-latest", "mistral-medium-3.5"}
)
"""The reasoning models that take ``reasoning_effort`` (the others take ``prompt_mode``)."""

_NO_IMAGES: Final = "(image omitted: model does not support images)"
_TOOL_NO_IMAGES: Final = "[tool image omitted: model does not support images]"
_CHOICES: Final = {"auto": "auto", "none": "none", "required": "any"}


def mistral_url(base_url: str) -> str:
    """The chat endpoint under `base_url` (a base that already ends in ``/v1`` keeps it once)."""
    base = base_url.rstrip("/")
    return base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")


def _user(message: NUser, images: bool) -> UserMessage | None:
    content = message.content
    if isinstance(content, str):
        return UserMessage(content)
    chunks: list[UserChunk] = []
    for part in content:
        if isinstance(part, NText):
            chunks.append(TextChunk(part.text))
        elif images:
            chunks.append(ImageChunk(f"data:{part.mime};base64,{part.data}"))
    if chunks:
        return UserMessage(chunks)
    if any(isinstance(p, NImage) for p in content):
        return UserMessage(_NO_IMAGES)
    return None


def _assistant(message: NAssistant, ids: ToolIds) -> AssistantMessage | None:
    chunks: list[AssistantChunk] = []
    calls: list[ToolCall] = []
    for part in message.content:
        if isinstance(part, NText):
            if part.text.strip():
                chunks.append(TextChunk(part.text))
        elif isinstance(part, NThinking):
            if part.text.strip() and not part.redacted:  # same-model reasoning, replayed
                chunks.append(ThinkingChunk([TextChunk(part.text)]))
        else:
            arguments = msgspec.json.encode(part.arguments).decode()
            calls.append(ToolCall(id=ids(part.id), function=Function(part.name, arguments)))
    if not chunks and not calls:
        return None
    return AssistantMessage(content=chunks or UNSET, tool_calls=calls or UNSET)


def _result_text(message: NToolResult, images: bool) -> str:
    text = "\n".join(p.text for p in message.content if isinstance(p, NText)).strip()
    prefix = "[tool error] " if message.is_error else ""
    has_images = any(isinstance(p, NImage) for p in message.content)
    if text:
        suffix = f"\n{_TOOL_NO_IMAGES}" if has_images and not images else ""
        return f"{prefix}{text}{suffix}"
    if has_images:
        return prefix + ("(see attached image)" if images else _NO_IMAGES)
    return prefix + "(no tool output)"


def _tool_result(message: NToolResult, images: bool, ids: ToolIds) -> ToolMessage:
    content: list[UserChunk] = [TextChunk(_result_text(message, images))]
    if images:
        content.extend(
            ImageChunk(f"data:{p.mime};base64,{p.data}")
            for p in message.content
            if isinstance(p, NImage)
        )
    return ToolMessage(
        tool_call_id=ids(message.tool_call_id), name=message.tool_name, content=content
    )


def _call_ids(prepared: list[NMessage]) -> list[str]:
    out: list[str] = []
    for message in prepared:
        if isinstance(message, NAssistant):
            out.extend(p.id for p in message.content if isinstance(p, NToolCall))
        elif isinstance(message, NToolResult):
            out.append(message.tool_call_id)
    return out


def _messages(ctx: NContext, model: ModelDescriptor) -> list[Message]:
    # ids are normalized here, in one map for calls and results alike (not per message)
    prepared = prepare_messages(ctx, model, lambda raw: raw)
    ids = ToolIds(_call_ids(prepared))
    images = "image" in model.input
    messages: list[Message] = []
    if ctx.system:
        messages.append(SystemMessage(ctx.system))
    for message in prepared:
        built: Message | None
        if isinstance(message, NUser):
            built = _user(message, images)
        elif isinstance(message, NAssistant):
            built = _assistant(message, ids)
        else:
            built = _tool_result(message, images, ids)
        if built is not None:
            messages.append(built)
    return messages


def _reasoning(model: ModelDescriptor, effort: str | None, body: Body) -> None:
    if not model.reasoning:
        return
    level_map: Mapping[str, str | None] = model.thinking_level_map or {}
    takes_effort = model.id in EFFORT_MODELS
    if effort is None or effort == "off":
        off = level_map.get("off")
        if takes_effort and isinstance(off, str):
            body.reasoning_effort = off  # a configured wire value for `off` (e.g. "none")
        return
    if takes_effort:
        body.reasoning_effort = level_map.get(effort) or "high"
    else:
        body.prompt_mode = "reasoning"


def build_mistral_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The Mistral chat request for `model` (no credentials: the adapter adds auth)."""
    body = Body(model=model.id, messages=_messages(ctx, model))
    if ctx.tools:
        body.tools = [
            ToolSpec(FunctionSpec(t.name, t.description, t.parameters)) for t in ctx.tools
        ]
    if options.temperature is not None:
        body.temperature = options.temperature
    body.max_tokens = output_cap(ctx, model, options.max_tokens)
    choice = options.tool_choice
    if choice is not None:
        body.tool_choice = (
            _CHOICES[choice]
            if isinstance(choice, str)
            else ToolChoiceFunction(NamedFunction(choice.name))
        )
    if options.parallel_tool_calls is not None:
        body.parallel_tool_calls = options.parallel_tool_calls
    out = options.output
    if out is not None:
        about = UNSET if out.description is None else out.description
        body.response_format = ResponseFormat(
            JsonSchemaSpec(name=out.name, description=about, schema=out.schema, strict=out.strict)
        )
    _reasoning(model, options.effort, body)
    headers = {"Accept": "text/event-stream"}
    if options.session_id and options.cache_retention != "none":
        body.prompt_cache_key = options.session_id
        headers["x-affinity"] = options.session_id  # a profile header of that name wins
    return BuiltRequest(
        url=mistral_url(model.base_url),
        headers=headers,
        body=finish_body(body, options, model.provider),
    )


def _strict(model: ModelDescriptor) -> StructuredOutputSupport:
    return "native-strict"


PROTOCOL: Final = WireProtocol(
    "mistral-conversations",
    build_mistral_request,
    MistralTranslator,
    _strict,
    http_error=refine_mistral_http_error,
)
"""The `mistral-conversations` protocol (Bearer key, Server-Sent Events)."""
