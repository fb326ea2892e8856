"""One streamed content block of a response (`BlockRecord`: open, deltas, close, its replay
entry) and where the parts a response keeps whole go in the replay envelope (`place_opaque`)."""

from __future__ import annotations

from ....vocab import (
    BlockEnd,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
)

__all__ = ["BlockRecord", "place_opaque"]


class BlockRecord:
    """One streamed content block: its kind, index, accumulated text and replay signatures."""

    __slots__ = (
        "call_type",
        "closed",
        "id",
        "index",
        "item",
        "kind",
        "name",
        "parts",
        "redacted",
        "signature",
    )

    def __init__(self, index: int, kind: str) -> None:
        self.index = index
        self.kind = kind  # "text" | "reasoning" | "tool-call"
        self.parts: list[str] = []
        self.signature: str | None = None  # thinking / text / thought signature
        self.redacted = False
        self.id = ""
        self.name = ""
        self.closed = False
        # a tool call that is not a JSON-arguments function call: `custom` (free-text input),
        # `apply_patch`, `local_shell`; with the provider's whole item (raw JSON) where it is
        # sent back as it came (Responses)
        self.call_type: str | None = None
        self.item: str | None = None

    def text_delta(self, piece: str, out: list[StreamChunk]) -> None:
        """Accumulate `piece` and emit it as a `text-delta`."""
        self.parts.append(piece)
        out.append(TextDelta(self.index, piece))

    def reasoning_delta(self, piece: str, out: list[StreamChunk]) -> None:
        """Accumulate `piece` and emit it as a `reasoning-delta`."""
        self.parts.append(piece)
        out.append(ReasoningDelta(self.index, piece))

    def arguments_delta(self, piece: str, out: list[StreamChunk]) -> None:
        """Accumulate a tool-argument fragment and emit it (with the call's id and name)."""
        self.parts.append(piece)
        out.append(ToolCallDelta(self.index, self.id, piece, self.name or None))

    def final(self) -> TextBlock | ReasoningBlock | ToolCallBlock:
        """The finished block from the accumulated parts (tool arguments default to `{}`)."""
        text = "".join(self.parts)
        if self.kind == "text":
            return TextBlock(text)
        if self.kind == "reasoning":
            return ReasoningBlock(text)
        if self.call_type == "custom":  # free-text input, as it came (may be empty)
            return ToolCallBlock(self.id, self.name, text)
        return ToolCallBlock(self.id, self.name, text or "{}")

    def close(
        self,
        out: list[StreamChunk],
        block: TextBlock | ReasoningBlock | ToolCallBlock | None = None,
    ) -> None:
        """Mark the block closed and emit its `block-end` (`block`, else the accumulated one)."""
        self.closed = True
        out.append(BlockEnd(self.index, self.final() if block is None else block))

    def replay_entry(self) -> dict[str, object]:
        """The per-block replay entry (`type` plus the signature field of its kind)."""
        if self.kind == "text":
            entry: dict[str, object] = {"type": "text"}
            if self.signature is not None:
                entry["text_signature"] = self.signature
            return entry
        if self.kind == "reasoning":
            entry = {"type": "reasoning"}
            if self.signature is not None:
                entry["thinking_signature"] = self.signature
            if self.redacted:
                entry["redacted"] = True
            return entry
        entry = {"type": "tool-call"}
        if self.signature is not None:
            entry["thought_signature"] = self.signature
        if self.call_type is not None:
            entry["call_type"] = self.call_type
        if self.item is not None:
            entry["item"] = self.item
        return entry


def place_opaque(
    opaque: list[tuple[int, str]],
    blocks: list[BlockRecord],
    entries: list[dict[str, object]],
    drops_calls: bool,
) -> list[str]:
    """Put each kept part on the entry of the block it precedes (``opaque``); the parts after the
    last block are returned (the tail). When the finish drops tool calls (max tokens), a part
    before a tool call moves on to the next block that stays."""
    tail: list[str] = []
    for at, raw in opaque:
        while drops_calls and at < len(blocks) and blocks[at].kind == "tool-call":
            at += 1
        if at >= len(entries):
            tail.append(raw)
            continue
        held = entries[at].setdefault("opaque", [])
        assert isinstance(held, list)
        held.append(raw)
    return tail
