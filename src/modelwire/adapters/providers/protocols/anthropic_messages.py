"""`anthropic-messages` request builder: `POST {base_url}/v1/messages` (spec §4.5, §1.6).

The body is a tree of msgspec structs (`anthropic_body`): field order is key order and UNSET
fields are omitted.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Final

import msgspec
from msgspec import UNSET

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
from .anthropic_body import (
    AnswerTool,
    AnthropicCompat,
    AssistantBlock,
    AssistantMessage,
    Body,
    Cache,
    Document,
    DocumentBase64,
    DocumentText,
    DocumentUrl,
    Image,
    ImageSource,
    Message,
    OutputConfig,
    RedactedThinking,
    Schema,
    SystemText,
    Text,
    ThinkingBlock,
    Tool,
    ToolChoice,
    ToolResult,
    ToolUse,
    UserBlock,
    UserMessage,
)
from .request import BuiltRequest, RequestOptions, Thinking, finish_body, join_url, safe_tool_id
from .transform import kept_parts, output_cap, prepare_messages

__all__ = ["anthropic_compat", "build_anthropic_request"]

_DEFAULTS: Final = AnthropicCompat()
_BUDGETS: Final = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
_ADAPTIVE: Final = {"minimal": "low", "low": "low", "medium": "medium"}
_DISABLED: Final = Thinking(type="disabled")


def anthropic_compat(model: ModelDescriptor) -> AnthropicCompat:
    """Effective Anthropic switches: the model's compat over the defaults."""
    return overlay(_DEFAULTS, model.compat)


def _document(part: NDocument) -> Document:
    source: DocumentBase64 | DocumentText | DocumentUrl
    if part.url is not None:
        source = DocumentUrl(part.url)
    elif part.mime == "text/plain":
        source = DocumentText(
            "text/plain", base64.b64decode(part.data or "").decode("utf-8", "replace")
        )
    else:
        source = DocumentBase64(part.mime, part.data or "")
    return Document(source, title=part.name if part.name is not None else UNSET)


def _parts(content: tuple[NPart, ...]) -> list[Text | Image | Document]:
    """User parts (audio never reaches here: `documents.check_media` refused it)."""
    out: list[Text | Image | Document] = []
    for p in content:
        if isinstance(p, NText):
            if p.text.strip():
                out.append(Text(p.text))
        elif isinstance(p, NImage):
            out.append(Image(ImageSource(p.mime, p.data)))
        elif isinstance(p, NDocument):
            out.append(_document(p))
    return out


def _assistant(message: NAssistant, compat: AnthropicCompat) -> list[AssistantBlock]:
    blocks: list[AssistantBlock] = []
    kept = kept_parts(message) if message.opaque else {}
    for at, part in enumerate(message.content):
        if kept:
            blocks.extend(kept.pop(at, ()))
        if isinstance(part, NText):
            if part.text.strip():
                blocks.append(Text(part.text))
        elif isinstance(part, NThinking):
            if part.redacted:
                blocks.append(RedactedThinking(part.signature or ""))
            elif part.signature:
                blocks.append(ThinkingBlock(part.text, part.signature))
            elif part.text.strip():
                if compat.allow_empty_signature:
                    blocks.append(ThinkingBlock(part.text, ""))
                else:
                    blocks.append(Text(part.text))
        elif isinstance(part, NToolCall):
            blocks.append(ToolUse(part.id, part.name, part.arguments))
    for rest in kept.values():  # the parts after the last block
        blocks.extend(rest)
    return blocks


def _tool_result(message: NToolResult) -> ToolResult:
    texts = [p.text for p in message.content if isinstance(p, NText)]
    images = [p for p in message.content if isinstance(p, NImage)]
    content: str | list[Text | Image]
    if images:
        parts = [p for p in _parts(message.content) if not isinstance(p, Document)]
        if not texts:
            parts.insert(0, Text("(see attached image)"))
        content = parts
    else:
        content = "\n".join(texts)
    return ToolResult(message.tool_call_id, content, message.is_error)


def _thinking(
    model: ModelDescriptor, compat: AnthropicCompat, options: RequestOptions, body: Body
) -> bool:
    if not model.reasoning:
        return False
    level_map = model.thinking_level_map or {}
    effort = options.effort
    if effort is None or effort == "off":
        if not ("off" in level_map and level_map["off"] is None):
            body.thinking = _DISABLED
        return False
    if compat.force_adaptive_thinking:
        mapped = level_map.get(effort)
        body.thinking = Thinking(type="adaptive", display="summarized")
        body.output_config = OutputConfig(
            mapped if isinstance(mapped, str) else _ADAPTIVE.get(effort, "high")
        )
        return True
    level = effort if effort in _BUDGETS else "high"
    budget = (options.thinking_budgets or {}).get(level, _BUDGETS[level])
    max_tokens = min(body.max_tokens + budget, model.max_tokens)
    body.max_tokens = max_tokens
    budget = min(budget, max(0, max_tokens - 1024)) or 1024
    body.thinking = Thinking(type="enabled", budget_tokens=budget, display="summarized")
    return True


def _messages(ctx: NContext, model: ModelDescriptor, compat: AnthropicCompat) -> list[Message]:
    prepared = prepare_messages(ctx, model, lambda raw: safe_tool_id(raw, 64))
    messages: list[Message] = []
    results: list[UserBlock] = []
    for message in prepared:
        if isinstance(message, NToolResult):
            results.append(_tool_result(message))
            continue
        if results:
            messages.append(UserMessage(results))
            results = []
        if isinstance(message, NUser):
            if isinstance(message.content, str):
                if message.content.strip():
                    messages.append(UserMessage(message.content))
            else:
                parts: list[UserBlock] = [*_parts(message.content)]
                if parts:
                    messages.append(UserMessage(parts))
        else:
            blocks = _assistant(message, compat)
            if blocks:
                messages.append(AssistantMessage(blocks))
    if results:
        messages.append(UserMessage(results))
    return messages


def _tools(ctx: NContext, compat: AnthropicCompat, cache: Cache | None) -> list[Tool]:
    eager = True if compat.supports_eager_tool_input_streaming else UNSET
    tools = []
    for tool in ctx.tools:
        schema = tool.parameters if isinstance(tool.parameters, Mapping) else {}
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        tools.append(
            Tool(
                name=tool.name,
                description=tool.description,
                eager_input_streaming=eager,
                input_schema=Schema(properties, required),
            )
        )
    if cache and compat.supports_cache_control_on_tools:
        tools[-1] = msgspec.structs.replace(tools[-1], cache_control=cache)
    return tools


def build_anthropic_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The Messages API request for `model` (no credentials: the adapter adds `x-api-key`)."""
    compat = anthropic_compat(model)
    messages = _messages(ctx, model, compat)
    retention = options.cache_retention or "short"
    cache: Cache | None = None
    if retention != "none":
        long = retention == "long" and compat.supports_long_cache_retention
        cache = Cache("ephemeral", "1h") if long else Cache("ephemeral")
    body = Body(
        model=model.id, messages=messages, max_tokens=output_cap(ctx, model, options.max_tokens)
    )
    if ctx.system is not None:
        body.system = [SystemText(ctx.system, cache or UNSET)]
    if ctx.tools:
        body.tools = [*_tools(ctx, compat, cache)]
    thinking = _thinking(model, compat, options, body)
    if options.temperature is not None and not thinking and compat.supports_temperature:
        body.temperature = options.temperature
    _answer_shape(body, options, thinking, model.provider)
    if cache:
        _cache_last_user(messages, cache)
    headers = {"Accept": "application/json", "anthropic-version": "2023-06-01"}
    beta = []
    if not compat.force_adaptive_thinking:
        beta.append("interleaved-thinking-2025-05-14")
    if ctx.tools and not compat.supports_eager_tool_input_streaming:
        beta.append("fine-grained-tool-streaming-2025-05-14")
    if beta:
        headers["anthropic-beta"] = ",".join(beta)
    return BuiltRequest(
        url=join_url(model.base_url, "/v1/messages"),
        headers=headers,
        body=finish_body(body, options, model.provider),
    )


_CHOICE_TYPES: Final = {"auto": "auto", "none": "none", "required": "any"}


def _answer_shape(body: Body, options: RequestOptions, thinking: bool, route: str) -> None:
    """`tool_choice`, `parallel_tool_calls` and structured output on the Messages API.

    Structured output is a forced single tool whose input is the answer (`AnswerTool`); the
    translator turns that tool's input into the answer's text. Anthropic refuses a forced tool
    with extended thinking, and the forced tool leaves no room for another tool choice.
    """
    choice = options.tool_choice
    disable = UNSET if options.parallel_tool_calls is not False else True
    out = options.output
    if out is not None:
        if choice is not None or thinking:
            why = "tool_choice" if choice is not None else "reasoning (extended thinking)"
            raise LlmError(
                f'route "{route}": output (structured output) cannot be combined with {why} on '
                "anthropic-messages (it forces the answer tool)",
                ErrorCode.UNSUPPORTED_OPTION,
            )
        schema = out.schema
        if not (isinstance(schema, Mapping) and schema.get("type") == "object"):
            raise LlmError(
                f'route "{route}": output.schema must describe a JSON object '
                '({"type": "object", ...}) on anthropic-messages',
                ErrorCode.UNSUPPORTED_OPTION,
            )
        about = out.description or f"Give the answer as the input of this tool ({out.name})."
        answer = AnswerTool(name=out.name, description=about, input_schema=schema)
        body.tools = [*(body.tools or ()), answer]
        body.tool_choice = ToolChoice(type="tool", name=out.name, disable_parallel_tool_use=disable)
        return
    if choice is None:
        if disable is True:
            body.tool_choice = ToolChoice(type="auto", disable_parallel_tool_use=True)
        return
    if isinstance(choice, str):
        body.tool_choice = ToolChoice(type=_CHOICE_TYPES[choice], disable_parallel_tool_use=disable)
    else:
        body.tool_choice = ToolChoice(
            type="tool", name=choice.name, disable_parallel_tool_use=disable
        )


def _cache_last_user(messages: list[Message], cache: Cache) -> None:
    """Put the cache breakpoint on the last block of the last user message."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, UserMessage):
            content = message.content
            blocks: list[UserBlock] = [Text(content)] if isinstance(content, str) else [*content]
            if blocks:
                blocks[-1] = msgspec.structs.replace(blocks[-1], cache_control=cache)
            messages[i] = UserMessage(blocks)
            return
