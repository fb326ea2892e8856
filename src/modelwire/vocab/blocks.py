"""Content blocks: the typed pieces every message is made of (tagged by `type`)."""

from __future__ import annotations

from typing import ClassVar, Literal, TypeAlias

import msgspec

__all__ = [
    "AUDIO_MEDIA_TYPES",
    "BLOCK_TYPES",
    "DOCUMENT_MEDIA_TYPES",
    "AudioBlock",
    "ContentBlock",
    "DocumentBlock",
    "ImageAttachmentRef",
    "ImageBlock",
    "MediaType",
    "ReasoningBlock",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "media_label",
]

MediaType: TypeAlias = Literal["image/png", "image/jpeg", "image/webp", "image/gif"]
"""The image media types a durable attachment may have."""


class ImageAttachmentRef(msgspec.Struct, frozen=True, omit_defaults=True):
    """Durable reference to an image attachment: id, media type, exact byte length and pixel size."""

    attachment_id: str
    media_type: MediaType
    bytes: int
    width: int
    height: int
    name: str | None = None


class TextBlock(msgspec.Struct, frozen=True, tag="text", tag_field="type", gc=False):
    """User-visible text."""

    text: str
    type: ClassVar[str] = "text"


class ReasoningBlock(msgspec.Struct, frozen=True, tag="reasoning", tag_field="type", gc=False):
    """Thinking content, distinct from visible text."""

    text: str
    type: ClassVar[str] = "reasoning"


class ImageBlock(msgspec.Struct, frozen=True, tag="image", tag_field="type"):
    """An image, by durable attachment reference."""

    attachment: ImageAttachmentRef
    type: ClassVar[str] = "image"


DOCUMENT_MEDIA_TYPES: frozenset[str] = frozenset({"application/pdf", "text/plain"})
"""The document media types a `DocumentBlock` may have."""
AUDIO_MEDIA_TYPES: frozenset[str] = frozenset(
    {"audio/wav", "audio/x-wav", "audio/mpeg", "audio/mp3", "audio/flac", "audio/ogg", "audio/aac"}
)
"""The audio media types an `AudioBlock` may have (which a protocol takes: its adapter says)."""


class DocumentBlock(
    msgspec.Struct, frozen=True, tag="document", tag_field="type", omit_defaults=True
):
    """A document in a user message: a PDF or plain text, as its bytes (`data`) or by `url`
    (exactly one of them); `name` is the file name a provider shows (OpenAI's ``filename``).
    The session log keeps the bytes (base64 in JSON), so a resumed or replayed turn re-sends
    them exactly."""

    media_type: str
    data: bytes | None = None
    url: str | None = None
    name: str | None = None
    type: ClassVar[str] = "document"


class AudioBlock(msgspec.Struct, frozen=True, tag="audio", tag_field="type"):
    """Audio in a user message, as its bytes (``audio/wav``, ``audio/mpeg``, ...)."""

    media_type: str
    data: bytes
    type: ClassVar[str] = "audio"


class ToolCallBlock(msgspec.Struct, frozen=True, tag="tool-call", tag_field="type", gc=False):
    """A tool call; `arguments` is the raw JSON text the model produced, never parsed."""

    id: str
    name: str
    arguments: str
    type: ClassVar[str] = "tool-call"


class ToolResultBlock(
    msgspec.Struct, frozen=True, tag="tool-result", tag_field="type", omit_defaults=True
):
    """The result of one tool call, carried in a user-role message; content may nest blocks."""

    tool_call_id: str
    content: tuple[ContentBlock, ...]
    is_error: bool | None = None
    type: ClassVar[str] = "tool-result"

    def __post_init__(self) -> None:
        if type(self.content) is not tuple:
            msgspec.structs.force_setattr(self, "content", tuple(self.content))


ContentBlock: TypeAlias = (
    TextBlock
    | ReasoningBlock
    | ImageBlock
    | DocumentBlock
    | AudioBlock
    | ToolCallBlock
    | ToolResultBlock
)
"""Any content block, discriminated by its `type` tag."""

BLOCK_TYPES: frozenset[str] = frozenset(
    {"text", "reasoning", "image", "document", "audio", "tool-call", "tool-result"}
)
"""The known content-block tags."""


def media_label(block: DocumentBlock | AudioBlock) -> str:
    """A short label for a document or audio block (name or URL, media type, byte count)."""
    if isinstance(block, AudioBlock):
        return f"[audio: {block.media_type}, {len(block.data)} bytes]"
    where = block.name or block.url
    size = f", {len(block.data)} bytes" if block.data is not None else ""
    return f"[document{' ' + where if where else ''}: {block.media_type}{size}]"
