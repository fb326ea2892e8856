"""DeepSeek request serialization (spec A.1, A.3, A.4): `GenerateOptions` → compact JSON bytes.

Key order is fixed by the wire structs below (``model, messages, stream, stream_options, thinking,
reasoning_effort, tools, temperature, max_tokens, stop``); absent options are omitted, never
``null``. Identical inputs always give byte-identical bodies, so a retried attempt re-sends exactly
the same request.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ...errors import ErrorCode, LlmError
from ...vocab import (
    GenerateOptions,
    JsonValue,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolChoice,
    ToolResultBlock,
    message_has_image,
    message_has_media,
)
from ..shape import merge_provider_options, refuse_free_text_tools, schema_instruction
from .models import EFFORTS, DeepSeekConfig, ReasoningPassback

__all__ = ["NO_OUTPUT", "build_body", "has_image", "serialize_messages", "thinking_fields"]

NO_OUTPUT: Final = "(no output)"
"""The content sent for a tool result whose text is empty."""


class _Plain(msgspec.Struct):
    """A system or user message: role, then content."""

    role: str
    content: str


class _Tool(msgspec.Struct):
    role: str
    tool_call_id: str
    content: str


class _Function(msgspec.Struct):
    name: str
    arguments: str


class _ToolCall(msgspec.Struct):
    id: str
    type: str
    function: _Function


class _Assistant(msgspec.Struct, omit_defaults=True):
    role: str
    content: str
    reasoning_content: str | None = None
    tool_calls: list[_ToolCall] | None = None


_WireMessage = _Plain | _Tool | _Assistant


class _Thinking(msgspec.Struct):
    type: str


class _FunctionSpec(msgspec.Struct):
    name: str
    description: str
    parameters: JsonValue


class _ToolSpec(msgspec.Struct):
    type: str
    function: _FunctionSpec


class _StreamOptions(msgspec.Struct):
    include_usage: bool


class _NamedFunction(msgspec.Struct):
    name: str


class _ToolChoiceFunction(msgspec.Struct):
    type: str
    function: _NamedFunction


class _ResponseFormat(msgspec.Struct):
    type: str


class _Body(msgspec.Struct, omit_defaults=True):
    model: str
    messages: list[_WireMessage]
    stream: bool
    stream_options: _StreamOptions
    thinking: _Thinking | None = None
    reasoning_effort: str | None = None
    tools: list[_ToolSpec] | None = None
    tool_choice: str | _ToolChoiceFunction | None = None
    response_format: _ResponseFormat | None = None
    temperature: float | int | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None


OWNED_FIELDS: Final = frozenset(_Body.__struct_fields__)
"""Every top-level body field the adapter writes (`provider_options` may not set them)."""
_JSON_OBJECT: Final = _ResponseFormat("json_object")


_ENCODER: Final = msgspec.json.Encoder()
_INCLUDE_USAGE: Final = _StreamOptions(include_usage=True)
_ENABLED: Final = _Thinking("enabled")
_DISABLED: Final = _Thinking("disabled")


def _image_error(index: int, role: str) -> LlmError:
    return LlmError(
        f"DeepSeek adapter: messages[{index}] ({role}) holds an image; DeepSeek serialization "
        "does not support image content.",
        ErrorCode.UNSUPPORTED_CONTENT,
    )


def _flatten(content: tuple[object, ...]) -> str:
    parts = [b.text for b in content if isinstance(b, TextBlock)]
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else "".join(parts)


def _assistant(message: Message, passback: ReasoningPassback) -> _Assistant:
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[_ToolCall] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ReasoningBlock):
            reasoning.append(block.text)
        elif isinstance(block, ToolCallBlock):
            calls.append(_ToolCall(block.id, "function", _Function(block.name, block.arguments)))
    thought = "".join(reasoning)
    send_reasoning = bool(thought) and (passback == "every-turn" or bool(calls))
    return _Assistant(
        "assistant",
        "".join(texts),
        thought if send_reasoning else None,
        calls or None,
    )


def serialize_messages(
    options: GenerateOptions, passback: ReasoningPassback = "tool-turns"
) -> list[_WireMessage]:
    """The wire ``messages`` list: system prompt first, then history expanded per rules A1-A7.

    Raises `LlmError` ``UNSUPPORTED_CONTENT`` for a message holding an image (checked before
    that message is flattened, so an image is never silently dropped).
    """
    out: list[_WireMessage] = []
    if options.system is not None:
        out.append(_Plain("system", options.system))
    for index, message in enumerate(options.messages):
        if message_has_image(message.content):
            raise _image_error(index, message.role)
        if message_has_media(message.content):
            raise LlmError(
                f"DeepSeek adapter: messages[{index}] ({message.role}) holds a document or "
                "audio; DeepSeek's chat API takes text only.",
                ErrorCode.UNSUPPORTED_CONTENT,
            )
        role = message.role
        if role == "system":
            out.append(_Plain("system", _flatten(message.content)))
        elif role == "user":
            text = _flatten(message.content)
            results = [b for b in message.content if isinstance(b, ToolResultBlock)]
            if text or not results:
                out.append(_Plain("user", text))
            for result in results:
                out.append(
                    _Tool("tool", result.tool_call_id, _flatten(result.content) or NO_OUTPUT)
                )
        elif role == "assistant":
            out.append(_assistant(message, passback))
    return out


def thinking_fields(
    options: GenerateOptions, config: DeepSeekConfig
) -> tuple[_Thinking | None, str | None]:
    """The ``thinking`` and ``reasoning_effort`` fields for a request (rules A14-A19).

    Raises `LlmError` ``UNSUPPORTED_REASONING_EFFORT`` for an effort outside ``off|low|high|max``
    or any effort but ``off`` on a deployment whose thinking is disabled.
    """
    if options.purpose == "session-title":
        return _DISABLED, None
    requested = options.reasoning_effort
    if requested is not None and requested not in EFFORTS:
        raise LlmError(
            f'DeepSeek does not support reasoning effort "{requested}" (model '
            f'"{options.model}"; supported: off, low, high, max)',
            ErrorCode.UNSUPPORTED_REASONING_EFFORT,
        )
    effort = requested if requested is not None else config.reasoning.effort
    thinking = config.reasoning.thinking
    if thinking == "disabled" and effort not in (None, "off"):
        raise LlmError(
            f'DeepSeek does not support reasoning effort "{effort}" for model '
            f'"{options.model}": thinking is disabled, only reasoning effort "off" is allowed',
            ErrorCode.UNSUPPORTED_REASONING_EFFORT,
        )
    if effort == "off":
        return _DISABLED, None
    if effort is not None:
        return _ENABLED, effort
    if thinking is not None:
        return _Thinking(thinking), None
    return None, None


def _number(value: float | int) -> float | int:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)  # JSON-render 0.0 as 0, like the reference implementation
    return value


def _tool_choice(choice: ToolChoice | None) -> str | _ToolChoiceFunction | None:
    if choice is None or isinstance(choice, str):
        return choice
    return _ToolChoiceFunction("function", _NamedFunction(choice.name))


def build_body(options: GenerateOptions, config: DeepSeekConfig) -> bytes:
    """The complete request body as compact UTF-8 JSON (non-ASCII unescaped, fixed key order).

    Structured output: DeepSeek has JSON mode but no schema mode, so `output` becomes
    `response_format: {type: json_object}` with the schema stated in the system message (the
    runtime then validates the answer). `provider_options` keys follow the adapter's fields.
    """
    if options.output is not None:
        instruction = schema_instruction(options.output)
        system = f"{options.system}\n\n{instruction}" if options.system else instruction
        options = msgspec.structs.replace(options, system=system)
    refuse_free_text_tools(options.tools, options.provider, "deepseek")
    messages = serialize_messages(options, config.reasoning_passback)
    thinking, effort = thinking_fields(options, config)
    tools = (
        [
            _ToolSpec("function", _FunctionSpec(t.name, t.description, t.parameters))
            for t in options.tools
        ]
        if options.tools
        else None
    )
    body = _Body(
        model=options.model,
        messages=messages,
        stream=True,
        stream_options=_INCLUDE_USAGE,
        thinking=thinking,
        reasoning_effort=effort,
        tools=tools,
        tool_choice=_tool_choice(options.tool_choice),
        response_format=None if options.output is None else _JSON_OBJECT,
        temperature=None if options.temperature is None else _number(options.temperature),
        max_tokens=options.max_tokens,
        stop=None if options.stop is None else list(options.stop),
    )
    encoded = _ENCODER.encode(body)
    return merge_provider_options(encoded, OWNED_FIELDS, options.provider_options, options.provider)


def has_image(options: GenerateOptions) -> bool:
    """True when any history message (tool results included) holds an image block."""
    return any(message_has_image(m.content) for m in options.messages)
