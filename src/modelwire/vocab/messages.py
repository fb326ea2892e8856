"""Messages: an id, a role, typed content blocks and the source that produced them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar, Literal, TypeAlias

import msgspec

from .blocks import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ToolResultBlock,
)
from .chunks import ReplayEnvelope
from .ids import new_message_id

__all__ = [
    "ContextForm",
    "Message",
    "MessageSource",
    "ModelSource",
    "PluginSource",
    "Role",
    "SnapshotSection",
    "ToolSource",
    "UserSource",
    "assistant_message",
    "freeze_message",
    "message_has_image",
    "message_has_media",
    "system_message",
    "tool_result_message",
    "user_message",
]

Role: TypeAlias = Literal["system", "user", "assistant"]
"""Who speaks a message."""

ContextForm: TypeAlias = Literal["instructions", "catalog", "snapshot", "notice", "relay", "recall"]
"""What kind of information a plugin-sourced message is (semantic, never visual)."""


class SnapshotSection(msgspec.Struct, frozen=True):
    """One named section of a `snapshot` context form."""

    name: str
    text: str


class UserSource(msgspec.Struct, frozen=True, tag="user", tag_field="kind"):
    """Typed by the user."""

    kind: ClassVar[Literal["user"]] = "user"


class PluginSource(msgspec.Struct, frozen=True, tag="plugin", tag_field="kind", omit_defaults=True):
    """Produced by a plugin, optionally with a context form."""

    plugin: str
    form: ContextForm | None = None
    sections: tuple[SnapshotSection, ...] | None = None
    summary: str | None = None
    kind: ClassVar[Literal["plugin"]] = "plugin"


class ModelSource(msgspec.Struct, frozen=True, tag="model", tag_field="kind", omit_defaults=True):
    """Produced by a model: the provider route, the model id and adapter-private replay state."""

    provider: str
    model: str
    replay_state: ReplayEnvelope | None = None
    kind: ClassVar[Literal["model"]] = "model"


class ToolSource(msgspec.Struct, frozen=True, tag="tool", tag_field="kind"):
    """The result of the tool call `call_id`."""

    call_id: str
    kind: ClassVar[Literal["tool"]] = "tool"


MessageSource: TypeAlias = UserSource | PluginSource | ModelSource | ToolSource
"""Where a message came from, discriminated by `kind`."""


class Message(msgspec.Struct, frozen=True):
    """One immutable message shared by delivery, durable history and model requests."""

    id: str
    role: Role
    content: tuple[ContentBlock, ...]
    source: MessageSource

    def __post_init__(self) -> None:
        if type(self.content) is not tuple:
            msgspec.structs.force_setattr(self, "content", tuple(self.content))


def _blocks(content: str | Iterable[ContentBlock]) -> tuple[ContentBlock, ...]:
    if isinstance(content, str):
        return (TextBlock(content),)
    return tuple(content)


def user_message(
    content: str | Iterable[ContentBlock], source: MessageSource | None = None
) -> Message:
    """A new user message (fresh id) from text or blocks; the block sequence is copied."""
    return Message(new_message_id(), "user", _blocks(content), source or UserSource())


def system_message(text: str) -> Message:
    """A new system message holding one text block."""
    return Message(new_message_id(), "system", (TextBlock(text),), PluginSource("modelwire"))


def assistant_message(content: Iterable[ContentBlock], source: ModelSource) -> Message:
    """A new assistant message (fresh id) attributed to a model source."""
    return Message(new_message_id(), "assistant", tuple(content), source)


def tool_result_message(
    call_id: str, content: str | Iterable[ContentBlock], *, is_error: bool = False
) -> Message:
    """A user-role message carrying exactly one tool-result block for `call_id`."""
    block = ToolResultBlock(call_id, _blocks(content), is_error)
    return Message(new_message_id(), "user", (block,), ToolSource(call_id))


def freeze_message(message: Message) -> Message:
    """Import a message that already has an id; returns a detached copy with the same id."""
    return msgspec.structs.replace(message, content=tuple(message.content))


def message_has_media(content: Sequence[ContentBlock]) -> bool:
    """True when any block, or any block nested in a tool result, is a document or audio."""
    stack: list[ContentBlock] = list(content)
    while stack:
        block = stack.pop()
        if isinstance(block, (DocumentBlock, AudioBlock)):
            return True
        if isinstance(block, ToolResultBlock):
            stack.extend(block.content)
    return False


def message_has_image(content: Sequence[ContentBlock]) -> bool:
    """True when any block, or any block nested in a tool result, is an image (iterative walk)."""
    stack: list[ContentBlock] = list(content)
    while stack:
        block = stack.pop()
        if isinstance(block, ImageBlock):
            return True
        if isinstance(block, ToolResultBlock):
            stack.extend(block.content)
    return False
