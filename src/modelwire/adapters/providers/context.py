"""Harness history → the neutral context the protocol builders read (spec §4.1).

The neutral shapes mirror pi-ai's: user content is a string or parts, assistant messages carry
their own (api, provider, model) so builders can tell same-model replay from foreign history,
and tool results are separate messages named after the call they answer.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeAlias

import msgspec

from ...errors import ErrorCode, LlmError
from ...vocab import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    ModelSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)
from ...vocab.json import MAX_JSON_DEPTH, json_nesting_exceeds

__all__ = [
    "FOREIGN_API",
    "NAssistant",
    "NAudio",
    "NContext",
    "NDocument",
    "NImage",
    "NMessage",
    "NPart",
    "NText",
    "NThinking",
    "NToolCall",
    "NToolResult",
    "NUser",
    "call_types",
    "foreign_assistant",
    "parse_arguments",
    "strip_surrogates",
    "to_context",
    "tool_call",
]

FOREIGN_API: Final = "dsh-foreign"
"""The api of history converted without trusted replay state (never a real protocol)."""


class NText(msgspec.Struct, frozen=True):
    """Text, with the replay signature a protocol attached to it."""

    text: str
    signature: str | None = None


class NThinking(msgspec.Struct, frozen=True):
    """Reasoning text with its signature; `redacted` keeps an opaque blob in `signature`."""

    text: str
    signature: str | None = None
    redacted: bool = False


class NToolCall(msgspec.Struct, frozen=True):
    """A tool call: id, name, parsed arguments object and an optional thought signature.

    A call of a tool that is not a plain JSON function has a `call_type`: ``custom`` (a
    free-text tool: `input` is its raw text), ``apply_patch`` or ``local_shell`` (the provider's
    client tools); `item` is the provider's whole item as it came (raw JSON), sent back as is to
    the same model."""

    id: str
    name: str
    arguments: dict[str, object]  # the parsed JSON object, re-encoded as is
    thought_signature: str | None = None
    call_type: str | None = None
    input: str | None = None
    item: str | None = None


class NImage(msgspec.Struct, frozen=True):
    """An image as base64 data with its media type."""

    mime: str
    data: str


class NDocument(msgspec.Struct, frozen=True):
    """A document: base64 `data` or a `url` (exactly one), its media type and file name."""

    mime: str
    data: str | None = None
    url: str | None = None
    name: str | None = None
    size: int = 0
    """The document's byte length (0 for a URL)."""


class NAudio(msgspec.Struct, frozen=True):
    """Audio as base64 data with its media type."""

    mime: str
    data: str


NPart: TypeAlias = NText | NImage | NDocument | NAudio
"""One part of a user message."""


class NUser(msgspec.Struct, frozen=True):
    """A user message: one string, or parts of text, images, documents and audio."""

    content: str | tuple[NPart, ...]


class NAssistant(msgspec.Struct, frozen=True, kw_only=True):
    """An assistant message and the (api, provider, model) that produced it; `opaque` holds the
    parts it kept whole (server-tool blocks, unknown items: their raw JSON), each with the index
    of the content part it precedes (``len(content)``: after the last one)."""

    content: tuple[NText | NThinking | NToolCall, ...]
    opaque: tuple[tuple[int, str], ...] = ()
    api: str
    provider: str
    model: str
    stop_reason: str
    response_id: str | None = None
    response_model: str | None = None


class NToolResult(msgspec.Struct, frozen=True, kw_only=True):
    """The result of one tool call, with the name of the call it answers."""

    tool_call_id: str
    tool_name: str
    content: tuple[NText | NImage, ...]
    is_error: bool = False


NMessage: TypeAlias = NUser | NAssistant | NToolResult
"""One neutral message."""


class NContext(msgspec.Struct, frozen=True):
    """A neutral request context: system prompt, messages and tool schemas."""

    system: str | None
    messages: tuple[NMessage, ...]
    tools: tuple[ToolSchema, ...]


_SURROGATES: Final = re.compile("[\ud800-\udfff]")


def strip_surrogates(text: str) -> str:
    """Drop unpaired UTF-16 surrogates (they cannot be encoded as UTF-8)."""
    return _SURROGATES.sub("", text) if _SURROGATES.search(text) else text


def parse_arguments(raw: str) -> dict[str, object]:
    """Parse tool-call arguments; malformed or non-object JSON becomes `{}`, and so do arguments
    nesting past `MAX_JSON_DEPTH` (the tool refused them already; never decoded)."""
    if not raw or json_nesting_exceeds(raw.encode("utf-8", "surrogatepass"), MAX_JSON_DEPTH):
        return {}
    try:
        return msgspec.json.decode(raw, type=dict[str, object])
    except msgspec.DecodeError:  # malformed, or valid JSON that is not an object
        return {}


ImageReader: TypeAlias = Callable[[ImageBlock], bytes]
"""Returns the bytes of an image block (already read from the attachment store)."""
Restorer: TypeAlias = Callable[[Message, ModelSource], NAssistant]
"""Rebuilds an assistant message from its replay state (or degrades it to foreign)."""


def tool_call(
    block: ToolCallBlock, call_type: str | None, signature: str | None = None
) -> NToolCall:
    """The neutral call of `block`: a free-text (``custom``) call keeps its raw text as input
    (its arguments are then ``{"input": <text>}`` for a protocol that only knows JSON)."""
    if call_type == "custom":
        text = block.arguments
        return NToolCall(block.id, block.name, {"input": text}, signature, "custom", text)
    return NToolCall(block.id, block.name, parse_arguments(block.arguments), signature, call_type)


def call_types(tools: Sequence[ToolSchema]) -> dict[str, str]:
    """The call type of each tool that is not a plain JSON function, by name."""
    out: dict[str, str] = {}
    for schema in tools:
        if schema.free_text is not None:
            out[schema.name] = "custom"
        elif schema.provider_tool is not None:
            out[schema.name] = schema.provider_tool
    return out


def foreign_assistant(message: Message, types: Mapping[str, str] | None = None) -> NAssistant:
    """Convert an assistant message without trusted replay state (`api: dsh-foreign`); `types`
    gives the call type of the request's non-function tools by name."""
    content: list[NText | NThinking | NToolCall] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            content.append(NText(block.text))
        elif isinstance(block, ReasoningBlock):
            content.append(NThinking(block.text))
        elif isinstance(block, ToolCallBlock):
            content.append(tool_call(block, (types or {}).get(block.name)))
        elif isinstance(block, ImageBlock):
            raise LlmError(
                "assistant image output cannot be sent to a model", "UNSUPPORTED_CONTENT"
            )
    source = message.source
    provider = source.provider if isinstance(source, ModelSource) else FOREIGN_API
    model = source.model if isinstance(source, ModelSource) else FOREIGN_API
    has_calls = any(isinstance(b, NToolCall) for b in content)
    return NAssistant(
        content=tuple(content),
        api=FOREIGN_API,
        provider=provider,
        model=model,
        stop_reason="toolUse" if has_calls else "stop",
    )


def _media(block: DocumentBlock | AudioBlock) -> NDocument | NAudio:
    if isinstance(block, AudioBlock):
        return NAudio(block.media_type, base64.b64encode(block.data).decode("ascii"))
    data = block.data
    encoded = None if data is None else base64.b64encode(data).decode("ascii")
    size = 0 if data is None else len(data)
    return NDocument(block.media_type, encoded, block.url, block.name, size)


def _flatten(
    blocks: Sequence[ContentBlock],
    read: ImageReader | None,
    out: list[NPart],
    drop_empty: bool,
) -> None:
    for block in blocks:
        if isinstance(block, TextBlock):
            if block.text or not drop_empty:
                out.append(NText(block.text))
        elif isinstance(block, ImageBlock):
            if read is None:
                raise LlmError(
                    "images need the durable attachment service to be sent to a model",
                    ErrorCode.UNSUPPORTED_CONTENT,
                )
            data = base64.b64encode(read(block)).decode("ascii")
            out.append(NImage(block.attachment.media_type, data))
        elif isinstance(block, (DocumentBlock, AudioBlock)):
            out.append(_media(block))
        elif isinstance(block, ToolResultBlock):
            _flatten(block.content, read, out, drop_empty)


def to_context(
    messages: Sequence[Message],
    *,
    system: str | None,
    tools: Sequence[ToolSchema],
    restore: Restorer,
    read_image: ImageReader | None,
) -> NContext:
    """Convert harness history into a neutral context (images read through `read_image`)."""
    out: list[NMessage] = []
    names: dict[str, str] = {}
    types = call_types(tools)
    for message in messages:
        if message.role == "system":
            text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
            out.append(NUser(text))
            continue
        if message.role == "assistant":
            source = message.source
            if isinstance(source, ModelSource) and source.replay_state is not None:
                assistant = restore(message, source)
                if assistant.api == FOREIGN_API and types:  # degraded: the call types still hold
                    assistant = foreign_assistant(message, types)
            else:
                assistant = foreign_assistant(message, types)
            for part in assistant.content:
                if isinstance(part, NToolCall):
                    names[part.id] = part.name
            out.append(assistant)
            continue
        parts: list[NPart] = []
        results: list[NToolResult] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                content: list[NPart] = []
                _flatten(block.content, read_image, content, True)
                if any(isinstance(p, (NDocument, NAudio)) for p in content):
                    raise LlmError(
                        "documents and audio are sent from user content, not from tool results",
                        ErrorCode.UNSUPPORTED_CONTENT,
                    )
                text = "".join(p.text for p in content if isinstance(p, NText))
                images = [p for p in content if isinstance(p, NImage)]
                merged: list[NText | NImage] = (
                    [NText(text or "(no output)")] if text or not images else []
                )
                results.append(
                    NToolResult(
                        tool_call_id=block.tool_call_id,
                        tool_name=names.get(block.tool_call_id, "unknown"),
                        content=(*merged, *images),
                        is_error=bool(block.is_error),
                    )
                )
            else:
                _flatten((block,), read_image, parts, read_image is not None)
        if parts or not results:
            if all(isinstance(p, NText) for p in parts):
                out.append(NUser("".join(p.text for p in parts if isinstance(p, NText))))
            else:
                out.append(NUser(tuple(parts)))
        out.extend(results)
    return NContext(system, tuple(out), tuple(tools))
