"""The Anthropic Messages request body as msgspec structs (spec §4.5), and its effective switches.

Field order is the JSON key order and UNSET fields are omitted; a ``type`` tag is always the
first key of its object. Every user-side content block can carry a trailing ``cache_control``
(the last one of the last user message gets the cache breakpoint).
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from .request import Thinking

__all__ = [
    "AnthropicCompat",
    "AssistantBlock",
    "AssistantMessage",
    "Body",
    "Cache",
    "Image",
    "ImageSource",
    "Message",
    "OutputConfig",
    "RedactedThinking",
    "Schema",
    "SystemText",
    "Text",
    "ThinkingBlock",
    "Tool",
    "ToolResult",
    "ToolUse",
    "UserBlock",
    "UserMessage",
]


class AnthropicCompat(msgspec.Struct, frozen=True, kw_only=True):
    """The effective switches of one Anthropic model (pi-ai's defaults, configured over)."""

    supports_eager_tool_input_streaming: bool = True
    supports_long_cache_retention: bool = True
    supports_cache_control_on_tools: bool = True
    supports_temperature: bool = True
    allow_empty_signature: bool = False
    supports_strict_tools: bool = False
    force_adaptive_thinking: bool = False


class Cache(msgspec.Struct, frozen=True):
    """A ``cache_control`` breakpoint."""

    type: str
    ttl: str | UnsetType = UNSET


class Text(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    text: str
    cache_control: Cache | UnsetType = UNSET


class ImageSource(msgspec.Struct, frozen=True, tag_field="type", tag="base64"):
    media_type: str
    data: str


class Image(msgspec.Struct, frozen=True, tag_field="type", tag="image"):
    source: ImageSource
    cache_control: Cache | UnsetType = UNSET


class DocumentBase64(msgspec.Struct, frozen=True, tag_field="type", tag="base64"):
    media_type: str
    data: str


class DocumentText(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    media_type: str
    data: str


class DocumentUrl(msgspec.Struct, frozen=True, tag_field="type", tag="url"):
    url: str


class Document(msgspec.Struct, frozen=True, tag_field="type", tag="document"):
    source: DocumentBase64 | DocumentText | DocumentUrl
    title: str | UnsetType = UNSET
    cache_control: Cache | UnsetType = UNSET


class ToolResult(msgspec.Struct, frozen=True, tag_field="type", tag="tool_result"):
    tool_use_id: str
    content: str | list[Text | Image]
    is_error: bool
    cache_control: Cache | UnsetType = UNSET


UserBlock: TypeAlias = Text | Image | Document | ToolResult


class RedactedThinking(msgspec.Struct, frozen=True, tag_field="type", tag="redacted_thinking"):
    data: str


class ThinkingBlock(msgspec.Struct, frozen=True, tag_field="type", tag="thinking"):
    thinking: str
    signature: str


class ToolUse(msgspec.Struct, frozen=True, tag_field="type", tag="tool_use"):
    id: str
    name: str
    input: dict[str, object]  # the parsed arguments object


AssistantBlock: TypeAlias = Text | RedactedThinking | ThinkingBlock | ToolUse | msgspec.Raw
"""One assistant content block (a block kept whole, e.g. a server tool's, is its raw JSON)."""


class UserMessage(msgspec.Struct, frozen=True, tag_field="role", tag="user"):
    content: str | list[UserBlock]


class AssistantMessage(msgspec.Struct, frozen=True, tag_field="role", tag="assistant"):
    content: list[AssistantBlock]


Message: TypeAlias = UserMessage | AssistantMessage


class SystemText(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    text: str
    cache_control: Cache | UnsetType = UNSET


class Schema(msgspec.Struct, frozen=True, tag_field="type", tag="object"):
    """A tool's ``input_schema``: its properties and required names, sent as given."""

    properties: object
    required: object


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str
    eager_input_streaming: bool | UnsetType = UNSET
    input_schema: Schema
    cache_control: Cache | UnsetType = UNSET


class OutputConfig(msgspec.Struct, frozen=True):
    effort: str


class AnswerTool(msgspec.Struct, frozen=True, kw_only=True):
    """The tool whose input is the structured answer (`GenerateOptions.output`): its whole JSON
    Schema is sent, not only `properties` and `required`."""

    name: str
    description: str
    input_schema: object


class ToolChoice(msgspec.Struct, frozen=True, kw_only=True):
    type: str  # auto | any | none | tool
    name: str | UnsetType = UNSET
    disable_parallel_tool_use: bool | UnsetType = UNSET


class Body(msgspec.Struct, kw_only=True):
    """The request body; the builder sets the optional fields."""

    model: str
    messages: list[Message]
    max_tokens: int
    stream: bool = True
    system: list[SystemText] | UnsetType = UNSET
    tools: list[Tool | AnswerTool] | UnsetType = UNSET
    tool_choice: ToolChoice | UnsetType = UNSET
    thinking: Thinking | UnsetType = UNSET
    output_config: OutputConfig | UnsetType = UNSET
    temperature: float | UnsetType = UNSET
