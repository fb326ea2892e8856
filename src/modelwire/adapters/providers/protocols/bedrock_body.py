"""The Bedrock Converse request body as msgspec structs, and what a Bedrock model family takes.

Converse content blocks are one-key objects (``{"text": ...}``, ``{"toolUse": {...}}``, ...):
each is a struct with one field. Field names are camelCase on the wire (``rename="camel"``);
the model-specific ``additionalModelRequestFields`` keep Anthropic's snake_case. UNSET fields
are omitted and field order is key order.

Model families are told apart by id and display name (an application inference profile ARN
names no model, so its display name can): Anthropic Claude models take budget or adaptive
thinking, prompt-cache points (Claude 3.5 Haiku, 3.7 Sonnet, 4.x, 5) and replayed reasoning
signatures; Bedrock structured outputs (``outputConfig.textFormat``) are served where the model's
compat says ``supports_strict_mode`` (the catalog marks the models Bedrock serves them for), else
to the Claude models the catalog marks (Haiku/Sonnet/Opus 4.5, Opus/Sonnet 4.6, Sonnet 5).
"""

from __future__ import annotations

import re
from typing import Final, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from ..materialize import ModelDescriptor
from .request import Thinking

__all__ = [
    "AdditionalFields",
    "AssistantBlock",
    "Body",
    "CachePoint",
    "CachePointBlock",
    "Empty",
    "Image",
    "ImageData",
    "ImageSource",
    "InferenceConfig",
    "InputSchema",
    "JsonSchemaFormat",
    "Message",
    "OutputConfig",
    "OutputEffort",
    "ReasoningBody",
    "ReasoningContent",
    "ReasoningText",
    "Structure",
    "Text",
    "TextFormat",
    "ToolChoice",
    "ToolConfig",
    "ToolEntry",
    "ToolResult",
    "ToolResultBody",
    "ToolSpec",
    "ToolUse",
    "ToolUseBody",
    "UserBlock",
    "adaptive_thinking",
    "is_claude",
    "native_xhigh",
    "prompt_caching",
    "structured_outputs",
]


class Empty(msgspec.Struct, frozen=True):
    """``{}`` (the ``auto`` / ``any`` tool choices)."""


class CachePoint(msgspec.Struct, frozen=True):
    type: str = "default"
    ttl: str | UnsetType = UNSET


class CachePointBlock(msgspec.Struct, frozen=True, rename="camel"):
    cache_point: CachePoint


class Text(msgspec.Struct, frozen=True):
    text: str


class ImageSource(msgspec.Struct, frozen=True):
    bytes: str  # base64, as the JSON protocol carries a blob


class ImageData(msgspec.Struct, frozen=True):
    format: str
    source: ImageSource


class Image(msgspec.Struct, frozen=True):
    image: ImageData


class DocumentData(msgspec.Struct, frozen=True):
    format: str
    name: str
    source: ImageSource


class Document(msgspec.Struct, frozen=True):
    document: DocumentData


class ToolUseBody(msgspec.Struct, frozen=True, rename="camel"):
    tool_use_id: str
    name: str
    input: dict[str, object]


class ToolUse(msgspec.Struct, frozen=True, rename="camel"):
    tool_use: ToolUseBody


class ToolResultBody(msgspec.Struct, frozen=True, rename="camel"):
    tool_use_id: str
    content: list[Text | Image]
    status: str  # success | error


class ToolResult(msgspec.Struct, frozen=True, rename="camel"):
    tool_result: ToolResultBody


class ReasoningText(msgspec.Struct, frozen=True):
    text: str
    signature: str | UnsetType = UNSET


class ReasoningBody(msgspec.Struct, frozen=True, rename="camel"):
    reasoning_text: ReasoningText | UnsetType = UNSET
    redacted_content: str | UnsetType = UNSET  # base64, byte-exact as streamed


class ReasoningContent(msgspec.Struct, frozen=True, rename="camel"):
    reasoning_content: ReasoningBody


UserBlock: TypeAlias = Text | Image | Document | ToolResult | CachePointBlock
AssistantBlock: TypeAlias = Text | ToolUse | ReasoningContent


class Message(msgspec.Struct):
    """One conversation message (the builder appends blocks while merging user turns)."""

    role: str  # user | assistant
    content: list[UserBlock | AssistantBlock]


class InferenceConfig(msgspec.Struct, frozen=True, rename="camel"):
    max_tokens: int | UnsetType = UNSET
    temperature: float | UnsetType = UNSET


class InputSchema(msgspec.Struct, frozen=True):
    json: object


class ToolSpec(msgspec.Struct, frozen=True, rename="camel"):
    name: str
    description: str | UnsetType  # Converse refuses an empty description: leave it out
    input_schema: InputSchema


class ToolEntry(msgspec.Struct, frozen=True, rename="camel"):
    tool_spec: ToolSpec


class NamedTool(msgspec.Struct, frozen=True):
    name: str


class ToolChoice(msgspec.Struct, frozen=True):
    """One of ``{auto: {}}``, ``{any: {}}``, ``{tool: {name}}``."""

    auto: Empty | UnsetType = UNSET
    any: Empty | UnsetType = UNSET
    tool: NamedTool | UnsetType = UNSET


class ToolConfig(msgspec.Struct, frozen=True, rename="camel"):
    tools: list[ToolEntry]
    tool_choice: ToolChoice | UnsetType = UNSET


class OutputEffort(msgspec.Struct, frozen=True):
    effort: str


class AdditionalFields(msgspec.Struct, frozen=True, kw_only=True):
    """``additionalModelRequestFields`` for Anthropic models (their own snake_case names)."""

    thinking: Thinking | UnsetType = UNSET
    output_config: OutputEffort | UnsetType = UNSET
    anthropic_beta: list[str] | UnsetType = UNSET


class JsonSchemaFormat(msgspec.Struct, frozen=True):
    name: str
    schema: str  # the JSON Schema as a JSON string, as Bedrock wants it
    description: str | UnsetType = UNSET


class Structure(msgspec.Struct, frozen=True, rename="camel"):
    json_schema: JsonSchemaFormat


class TextFormat(msgspec.Struct, frozen=True):
    structure: Structure
    type: str = "json_schema"


class OutputConfig(msgspec.Struct, frozen=True, rename="camel"):
    text_format: TextFormat


class Body(msgspec.Struct, kw_only=True, rename="camel"):
    """The ConverseStream request body (the model id travels in the URL path)."""

    messages: list[Message]
    system: list[Text | CachePointBlock] | UnsetType = UNSET
    inference_config: InferenceConfig
    tool_config: ToolConfig | UnsetType = UNSET
    additional_model_request_fields: AdditionalFields | UnsetType = UNSET
    output_config: OutputConfig | UnsetType = UNSET


# ---- model families ---------------------------------------------------------------------------

_SEPARATORS: Final = re.compile(r"[\s_.:]+")
_ADAPTIVE: Final = (
    "opus-4-6",
    "opus-4-7",
    "opus-4-8",
    "opus-5",
    "sonnet-4-6",
    "sonnet-5",
    "fable-5",
)
_XHIGH: Final = ("opus-4-7", "opus-4-8", "opus-5", "sonnet-5", "fable-5")
_CACHING: Final = ("fable-5", "opus-5", "sonnet-5", "-4-", "claude-3-7-sonnet", "claude-3-5-haiku")
_STRUCTURED: Final = ("sonnet-4-5", "haiku-4-5", "opus-4-5", "opus-4-6", "sonnet-4-6", "sonnet-5")
"""Claude models the catalog marks ``supports_strict_mode`` (Bedrock structured outputs)."""


def _candidates(model: ModelDescriptor) -> tuple[str, ...]:
    values = [model.id.lower()]
    if model.name:
        values.append(model.name.lower())
    return tuple(v for value in values for v in (value, _SEPARATORS.sub("-", value)))


def _has(model: ModelDescriptor, needles: tuple[str, ...]) -> bool:
    return any(needle in c for c in _candidates(model) for needle in needles)


def is_claude(model: ModelDescriptor) -> bool:
    """An Anthropic Claude model (reasoning signatures, thinking, cache points)."""
    model_id = model.id.lower()
    name = (model.name or "").lower()
    return "anthropic.claude" in model_id or "anthropic/claude" in model_id or "claude" in name


def adaptive_thinking(model: ModelDescriptor) -> bool:
    """Claude models that take adaptive thinking with an effort (Opus 4.6+, Sonnet 4.6+)."""
    return is_claude(model) and _has(model, _ADAPTIVE)


def native_xhigh(model: ModelDescriptor) -> bool:
    """Adaptive Claude models whose effort scale has ``xhigh`` itself."""
    return _has(model, _XHIGH)


def prompt_caching(model: ModelDescriptor) -> bool:
    """Claude models that take explicit cache points (Nova caches on its own)."""
    return any("claude" in c for c in _candidates(model)) and _has(model, _CACHING)


def structured_outputs(model: ModelDescriptor) -> bool:
    """The model takes ``outputConfig.textFormat`` (JSON Schema constrained output): its
    ``supports_strict_mode`` (catalog, route or model) when written, else the known Claude
    models."""
    written = model.compat.supports_strict_mode
    if isinstance(written, bool):
        return written
    return is_claude(model) and _has(model, _STRUCTURED)
