"""modelwire's chunk stream out as Anthropic Messages: the `message` object and its SSE events.

Streaming follows the wire the `anthropic` SDK parses: `message_start`, per block
`content_block_start` / `content_block_delta` (`text_delta`, `thinking_delta`,
`input_json_delta`) / `content_block_stop`, then `message_delta` (stop reason and usage) and
`message_stop`; a failure after the stream started is an `error` event. A thinking block's
signature (`replaystate.py`) exists only once the answer finished, so its `signature_delta` and
`content_block_stop` come right before `message_delta` (the SDK addresses blocks by index).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from ..vocab import (
    BlockEnd,
    BlockStart,
    ContentBlock,
    Error,
    Finish,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    ReplayEnvelope,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from .problems import error_body, failure_error
from .replaystate import mint_signature

__all__ = ["MessagesStream", "messages_message", "messages_stop_reason", "messages_usage"]

_ENCODE: Final = msgspec.json.Encoder().encode
_DECODE: Final = msgspec.json.Decoder()
_TEXT_BLOCK: Final[Mapping[str, object]] = {"type": "text", "text": ""}
_THINKING_BLOCK: Final[Mapping[str, object]] = {"type": "thinking", "thinking": "", "signature": ""}
_TEXT_HEAD: Final = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'
_TEXT_MID: Final = b',"delta":{"type":"text_delta","text":'


def messages_stop_reason(reason: FinishReason) -> str:
    """Messages' `stop_reason` of a finish."""
    match reason.kind:
        case "tool-calls":
            return "tool_use"
        case "max-tokens":
            return "max_tokens"
        case "error" if isinstance(reason, Error) and reason.failure.code == "CONTENT_FILTER":
            return "refusal"
        case _:
            return "end_turn"


def messages_usage(usage: TokenUsage | None) -> dict[str, object]:
    """Messages' `usage` object (uncached input, cache reads and writes apart, as Anthropic)."""
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens or 0,
        "cache_creation_input_tokens": usage.cache_write_tokens or 0,
    }


def _input(arguments: str) -> object:
    try:
        return _DECODE.decode(arguments or "{}")
    except msgspec.DecodeError:
        return {}


def messages_message(
    message_id: str,
    model: str,
    blocks: Sequence[ContentBlock],
    reason: FinishReason,
    usage: TokenUsage | None,
    signature: str,
) -> dict[str, object]:
    """The non-streaming `message` object of an assembled answer (`signature` on its thinking)."""
    content: list[dict[str, object]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            content.append({"type": "text", "text": block.text})
        elif isinstance(block, ReasoningBlock):
            content.append({"type": "thinking", "thinking": block.text, "signature": signature})
        elif isinstance(block, ToolCallBlock):
            content.append(
                {
                    "type": "tool_use",
                    "id": block.id,
                    "name": block.name,
                    "input": _input(block.arguments),
                }
            )
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": messages_stop_reason(reason),
        "stop_sequence": None,
        "usage": messages_usage(usage),
    }


def _event(name: bytes, data: Mapping[str, object]) -> bytes:
    return b"event: " + name + b"\ndata: " + _ENCODE(data) + b"\n\n"


class MessagesStream:
    """Encodes one answer's chunks as Messages SSE bytes (see the module docstring)."""

    __slots__ = (
        "_id",
        "_model",
        "_open",
        "_prefixes",
        "_provider",
        "_slots",
        "_thinking",
        "_usage",
        "_where",
    )

    def __init__(self, message_id: str, model: str, provider: str, target_model: str) -> None:
        self._id, self._model = message_id, model
        self._provider, self._where = provider, f"{provider}:{target_model}"
        self._slots: dict[int, int] = {}  # chunk block index -> Messages content index
        self._open: dict[int, str] = {}  # content index -> block kind, still open
        self._thinking: list[int] = []  # thinking blocks ended, waiting for their signature
        self._usage: TokenUsage | None = None
        self._prefixes: dict[int, bytes] = {}  # content index -> its text deltas' prebuilt head

    def start(self) -> bytes:
        """`message_start`."""
        message = messages_message(self._id, self._model, (), Stop(), None, "")
        message["stop_reason"] = None
        return _event(b"message_start", {"type": "message_start", "message": message})

    def _slot(self, index: int, block: Mapping[str, object]) -> tuple[int, bytes]:
        slot = self._slots.get(index)
        if slot is not None:
            return slot, b""
        slot = self._slots[index] = len(self._slots)
        self._open[slot] = str(block["type"])
        start = {"type": "content_block_start", "index": slot, "content_block": block}
        return slot, _event(b"content_block_start", start)

    def _delta(self, slot: int, delta: dict[str, object]) -> bytes:
        return _event(
            b"content_block_delta", {"type": "content_block_delta", "index": slot, "delta": delta}
        )

    def push(self, chunk: StreamChunk) -> bytes:
        """The bytes of one chunk (empty when it has none on this wire)."""
        if isinstance(chunk, TextDelta):
            slot, head = self._slot(chunk.index, _TEXT_BLOCK)
            if not chunk.text:
                return head
            # the hot path: one delta of text, spliced into prebuilt bytes (no dict per chunk)
            prefix = self._prefixes.get(slot)
            if prefix is None:
                prefix = self._prefixes[slot] = _TEXT_HEAD + str(slot).encode() + _TEXT_MID
            return b"".join((head, prefix, _ENCODE(chunk.text), b"}}\n\n"))
        if isinstance(chunk, ReasoningDelta):
            slot, head = self._slot(chunk.index, _THINKING_BLOCK)
            if not chunk.text:
                return head
            return head + self._delta(slot, {"type": "thinking_delta", "thinking": chunk.text})
        if isinstance(chunk, ToolCallDelta):
            block = {
                "type": "tool_use",
                "id": chunk.id or "",
                "name": chunk.name or "",
                "input": {},
            }
            slot, head = self._slot(chunk.index, block)
            if not chunk.arguments_delta:
                return head
            return head + self._delta(
                slot, {"type": "input_json_delta", "partial_json": chunk.arguments_delta}
            )
        if isinstance(chunk, BlockEnd):
            return self._end(chunk)
        if isinstance(chunk, UsageChunk):
            self._usage = chunk.usage
            return b""
        if isinstance(chunk, Finish):
            return self._finish(chunk)
        if isinstance(chunk, BlockStart):
            return b""
        return b""

    def _end(self, chunk: BlockEnd) -> bytes:
        block = chunk.block
        head = b""
        if chunk.index not in self._slots:  # a block that came whole: open it first
            if isinstance(block, TextBlock):
                slot, head = self._slot(chunk.index, {"type": "text", "text": ""})
                head += self._delta(slot, {"type": "text_delta", "text": block.text})
            elif isinstance(block, ReasoningBlock):
                slot, head = self._slot(
                    chunk.index, {"type": "thinking", "thinking": "", "signature": ""}
                )
                head += self._delta(slot, {"type": "thinking_delta", "thinking": block.text})
            elif isinstance(block, ToolCallBlock):
                start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
                slot, head = self._slot(chunk.index, start)
                head += self._delta(
                    slot, {"type": "input_json_delta", "partial_json": block.arguments}
                )
            else:
                return b""
        slot = self._slots[chunk.index]
        if self._open.get(slot) == "thinking":
            self._thinking.append(slot)
            return head
        self._open.pop(slot, None)
        return head + _event(b"content_block_stop", {"type": "content_block_stop", "index": slot})

    def _close_thinking(self, envelope: ReplayEnvelope | None, model: str) -> bytes:
        signature = mint_signature(self._provider, model, envelope)
        out = b""
        for slot in self._thinking:
            out += self._delta(slot, {"type": "signature_delta", "signature": signature})
            out += _event(b"content_block_stop", {"type": "content_block_stop", "index": slot})
            self._open.pop(slot, None)
        self._thinking.clear()
        return out

    def _finish(self, chunk: Finish) -> bytes:
        reason = chunk.reason
        if isinstance(reason, Error) and reason.failure.code != "CONTENT_FILTER":
            error = failure_error(reason.failure, self._where)
            return _event(b"error", error_body("anthropic", error))
        out = self._close_thinking(chunk.replay_state, self._where.split(":", 1)[1])
        for slot in list(self._open):
            out += _event(b"content_block_stop", {"type": "content_block_stop", "index": slot})
        self._open.clear()
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": messages_stop_reason(reason), "stop_sequence": None},
            "usage": messages_usage(self._usage),
        }
        return (
            out
            + _event(b"message_delta", delta)
            + _event(b"message_stop", {"type": "message_stop"})
        )
