"""The closed streaming chunk protocol, finish reasons and the replay envelope."""

from __future__ import annotations

from typing import ClassVar, Literal, TypeAlias

import msgspec

from .blocks import ContentBlock
from .json import JsonValue, freeze_json
from .usage import LlmFailure, TokenUsage

__all__ = [
    "Aborted",
    "BlockEnd",
    "BlockStart",
    "Error",
    "Finish",
    "FinishReason",
    "MaxTokens",
    "ReasoningDelta",
    "ReplayEnvelope",
    "Stop",
    "StreamChunk",
    "TextDelta",
    "ToolCallDelta",
    "ToolCalls",
    "UsageChunk",
    "is_token_delta",
]

BlockType: TypeAlias = str
"""A content-block tag named by `block-start` (`text`, `reasoning`, `tool-call`, or a plugin tag)."""


class ReplayEnvelope(msgspec.Struct, frozen=True, omit_defaults=True):
    """Adapter-private replay metadata: response-level facts plus optional per-block entries.

    Both halves are opaque lossless JSON, deep-frozen on construction; `blocks` aligns with the
    blocks the adapter emitted, in first-seen order.
    """

    response: JsonValue
    blocks: tuple[JsonValue, ...] | None = None

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "response", freeze_json(self.response))
        if self.blocks is not None:
            msgspec.structs.force_setattr(self, "blocks", freeze_json(self.blocks))


# ---- finish reasons --------------------------------------------------------------------------


class Stop(msgspec.Struct, frozen=True, tag="stop", tag_field="kind"):
    """The model finished normally."""

    kind: ClassVar[Literal["stop"]] = "stop"


class ToolCalls(msgspec.Struct, frozen=True, tag="tool-calls", tag_field="kind"):
    """The model stopped to have its tool calls executed."""

    kind: ClassVar[Literal["tool-calls"]] = "tool-calls"


class MaxTokens(msgspec.Struct, frozen=True, tag="max-tokens", tag_field="kind"):
    """The output cap cut the response off; tool calls are dropped as unsafe."""

    kind: ClassVar[Literal["max-tokens"]] = "max-tokens"


class Aborted(msgspec.Struct, frozen=True, tag="aborted", tag_field="kind"):
    """The call was cancelled by its caller."""

    failure: LlmFailure
    kind: ClassVar[Literal["aborted"]] = "aborted"


class Error(msgspec.Struct, frozen=True, tag="error", tag_field="kind"):
    """The call failed; `failure` says how."""

    failure: LlmFailure
    kind: ClassVar[Literal["error"]] = "error"


FinishReason: TypeAlias = Stop | ToolCalls | MaxTokens | Aborted | Error
"""Why a stream ended, discriminated by `kind`."""

# ---- chunks ----------------------------------------------------------------------------------


class BlockStart(msgspec.Struct, frozen=True, tag="block-start", tag_field="type", gc=False):
    """Opens the block at `index` with the given block type."""

    index: int
    block_type: BlockType
    type: ClassVar[Literal["block-start"]] = "block-start"


class TextDelta(msgspec.Struct, frozen=True, tag="text-delta", tag_field="type", gc=False):
    """Appends visible text to the block at `index`."""

    index: int
    text: str
    type: ClassVar[Literal["text-delta"]] = "text-delta"


class ReasoningDelta(
    msgspec.Struct, frozen=True, tag="reasoning-delta", tag_field="type", gc=False
):
    """Appends reasoning text to the block at `index`."""

    index: int
    text: str
    type: ClassVar[Literal["reasoning-delta"]] = "reasoning-delta"


class ToolCallDelta(
    msgspec.Struct,
    frozen=True,
    tag="tool-call-delta",
    tag_field="type",
    omit_defaults=True,
    gc=False,
):
    """Sets the call id (and name, when given) and appends raw JSON argument text."""

    index: int
    id: str | None
    arguments_delta: str
    name: str | None = None
    type: ClassVar[Literal["tool-call-delta"]] = "tool-call-delta"


class BlockEnd(msgspec.Struct, frozen=True, tag="block-end", tag_field="type", gc=False):
    """Closes the block at `index`, carrying the complete assembled block."""

    index: int
    block: ContentBlock
    type: ClassVar[Literal["block-end"]] = "block-end"


class UsageChunk(msgspec.Struct, frozen=True, tag="usage", tag_field="type", gc=False):
    """Token usage of the call; at most one, before `finish`."""

    usage: TokenUsage
    type: ClassVar[Literal["usage"]] = "usage"


class Finish(msgspec.Struct, frozen=True, tag="finish", tag_field="type", omit_defaults=True):
    """The terminal chunk: why the stream ended, plus optional replay state. Nothing follows."""

    reason: FinishReason
    replay_state: ReplayEnvelope | None = None
    type: ClassVar[Literal["finish"]] = "finish"


StreamChunk: TypeAlias = (
    BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk | Finish
)
"""The closed chunk union every adapter emits; exhaustive matches end in `assert_never`."""


def is_token_delta(chunk: StreamChunk) -> bool:
    """True for a chunk that carries a visible token (the "first token" boundary)."""
    if isinstance(chunk, (TextDelta, ReasoningDelta)):
        return chunk.text != ""
    if isinstance(chunk, ToolCallDelta):
        return chunk.arguments_delta != "" or chunk.name is not None
    return False
