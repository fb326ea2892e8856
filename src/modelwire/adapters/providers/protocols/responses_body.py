"""The Responses API request body as msgspec structs (spec §4.4), and its effective switches.

Field order is the JSON key order and UNSET fields are omitted; a ``type`` tag is always the
first key of its object.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from .request import Reasoning

__all__ = [
    "INCLUDE_ENCRYPTED",
    "ApplyPatchCall",
    "ApplyPatchOutput",
    "ApplyPatchSpec",
    "Body",
    "CustomToolCall",
    "CustomToolOutput",
    "CustomToolSpec",
    "FunctionCall",
    "FunctionOutput",
    "GrammarInput",
    "InputImage",
    "InputPart",
    "InputText",
    "Item",
    "LocalShellCall",
    "LocalShellOutput",
    "LocalShellSpec",
    "OutputMessage",
    "OutputText",
    "ProviderToolSpec",
    "ResponsesCompat",
    "Role",
    "TextInput",
    "TextSignature",
    "ToolChoiceCustom",
    "ToolSpec",
]

INCLUDE_ENCRYPTED: Final = ["reasoning.encrypted_content"]
"""`include` whenever an effort is sent: reasoning items come back replayable."""


class ResponsesCompat(msgspec.Struct, frozen=True, kw_only=True):
    """The effective switches of one Responses model (pi-ai's defaults, configured over)."""

    supports_developer_role: bool = True
    supports_long_cache_retention: bool = True
    supports_strict_mode: bool = False


class TextSignature(msgspec.Struct, frozen=True):
    """A text block's replay signature ``{"v":1,"id":<item id>,"phase"?}``."""

    id: str | None = None
    phase: object = None  # sent back as it came


class InputText(msgspec.Struct, frozen=True, tag_field="type", tag="input_text"):
    text: str


class InputImage(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="input_image"):
    detail: str = "auto"
    image_url: str


class InputFile(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag="input_file",
):
    filename: str | None = None
    file_data: str | None = None
    file_url: str | None = None


InputPart: TypeAlias = InputText | InputImage | InputFile


class Role(msgspec.Struct, frozen=True):
    """A system, developer or user input item."""

    role: str
    content: str | list[InputPart]


class OutputText(msgspec.Struct, frozen=True, tag_field="type", tag="output_text"):
    text: str
    annotations: tuple[()] = ()


class OutputMessage(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="message"):
    role: Literal["assistant"] = "assistant"
    status: Literal["completed"] = "completed"
    id: str
    content: list[OutputText]
    phase: object = UNSET  # the text signature's phase, sent back as it came


class FunctionCall(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="function_call"
):
    call_id: str
    id: str | UnsetType = UNSET
    name: str
    arguments: str


class FunctionOutput(msgspec.Struct, frozen=True, tag_field="type", tag="function_call_output"):
    call_id: str
    output: str | list[InputPart]


class CustomToolCall(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="custom_tool_call"
):
    call_id: str
    name: str
    input: str


class CustomToolOutput(
    msgspec.Struct, frozen=True, tag_field="type", tag="custom_tool_call_output"
):
    call_id: str
    output: str | list[InputPart]


class ApplyPatchCall(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="apply_patch_call"
):
    call_id: str
    status: str = "completed"
    operation: object  # the patch operation, as the call carried it


class ApplyPatchOutput(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="apply_patch_call_output"
):
    call_id: str
    status: str  # completed | failed
    output: str


class LocalShellCall(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="local_shell_call"
):
    id: str
    call_id: str
    status: str = "completed"
    action: object  # the shell action, as the call carried it


class LocalShellOutput(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="local_shell_call_output"
):
    id: str  # the call's id (`call_id`), as the API reference names it
    output: str


Item: TypeAlias = (
    Role
    | OutputMessage
    | FunctionCall
    | FunctionOutput
    | CustomToolCall
    | CustomToolOutput
    | ApplyPatchCall
    | ApplyPatchOutput
    | LocalShellCall
    | LocalShellOutput
    | msgspec.Raw
)
"""One `input` item (a replayed reasoning item, or an item kept whole, is the stored JSON)."""


class ToolSpec(msgspec.Struct, frozen=True, tag_field="type", tag="function"):
    name: str
    description: str
    parameters: object  # the tool's JSON Schema, sent as given
    strict: bool | UnsetType = UNSET


class TextInput(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    """A custom tool's unconstrained free-text input."""


class GrammarInput(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="grammar"):
    """A custom tool's input constrained by a grammar (``lark`` or ``regex``)."""

    syntax: str
    definition: str


class CustomToolSpec(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="custom"):
    """A free-text tool (OpenAI custom tools)."""

    name: str
    description: str | UnsetType = UNSET
    format: TextInput | GrammarInput


class ApplyPatchSpec(msgspec.Struct, frozen=True, tag_field="type", tag="apply_patch"):
    """OpenAI's apply_patch client tool (``{"type": "apply_patch"}``); also its tool choice."""


class LocalShellSpec(msgspec.Struct, frozen=True, tag_field="type", tag="local_shell"):
    """OpenAI's local_shell client tool (``{"type": "local_shell"}``); also its tool choice."""


ProviderToolSpec: TypeAlias = ApplyPatchSpec | LocalShellSpec
"""A client tool the provider defines."""


class ToolChoiceCustom(msgspec.Struct, frozen=True, tag_field="type", tag="custom"):
    name: str


class JsonSchemaFormat(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="json_schema"
):
    name: str
    description: str | UnsetType = UNSET
    schema: object  # the caller's JSON Schema, sent as given
    strict: bool


class TextConfig(msgspec.Struct, frozen=True):
    format: JsonSchemaFormat


class ToolChoiceFunction(msgspec.Struct, frozen=True, tag_field="type", tag="function"):
    name: str


class Body(msgspec.Struct, kw_only=True):
    """The request body; the builder sets the optional fields."""

    model: str
    input: list[Item]
    stream: bool = True
    store: bool = False
    prompt_cache_key: str | UnsetType = UNSET
    prompt_cache_retention: str | UnsetType = UNSET
    max_output_tokens: int = 16
    temperature: float | UnsetType = UNSET
    tools: list[ToolSpec | CustomToolSpec | ProviderToolSpec] | UnsetType = UNSET
    reasoning: Reasoning | UnsetType = UNSET
    include: list[str] | UnsetType = UNSET
    text: TextConfig | UnsetType = UNSET
    tool_choice: str | ToolChoiceFunction | ToolChoiceCustom | ProviderToolSpec | UnsetType = UNSET
    parallel_tool_calls: bool | UnsetType = UNSET
