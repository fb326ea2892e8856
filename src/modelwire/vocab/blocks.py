"""Content blocks: the typed pieces every message is made of (tagged by `type`)."""

from __future__ import annotations

from typing import ClassVar, Literal, TypeAlias

import msgspec

__all__ = [
    "BLOCK_TYPES",
    "ContentBlock",
    "ImageAttachmentRef",
    "ImageBlock",
    "MediaType",
    "ReasoningBlock",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
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


ContentBlock: TypeAlias = TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock
"""Any content block, discriminated by its `type` tag."""

BLOCK_TYPES: frozenset[str] = frozenset({"text", "reasoning", "image", "tool-call", "tool-result"})
"""The known content-block tags."""
