"""modelwire's chunk stream out as OpenAI Responses: the `response` object and its SSE events.

Streaming follows the wire the `openai` SDK parses: `response.created`, `response.in_progress`,
then per output item `response.output_item.added`, its part and delta events
(`response.output_text.delta`, `response.reasoning_summary_text.delta`,
`response.function_call_arguments.delta`) and their `.done` events, `response.output_item.done`,
and `response.completed` (or `response.incomplete` at the output cap, `response.failed` on a
failure) with the whole response; every event carries its `sequence_number`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from ..vocab import (
    BlockEnd,
    ContentBlock,
    Error,
    Finish,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from .problems import failure_error

__all__ = ["ResponsesStream", "responses_object", "responses_usage"]

_ENCODE: Final = msgspec.json.Encoder().encode
_EMPTY_TEXT: Final = TextBlock("")
_EMPTY_REASONING: Final = ReasoningBlock("")
_TEXT_HEAD: Final = (
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":'
)


def responses_usage(usage: TokenUsage | None) -> dict[str, object] | None:
    """Responses' `usage` object."""
    if usage is None:
        return None
    return {
        "input_tokens": usage.billed_input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens or 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
        "total_tokens": usage.total_tokens,
    }


def _item(block: ContentBlock, item_id: str, status: str = "completed") -> dict[str, object] | None:
    if isinstance(block, TextBlock):
        part = {"type": "output_text", "text": block.text, "annotations": []}
        return {
            "type": "message",
            "id": item_id,
            "status": status,
            "role": "assistant",
            "content": [part],
        }
    if isinstance(block, ReasoningBlock):
        return {
            "type": "reasoning",
            "id": item_id,
            "summary": [{"type": "summary_text", "text": block.text}],
        }
    if isinstance(block, ToolCallBlock):
        return {
            "type": "function_call",
            "id": item_id,
            "call_id": block.id,
            "name": block.name,
            "arguments": block.arguments,
            "status": status,
        }
    return None


def _status(reason: FinishReason | None) -> str:
    if reason is None:
        return "in_progress"
    if reason.kind == "max-tokens":
        return "incomplete"
    return "failed" if isinstance(reason, Error) else "completed"


def responses_object(
    response_id: str,
    model: str,
    created: int,
    blocks: Sequence[ContentBlock],
    reason: FinishReason | None,
    usage: TokenUsage | None,
    items: Sequence[dict[str, object]] | None = None,
) -> dict[str, object]:
    """The `response` object of an answer (`items`: its output items as streamed)."""
    if items is None:
        built = (_item(b, f"{response_id}_{i}") for i, b in enumerate(blocks))
        items = [item for item in built if item is not None]
    status = _status(reason)
    out: dict[str, object] = {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "model": model,
        "output": list(items),
        "usage": responses_usage(usage),
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    return out


class ResponsesStream:
    """Encodes one answer's chunks as Responses SSE bytes (see the module docstring)."""

    def __init__(self, response_id: str, model: str, created: int, where: str) -> None:
        self._id, self._model, self._created, self._where = response_id, model, created, where
        self._seq = 0
        self._prefixes: dict[int, bytes] = {}  # output index -> its text deltas' prebuilt head
        self._slots: dict[int, int] = {}  # chunk block index -> output index
        self._items: list[dict[str, object]] = []
        self._usage: TokenUsage | None = None

    def _event(self, kind: str, data: dict[str, object]) -> bytes:
        data = {"type": kind, **data, "sequence_number": self._seq}
        self._seq += 1
        return b"event: " + kind.encode() + b"\ndata: " + _ENCODE(data) + b"\n\n"

    def start(self) -> bytes:
        """`response.created` and `response.in_progress`."""
        response = responses_object(self._id, self._model, self._created, (), None, None, [])
        return self._event("response.created", {"response": response}) + self._event(
            "response.in_progress", {"response": response}
        )

    def _item_id(self, output: int) -> str:
        return f"{self._id}_{output}"

    def _open(self, index: int, block: ContentBlock) -> tuple[int, bytes]:
        slot = self._slots.get(index)
        if slot is not None:
            return slot, b""
        slot = self._slots[index] = len(self._slots)
        item = _item(block, self._item_id(slot), "in_progress")
        assert item is not None
        if isinstance(block, TextBlock):
            item["content"] = []
        elif isinstance(block, ReasoningBlock):
            item["summary"] = []
        self._items.append(item)
        out = self._event("response.output_item.added", {"output_index": slot, "item": item})
        ids = {"item_id": self._item_id(slot), "output_index": slot}
        if isinstance(block, TextBlock):
            part = {"type": "output_text", "text": "", "annotations": []}
            out += self._event(
                "response.content_part.added", {**ids, "content_index": 0, "part": part}
            )
        elif isinstance(block, ReasoningBlock):
            part = {"type": "summary_text", "text": ""}
            out += self._event(
                "response.reasoning_summary_part.added", {**ids, "summary_index": 0, "part": part}
            )
        return slot, out

    def push(self, chunk: StreamChunk) -> bytes:
        """The bytes of one chunk (empty when it has none on this wire)."""
        if isinstance(chunk, TextDelta):
            slot, out = self._open(chunk.index, _EMPTY_TEXT)
            if chunk.text:  # the hot path: spliced into prebuilt bytes (no dict per chunk)
                seq = str(self._seq).encode()
                self._seq += 1
                prefix = self._prefixes.get(slot)
                if prefix is None:
                    item = _ENCODE(self._item_id(slot)) + b',"output_index":' + str(slot).encode()
                    prefix = _TEXT_HEAD + item + b',"content_index":0,"delta":'
                    self._prefixes[slot] = prefix
                tail = b',"logprobs":[],"sequence_number":'
                return b"".join((out, prefix, _ENCODE(chunk.text), tail, seq, b"}\n\n"))
            return out
        if isinstance(chunk, ReasoningDelta):
            slot, out = self._open(chunk.index, _EMPTY_REASONING)
            ids = {"item_id": self._item_id(slot), "output_index": slot, "summary_index": 0}
            if chunk.text:
                out += self._event(
                    "response.reasoning_summary_text.delta", {**ids, "delta": chunk.text}
                )
            return out
        if isinstance(chunk, ToolCallDelta):
            slot, out = self._open(chunk.index, ToolCallBlock(chunk.id or "", chunk.name or "", ""))
            if chunk.arguments_delta:
                ids = {"item_id": self._item_id(slot), "output_index": slot}
                out += self._event(
                    "response.function_call_arguments.delta",
                    {**ids, "delta": chunk.arguments_delta},
                )
            return out
        if isinstance(chunk, BlockEnd):
            return self._end(chunk)
        if isinstance(chunk, UsageChunk):
            self._usage = chunk.usage
            return b""
        if isinstance(chunk, Finish):
            return self._finish(chunk.reason)
        return b""

    def _end(self, chunk: BlockEnd) -> bytes:
        block = chunk.block
        if not isinstance(block, (TextBlock, ReasoningBlock, ToolCallBlock)):
            return b""
        slot, out = self._open(chunk.index, block)
        ids = {"item_id": self._item_id(slot), "output_index": slot}
        item = _item(block, self._item_id(slot))
        assert item is not None
        if isinstance(block, TextBlock):
            part = {"type": "output_text", "text": block.text, "annotations": []}
            out += self._event(
                "response.output_text.done",
                {**ids, "content_index": 0, "text": block.text, "logprobs": []},
            )
            out += self._event(
                "response.content_part.done", {**ids, "content_index": 0, "part": part}
            )
        elif isinstance(block, ReasoningBlock):
            part = {"type": "summary_text", "text": block.text}
            out += self._event(
                "response.reasoning_summary_text.done",
                {**ids, "summary_index": 0, "text": block.text},
            )
            out += self._event(
                "response.reasoning_summary_part.done", {**ids, "summary_index": 0, "part": part}
            )
        else:
            out += self._event(
                "response.function_call_arguments.done",
                {**ids, "name": block.name, "arguments": block.arguments},
            )
        self._items[slot] = item
        return out + self._event("response.output_item.done", {"output_index": slot, "item": item})

    def _finish(self, reason: FinishReason) -> bytes:
        response = responses_object(
            self._id, self._model, self._created, (), reason, self._usage, self._items
        )
        if isinstance(reason, Error):
            error = failure_error(reason.failure, self._where)
            response["error"] = {"code": error.code, "message": error.message}
            return self._event("response.failed", {"response": response})
        kind = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
        return self._event(kind, {"response": response})
