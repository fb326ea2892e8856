"""The Mistral ``v1/chat/completions`` request body as msgspec structs, and its tool-call ids.

Field order is the JSON key order and UNSET fields are omitted; a ``type``/``role`` tag is
always the first key of its object. Mistral's own content chunks (``text``, ``thinking``,
``image_url``) replace the OpenAI parts, so a replayed Magistral turn carries its reasoning as a
``thinking`` chunk beside its text.

Mistral accepts only tool-call ids of exactly nine ``[a-zA-Z0-9]`` characters: `ToolIds` maps
every id of one request to that form (pi-ai's short hash), without collisions, so a call and
the result answering it always carry the same id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "AssistantChunk",
    "AssistantMessage",
    "Body",
    "Function",
    "FunctionSpec",
    "ImageChunk",
    "JsonSchemaSpec",
    "Message",
    "NamedFunction",
    "ResponseFormat",
    "SystemMessage",
    "TextChunk",
    "ThinkingChunk",
    "ToolCall",
    "ToolChoiceFunction",
    "ToolIds",
    "ToolMessage",
    "ToolSpec",
    "UserChunk",
    "UserMessage",
    "mistral_tool_id",
    "short_hash",
]

TOOL_ID_LENGTH: Final = 9
_NOT_ALNUM: Final = re.compile(r"[^a-zA-Z0-9]")
_DIGITS: Final = "0123456789abcdefghijklmnopqrstuvwxyz"
_M32: Final = 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    return (a * b) & _M32


def _base36(n: int) -> str:
    out = []
    while True:
        n, r = divmod(n, 36)
        out.append(_DIGITS[r])
        if not n:
            return "".join(reversed(out))


def short_hash(text: str) -> str:
    """pi-ai's `shortHash` (two 32-bit multiplicative hashes over UTF-16 code units, base 36)."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    units = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(units), 2):
        ch = units[i] | (units[i + 1] << 8)
        h1 = _imul(h1 ^ ch, 2654435761)
        h2 = _imul(h2 ^ ch, 1597334677)
    h1 = _imul(h1 ^ (h1 >> 16), 2246822507) ^ _imul(h2 ^ (h2 >> 13), 3266489909)
    h2 = _imul(h2 ^ (h2 >> 16), 2246822507) ^ _imul(h1 ^ (h1 >> 13), 3266489909)
    return _base36(h2) + _base36(h1)


def mistral_tool_id(raw: str, attempt: int = 0) -> str:
    """The 9-character form of `raw` (its alphanumerics when exactly nine remain, else a hash;
    `attempt` > 0 gives the next candidate after a collision)."""
    kept = _NOT_ALNUM.sub("", raw)
    if attempt == 0 and len(kept) == TOOL_ID_LENGTH:
        return kept
    seed = kept or raw
    if attempt:
        seed = f"{seed}:{attempt}"
    return _NOT_ALNUM.sub("", short_hash(seed))[:TOOL_ID_LENGTH].rjust(TOOL_ID_LENGTH, "0")


class ToolIds:
    """The tool-call ids of one request in Mistral's form: deterministic, collision-free (an id
    already valid keeps itself; a normalized one never takes an id another call owns)."""

    __slots__ = ("_ids", "_owners")

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._ids: dict[str, str] = {}
        self._owners: dict[str, str] = {}
        for raw in reserved:  # valid ids first: a hashed id never displaces one of them
            if len(raw) == TOOL_ID_LENGTH and not _NOT_ALNUM.search(raw):
                self._ids.setdefault(raw, raw)
                self._owners.setdefault(raw, raw)

    def __call__(self, raw: str) -> str:
        """The Mistral id of `raw` (the same answer for the same `raw`, every time)."""
        found = self._ids.get(raw)
        if found is not None:
            return found
        attempt = 0
        while True:
            candidate = mistral_tool_id(raw, attempt)
            if candidate not in self._owners:
                self._ids[raw] = candidate
                self._owners[candidate] = raw
                return candidate
            attempt += 1


class TextChunk(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    """A text content chunk."""

    text: str


class ImageChunk(msgspec.Struct, frozen=True, tag_field="type", tag="image_url"):
    """An image as a data URL (Mistral takes the URL string itself)."""

    image_url: str


class ThinkingChunk(msgspec.Struct, frozen=True, tag_field="type", tag="thinking"):
    """A replayed reasoning chunk: its text as nested text chunks."""

    thinking: list[TextChunk]


UserChunk: TypeAlias = TextChunk | ImageChunk
"""One part of a user or tool message."""
AssistantChunk: TypeAlias = TextChunk | ThinkingChunk
"""One part of an assistant message."""


class SystemMessage(msgspec.Struct, frozen=True, tag_field="role", tag="system"):
    """The system prompt."""

    content: str


class UserMessage(msgspec.Struct, frozen=True, tag_field="role", tag="user"):
    """A user message: one string or chunks."""

    content: str | list[UserChunk]


class Function(msgspec.Struct, frozen=True):
    """A replayed call's function: name and arguments as a JSON string."""

    name: str
    arguments: str


class ToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """A replayed tool call (its id already in Mistral's 9-character form)."""

    id: str
    type: str = "function"
    function: Function


class AssistantMessage(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="role", tag="assistant"
):
    """A replayed assistant turn: content chunks and/or tool calls."""

    content: list[AssistantChunk] | UnsetType = UNSET
    tool_calls: list[ToolCall] | UnsetType = UNSET


class ToolMessage(msgspec.Struct, frozen=True, kw_only=True, tag_field="role", tag="tool"):
    """A tool result, answering the call with the same (normalized) id."""

    tool_call_id: str
    name: str
    content: list[UserChunk]


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage
"""One wire message."""


class FunctionSpec(msgspec.Struct, frozen=True):
    """A tool's function declaration."""

    name: str
    description: str
    parameters: object  # the tool's JSON Schema, sent as given
    strict: bool = False


class ToolSpec(msgspec.Struct, frozen=True, tag_field="type", tag="function"):
    """A tool the model may call."""

    function: FunctionSpec


class NamedFunction(msgspec.Struct, frozen=True):
    """The function a named tool choice forces."""

    name: str


class ToolChoiceFunction(msgspec.Struct, frozen=True, tag_field="type", tag="function"):
    """A tool choice naming one function."""

    function: NamedFunction


class JsonSchemaSpec(msgspec.Struct, frozen=True, kw_only=True):
    """The schema of a structured answer (Mistral honours `strict`)."""

    name: str
    description: str | UnsetType = UNSET
    schema: object  # the caller's JSON Schema, sent as given
    strict: bool


class ResponseFormat(msgspec.Struct, frozen=True, tag_field="type", tag="json_schema"):
    """``response_format`` for structured output."""

    json_schema: JsonSchemaSpec


class Body(msgspec.Struct, kw_only=True):
    """The request body; the builder sets the optional fields it sends."""

    model: str
    stream: bool = True
    messages: list[Message]
    tools: list[ToolSpec] | UnsetType = UNSET
    temperature: float | UnsetType = UNSET
    max_tokens: int | UnsetType = UNSET
    tool_choice: str | ToolChoiceFunction | UnsetType = UNSET
    parallel_tool_calls: bool | UnsetType = UNSET
    response_format: ResponseFormat | UnsetType = UNSET
    prompt_mode: str | UnsetType = UNSET
    reasoning_effort: str | UnsetType = UNSET
    prompt_cache_key: str | UnsetType = UNSET
