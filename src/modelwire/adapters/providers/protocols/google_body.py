"""The Gemini ``streamGenerateContent`` request body as msgspec structs (`google-generative-ai`).

Field names are the wire's own camelCase keys, field order is the JSON key order and UNSET fields are omitted. A
`Content` holds one role's parts; a part is one of text (a thought summary when ``thought``),
inline image data, a function call or a function response, each with the ``thoughtSignature``
the model attached to it where replay sends one back.

Gemini reads its JSON by the protobuf mapping, which takes a field by its camelCase name or its
proto (snake_case) name alike: `OWNED_FIELDS` holds both spellings of every field the body
writes (`generationConfig` and `generation_config`), so `provider_options` cannot override one
by the other spelling, and `one_spelling` refuses two `provider_options` keys naming one field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from ....errors import ErrorCode, LlmError

__all__ = [
    "OWNED_FIELDS",
    "Body",
    "Content",
    "FunctionCall",
    "FunctionCallPart",
    "FunctionCallingConfig",
    "FunctionDeclaration",
    "FunctionResponse",
    "FunctionResponsePart",
    "GenerationConfig",
    "InlineData",
    "InlinePart",
    "Part",
    "SystemInstruction",
    "TextPart",
    "ThinkingConfig",
    "ToolConfig",
    "Tools",
    "one_spelling",
]


class TextPart(msgspec.Struct, frozen=True, kw_only=True):
    """Text; ``thought`` marks a replayed thought summary."""

    thought: bool | UnsetType = UNSET
    text: str
    thoughtSignature: str | UnsetType = UNSET


class InlineData(msgspec.Struct, frozen=True):
    """Base64 bytes with their media type."""

    mimeType: str
    data: str


class InlinePart(msgspec.Struct, frozen=True):
    """An inline image."""

    inlineData: InlineData


class FunctionCall(msgspec.Struct, frozen=True, kw_only=True):
    """A replayed call: the name and its whole arguments object (``id`` only where required)."""

    name: str
    args: dict[str, object]
    id: str | UnsetType = UNSET


class FunctionCallPart(msgspec.Struct, frozen=True, kw_only=True):
    """A function call part and the signature it carried."""

    functionCall: FunctionCall
    thoughtSignature: str | UnsetType = UNSET


class FunctionResponse(msgspec.Struct, frozen=True, kw_only=True):
    """A tool result: ``response`` is ``{"output": text}`` or ``{"error": text}``; Gemini 3 nests
    the result's images in ``parts``."""

    name: str
    response: dict[str, str]
    parts: list[InlinePart] | UnsetType = UNSET
    id: str | UnsetType = UNSET


class FunctionResponsePart(msgspec.Struct, frozen=True):
    """A function response part."""

    functionResponse: FunctionResponse


class FileData(msgspec.Struct, frozen=True):
    """A file by URI with its media type."""

    mimeType: str
    fileUri: str


class FilePart(msgspec.Struct, frozen=True):
    """A document by URL (``fileData``)."""

    fileData: FileData


Part: TypeAlias = (
    TextPart | InlinePart | FilePart | FunctionCallPart | FunctionResponsePart | msgspec.Raw
)
"""One part of a content (a part kept whole, e.g. code execution, is its raw JSON)."""


class Content(msgspec.Struct, frozen=True):
    """One turn: ``user`` (text, images, function responses) or ``model``."""

    role: str
    parts: list[Part]


class SystemInstruction(msgspec.Struct, frozen=True):
    """The system prompt, as a content without a role."""

    parts: list[TextPart]


class FunctionDeclaration(msgspec.Struct, frozen=True):
    """A tool; its JSON Schema goes in ``parametersJsonSchema`` (full JSON Schema, as given)."""

    name: str
    description: str
    parametersJsonSchema: object


class Tools(msgspec.Struct, frozen=True):
    """The request's function declarations."""

    functionDeclarations: list[FunctionDeclaration]


class FunctionCallingConfig(msgspec.Struct, frozen=True, kw_only=True):
    """``mode`` AUTO / NONE / ANY; ``allowedFunctionNames`` narrows ANY to named tools."""

    mode: str
    allowedFunctionNames: list[str] | UnsetType = UNSET


class ToolConfig(msgspec.Struct, frozen=True):
    """The tool-choice wrapper."""

    functionCallingConfig: FunctionCallingConfig


class ThinkingConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Thinking: summaries on (``includeThoughts``) with a token budget (Gemini 2.x) or a level
    (Gemini 3, Gemma 4)."""

    includeThoughts: bool | UnsetType = UNSET
    thinkingBudget: int | UnsetType = UNSET
    thinkingLevel: str | UnsetType = UNSET


class GenerationConfig(msgspec.Struct, kw_only=True):
    """Sampling, the output cap, structured output and thinking."""

    maxOutputTokens: int
    temperature: float | UnsetType = UNSET
    responseMimeType: str | UnsetType = UNSET
    responseJsonSchema: object | UnsetType = UNSET
    thinkingConfig: ThinkingConfig | UnsetType = UNSET


class Body(msgspec.Struct, kw_only=True):
    """The request body; the builder sets the optional fields."""

    contents: list[Content]
    systemInstruction: SystemInstruction | UnsetType = UNSET
    tools: list[Tools] | UnsetType = UNSET
    toolConfig: ToolConfig | UnsetType = UNSET
    generationConfig: GenerationConfig


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _camel(name: str) -> str:
    return re.sub(r"_+([a-z0-9])", lambda m: m.group(1).upper(), name)


OWNED_FIELDS: Final = frozenset(
    {*Body.__struct_fields__, *(_snake(name) for name in Body.__struct_fields__)}
)
"""The top-level fields the body writes, in both spellings Gemini reads (see the docstring)."""


def one_spelling(keys: Iterable[str], route: str) -> None:
    """`INVALID_OPTION` when two `provider_options` keys are one Gemini field
    (``safetySettings`` and ``safety_settings``)."""
    seen: dict[str, str] = {}
    for key in keys:
        other = seen.setdefault(_camel(key), key)
        if other != key:
            raise LlmError(
                f'route "{route}": provider_options.{other} and provider_options.{key} are the '
                "same Gemini field; give it once",
                ErrorCode.INVALID_OPTION,
            )
