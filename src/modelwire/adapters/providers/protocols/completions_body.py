"""The Chat Completions request body as msgspec structs (spec §4.3).

Field order is the JSON key order and UNSET fields are omitted, which reproduces the body pi-ai
sends byte for byte; a ``type``/``role`` tag is always the first key of its object.
"""

from __future__ import annotations

import functools
from typing import Final, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from .request import Reasoning, Thinking

__all__ = [
    "ATTACHED_IMAGES",
    "Assistant",
    "Body",
    "CustomCall",
    "CustomInput",
    "CustomSpec",
    "CustomToolSpec",
    "Function",
    "FunctionSpec",
    "Grammar",
    "GrammarFormat",
    "ImagePart",
    "ImageUrl",
    "Message",
    "Part",
    "StreamOptions",
    "TemplateKwarg",
    "TextFormat",
    "TextPart",
    "ToolCall",
    "ToolChoiceCustom",
    "ToolMessage",
    "ToolSpec",
    "thought_message",
]

ATTACHED_IMAGES: Final = "Attached image(s) from tool result:"
"""The text before the images of tool results, re-sent in a user message."""


class TextPart(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    text: str


class ImageUrl(msgspec.Struct, frozen=True):
    url: str


class ImagePart(msgspec.Struct, frozen=True, tag_field="type", tag="image_url"):
    image_url: ImageUrl


class FileData(msgspec.Struct, frozen=True):
    filename: str
    file_data: str


class FilePart(msgspec.Struct, frozen=True, tag_field="type", tag="file"):
    file: FileData


class InputAudio(msgspec.Struct, frozen=True):
    data: str
    format: str


class AudioPart(msgspec.Struct, frozen=True, tag_field="type", tag="input_audio"):
    input_audio: InputAudio


Part: TypeAlias = TextPart | ImagePart | FilePart | AudioPart


class Message(msgspec.Struct, frozen=True):
    """A system, developer or user message (or the bridging assistant line)."""

    role: str
    content: str | list[Part]


class ToolMessage(msgspec.Struct, frozen=True, tag_field="role", tag="tool"):
    tool_call_id: str
    content: str
    name: str | UnsetType = UNSET


class Function(msgspec.Struct, frozen=True):
    name: str
    arguments: str


class ToolCall(msgspec.Struct, frozen=True):
    id: str
    type: str
    function: Function


class CustomInput(msgspec.Struct, frozen=True):
    name: str
    input: str


class CustomCall(msgspec.Struct, frozen=True, tag_field="type", tag="custom"):
    """A call of a free-text (custom) tool: its raw input text."""

    id: str
    custom: CustomInput


AssistantContent: TypeAlias = str | list[TextPart] | None
"""An assistant message's content: one string, text parts (thinking as text), or null."""


class Assistant(msgspec.Struct, frozen=True, kw_only=True, tag_field="role", tag="assistant"):
    """An assistant message without a signed reasoning field."""

    content: AssistantContent
    tool_calls: list[ToolCall | CustomCall] | UnsetType = UNSET
    reasoning_details: list[msgspec.Raw] | UnsetType = UNSET
    reasoning_content: str | UnsetType = UNSET  # "" where the endpoint requires the field


_FIXED: Final = frozenset({"role", "content", "tool_calls", "reasoning_details"})


@functools.lru_cache(maxsize=32)
def thought_message(field: str) -> type[msgspec.Struct] | None:
    """The assistant message type that carries its reasoning text in the field `field` (the
    replayed thinking signature, e.g. ``reasoning_content``), with keyword fields `thought`,
    `content`, `tool_calls`, `reasoning_details`; None when `field` names one of those keys."""
    if field in _FIXED:
        return None
    return msgspec.defstruct(
        "AssistantThought",
        [
            ("thought", str),
            ("content", AssistantContent),
            ("tool_calls", list[ToolCall | CustomCall] | UnsetType, UNSET),
            ("reasoning_details", list[msgspec.Raw] | UnsetType, UNSET),
        ],
        kw_only=True,
        frozen=True,
        tag_field="role",
        tag="assistant",
        rename={"thought": field},
    )


class FunctionSpec(msgspec.Struct, frozen=True):
    name: str
    description: str
    parameters: object  # the tool's JSON Schema, sent as given
    strict: bool | UnsetType = UNSET


class ToolSpec(msgspec.Struct, frozen=True, tag_field="type", tag="function"):
    function: FunctionSpec


class TextFormat(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    """A custom tool's unconstrained free-text input."""


class Grammar(msgspec.Struct, frozen=True, kw_only=True):
    definition: str
    syntax: str


class GrammarFormat(msgspec.Struct, frozen=True, tag_field="type", tag="grammar"):
    """A custom tool's input constrained by a grammar (``lark`` or ``regex``)."""

    grammar: Grammar


class CustomSpec(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str | UnsetType = UNSET
    format: TextFormat | GrammarFormat


class CustomToolSpec(msgspec.Struct, frozen=True, tag_field="type", tag="custom"):
    """A free-text tool (OpenAI custom tools)."""

    custom: CustomSpec


class StreamOptions(msgspec.Struct, frozen=True):
    include_usage: bool


class JsonSchemaSpec(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str | UnsetType = UNSET
    schema: object  # the caller's JSON Schema, sent as given
    strict: bool


class ResponseFormat(msgspec.Struct, frozen=True, tag_field="type", tag="json_schema"):
    json_schema: JsonSchemaSpec


class NamedFunction(msgspec.Struct, frozen=True):
    name: str


class ToolChoiceFunction(msgspec.Struct, frozen=True, tag_field="type", tag="function"):
    function: NamedFunction


class ToolChoiceCustom(msgspec.Struct, frozen=True, tag_field="type", tag="custom"):
    custom: NamedFunction


TemplateKwarg: TypeAlias = str | int | float | bool | None
"""One resolved `chat_template_kwargs` value."""


class Body(msgspec.Struct, kw_only=True):
    """The request body; the builder sets the optional fields its dialect sends."""

    model: str
    messages: list[msgspec.Struct]
    stream: bool = True
    stream_options: StreamOptions | UnsetType = UNSET
    store: bool | UnsetType = UNSET
    max_completion_tokens: int | UnsetType = UNSET
    max_tokens: int | UnsetType = UNSET
    temperature: float | UnsetType = UNSET
    tools: list[ToolSpec | CustomToolSpec] | UnsetType = UNSET
    thinking: Thinking | str | UnsetType = UNSET
    reasoning: Reasoning | UnsetType = UNSET
    reasoning_effort: str | UnsetType = UNSET
    enable_thinking: bool | UnsetType = UNSET
    chat_template_kwargs: dict[str, TemplateKwarg] | UnsetType = UNSET
    prompt_cache_key: str | UnsetType = UNSET
    prompt_cache_retention: str | UnsetType = UNSET
    tool_choice: str | ToolChoiceFunction | ToolChoiceCustom | UnsetType = UNSET
    parallel_tool_calls: bool | UnsetType = UNSET
    response_format: ResponseFormat | UnsetType = UNSET
