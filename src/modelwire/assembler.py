"""`BlockAssembler`: the one incremental fold of a chunk stream into blocks, usage and finish.

Rules R-ASM-1..19 of spec/core.md §3. Indexes are kept in order of first sight; streams may be
delta-only; the first `block-end` of an index is authoritative and later deltas are ignored; a
`max-tokens` finish drops tool calls and prunes the replay envelope in the same decision. Text and
argument fragments accumulate in lists that are joined once (and the join is cached), so the cost of
assembly is linear in the bytes received.
"""

from __future__ import annotations

from typing import Final

from .errors import ErrorCode, HarnessError, InvalidChunkError
from .never import assert_never
from .vocab.blocks import ContentBlock, ReasoningBlock, TextBlock, ToolCallBlock
from .vocab.chunks import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    MaxTokens,
    ReasoningDelta,
    ReplayEnvelope,
    Stop,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from .vocab.ids import new_message_id
from .vocab.messages import Message, MessageSource, PluginSource
from .vocab.usage import TokenUsage

__all__ = ["DEFAULT_ASSEMBLER_SOURCE", "BlockAssembler"]

DEFAULT_ASSEMBLER_SOURCE: Final = PluginSource("modelwire/assembler")
"""The source of `BlockAssembler.message()` when the caller names none."""

_STOP: Final = Stop()
_TEXT_TYPES: Final = frozenset({"text", "reasoning"})
# JS `String.prototype.trim` whitespace (R-ASM-15 / spec §9 item 6); Python's `str.strip()` would
# also strip U+001C..U+001F and U+0085, which JS keeps.
_JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


class _Partial:
    """The mutable accumulation state of one block index (private to the assembler)."""

    __slots__ = ("args", "block", "block_type", "cached", "index", "name", "texts", "tool_id")

    def __init__(self, index: int, block_type: str) -> None:
        self.index = index
        self.block_type = block_type
        self.texts: list[str] = []
        self.args: list[str] = []
        self.tool_id: str | None = None
        self.name: str | None = None
        self.block: ContentBlock | None = None
        # Assembled block of an open partial, valid until the next delta into it.
        self.cached: ContentBlock | None = None

    def text(self) -> str:
        """The accumulated text, joined once; the list collapses to the joined string."""
        texts = self.texts
        if len(texts) > 1:
            joined = "".join(texts)
            self.texts = [joined]
            return joined
        return texts[0] if texts else ""

    def arguments(self) -> str:
        """The accumulated raw argument JSON, joined once; the list collapses to the join."""
        args = self.args
        if len(args) > 1:
            joined = "".join(args)
            self.args = [joined]
            return joined
        return args[0] if args else ""

    def assemble(self) -> ContentBlock:
        """The block of this index: the stored `block-end` block, or one built from the deltas."""
        if self.block is not None:
            return self.block
        cached = self.cached
        if cached is not None:
            return cached
        block_type = self.block_type
        built: ContentBlock
        if block_type == "text":
            built = TextBlock(self.text())
        elif block_type == "reasoning":
            built = ReasoningBlock(self.text())
        elif block_type == "tool-call":
            built = ToolCallBlock(
                self.tool_id or f"call-{self.index}", self.name or "", self.arguments()
            )
        else:
            raise InvalidChunkError(
                f'cannot assemble incomplete block of type "{block_type}"', ErrorCode.INVALID_CHUNK
            )
        self.cached = built
        return built


class BlockAssembler:
    """Folds pushed `StreamChunk`s into content blocks, usage, finish reason and replay state.

    `push` is cheap and never raises for a known chunk type; `blocks()` and `replay_state` apply
    the single keep/drop decision (a `max-tokens` finish drops tool calls and prunes the aligned
    replay entries); `message()` wraps `blocks()` in a fresh assistant message.
    """

    __slots__ = ("_finish", "_order", "_partials", "_replay_state", "_usage")

    def __init__(self) -> None:
        self._partials: dict[int, _Partial] = {}
        self._order: list[int] = []
        self._usage: TokenUsage | None = None
        self._finish: FinishReason | None = None
        self._replay_state: ReplayEnvelope | None = None

    def _partial(self, index: int, block_type: str) -> _Partial:
        partial = _Partial(index, block_type)
        self._partials[index] = partial
        self._order.append(index)
        return partial

    def push(self, chunk: StreamChunk) -> None:
        """Fold one chunk in; an object that is not one of the seven chunk types raises."""
        match chunk:
            case TextDelta() | ReasoningDelta():
                partial = self._partials.get(chunk.index)
                if partial is None:
                    block_type = "text" if type(chunk) is TextDelta else "reasoning"
                    partial = self._partial(chunk.index, block_type)
                elif partial.block is not None:
                    return
                partial.texts.append(chunk.text)
                partial.cached = None
            case ToolCallDelta():
                partial = self._partials.get(chunk.index)
                if partial is None:
                    partial = self._partial(chunk.index, "tool-call")
                elif partial.block is not None:
                    return
                partial.tool_id = chunk.id
                if chunk.name:
                    partial.name = chunk.name
                partial.args.append(chunk.arguments_delta)
                partial.cached = None
            case BlockStart():
                if chunk.index not in self._partials:
                    self._partial(chunk.index, chunk.block_type)
            case BlockEnd():
                partial = self._partials.get(chunk.index)
                if partial is None:
                    partial = self._partial(chunk.index, chunk.block.type)
                if partial.block is None:
                    partial.block = chunk.block
                    # The stored block is final: the fragments are no longer needed.
                    partial.texts = []
                    partial.args = []
                    partial.cached = None
            case UsageChunk():
                self._usage = chunk.usage
            case Finish():
                self._finish = chunk.reason
                self._replay_state = chunk.replay_state
            case _:
                assert_never(chunk, "BlockAssembler.push", code=ErrorCode.INVALID_CHUNK)

    def _all_blocks(self) -> list[ContentBlock]:
        partials = self._partials
        out: list[ContentBlock] = []
        for index in self._order:
            partial = partials.get(index)
            if partial is None:
                raise HarnessError(
                    f"BlockAssembler invariant violated: no partial for index {index}",
                    ErrorCode.INVARIANT,
                )
            out.append(partial.assemble())
        return out

    def _drops_tool_calls(self) -> bool:
        return isinstance(self._finish, MaxTokens)

    def blocks(self) -> list[ContentBlock]:
        """The assembled blocks in first-seen order; a `max-tokens` finish drops tool calls."""
        assembled = self._all_blocks()
        if self._drops_tool_calls():
            return [b for b in assembled if not isinstance(b, ToolCallBlock)]
        return assembled

    def interrupted_blocks(self) -> list[ContentBlock]:
        """The text and reasoning blocks worth keeping after an interruption (never tool calls).

        Open blocks of unknown type are skipped silently; whitespace-only text is dropped.
        """
        out: list[ContentBlock] = []
        for index in self._order:
            partial = self._partials.get(index)
            if partial is None:
                continue
            block = partial.block
            if block is None:
                if partial.block_type not in _TEXT_TYPES:
                    continue
                block = partial.assemble()
            if isinstance(block, (TextBlock, ReasoningBlock)) and block.text.strip(_JS_WHITESPACE):
                out.append(block)
        return out

    @property
    def usage(self) -> TokenUsage | None:
        """The last pushed usage, or None before any `usage` chunk."""
        return self._usage

    @property
    def finish(self) -> FinishReason:
        """The last pushed finish reason, or `Stop()` when no `finish` chunk arrived."""
        finish = self._finish
        return _STOP if finish is None else finish

    @property
    def replay_state(self) -> ReplayEnvelope | None:
        """The last finish's replay envelope, pruned by the same decision as `blocks()`.

        Absent envelope → None; envelope without `blocks` → unchanged; misaligned `blocks` (count
        differs from the assembled blocks before dropping) → None; nothing dropped → unchanged;
        otherwise a new envelope holding the entries at the kept positions.
        """
        envelope = self._replay_state
        if envelope is None:
            return None
        assembled = self._all_blocks()
        entries = envelope.blocks
        if entries is None:
            return envelope
        if len(entries) != len(assembled):
            return None
        if not self._drops_tool_calls():
            return envelope
        kept = tuple(
            entry
            for entry, block in zip(entries, assembled, strict=True)
            if not isinstance(block, ToolCallBlock)
        )
        if len(kept) == len(entries):
            return envelope
        return ReplayEnvelope(envelope.response, kept)

    def message(self, source: MessageSource | None = None) -> Message:
        """A fresh assistant message (new id) holding `blocks()`, from `source` or the default."""
        return Message(
            new_message_id(),
            "assistant",
            tuple(self.blocks()),
            DEFAULT_ASSEMBLER_SOURCE if source is None else source,
        )
