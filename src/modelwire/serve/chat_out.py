"""modelwire's chunk stream out as OpenAI Chat Completions: `chat.completion` and SSE chunks.

Streaming follows the wire the `openai` SDK parses: a first chunk with `role`, then one
`chat.completion.chunk` per text, reasoning (`reasoning_content`, as DeepSeek and vLLM send it)
or tool-call delta (`tool_calls[k]` opened with its id, name and type, then argument text), a
chunk with `finish_reason`, a usage chunk (`choices: []`) when `stream_options.include_usage`
asked for it, and `data: [DONE]`. A failure after the stream started is an in-stream
`{"error": {...}}` event, which the SDK raises as `APIError`.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from .problems import error_body, failure_error

__all__ = ["ChatStream", "chat_completion", "chat_finish_reason", "chat_usage"]

_ENCODE: Final = msgspec.json.Encoder().encode
DONE: Final = b"data: [DONE]\n\n"
_CONTENT: Final = b'[{"index":0,"delta":{"content":'
_REASONING: Final = b'[{"index":0,"delta":{"reasoning_content":'
_TEXT_TAIL: Final = b'},"finish_reason":null,"logprobs":null}]}\n\n'


def chat_finish_reason(reason: FinishReason) -> str:
    """Chat Completions' `finish_reason` of a finish."""
    match reason.kind:
        case "tool-calls":
            return "tool_calls"
        case "max-tokens":
            return "length"
        case "error" if isinstance(reason, Error) and reason.failure.code == "CONTENT_FILTER":
            return "content_filter"
        case _:
            return "stop"


def chat_usage(usage: TokenUsage | None) -> dict[str, object] | None:
    """Chat Completions' `usage` object (prompt tokens are billed input, cache reads included)."""
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.billed_input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens or 0},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
    }


def chat_completion(
    response_id: str,
    model: str,
    created: int,
    blocks: Sequence[ContentBlock],
    reason: FinishReason,
    usage: TokenUsage | None,
) -> dict[str, object]:
    """The non-streaming `chat.completion` object of an assembled answer."""
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    reasoning = "".join(b.text for b in blocks if isinstance(b, ReasoningBlock))
    calls = [
        {"id": b.id, "type": "function", "function": {"name": b.name, "arguments": b.arguments}}
        for b in blocks
        if isinstance(b, ToolCallBlock)
    ]
    message: dict[str, object] = {"role": "assistant", "content": text or None, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = reasoning
    out: dict[str, object] = {
        "id": response_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": chat_finish_reason(reason),
                "logprobs": None,
            }
        ],
    }
    shaped = chat_usage(usage)
    if shaped is not None:
        out["usage"] = shaped
    return out


class ChatStream:
    """Encodes one answer's chunks as Chat Completions SSE bytes (see the module docstring)."""

    __slots__ = (
        "_created",
        "_head",
        "_id",
        "_include_usage",
        "_model",
        "_prefix_reasoning",
        "_prefix_text",
        "_tools",
        "_usage",
        "_where",
    )

    def __init__(
        self, response_id: str, model: str, created: int, include_usage: bool, where: str
    ) -> None:
        self._id, self._model, self._created = response_id, model, created
        self._include_usage = include_usage
        self._where = where
        self._tools: dict[int, int] = {}  # block index -> tool_calls index
        self._usage: TokenUsage | None = None
        self._head = (
            b'{"id":'
            + _ENCODE(response_id)
            + b',"object":"chat.completion.chunk","created":'
            + str(created).encode()
            + b',"model":'
            + _ENCODE(model)
            + b',"choices":'
        )
        self._prefix_text = b"data: " + self._head + _CONTENT
        self._prefix_reasoning = b"data: " + self._head + _REASONING

    def _event(self, choices: bytes, tail: bytes = b"") -> bytes:
        return b"data: " + self._head + choices + tail + b"}\n\n"

    def _delta(self, delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return self._event(b"[" + _ENCODE(choice) + b"]")

    @staticmethod
    def _text(prefix: bytes, text: str) -> bytes:
        # the hot path: one delta of text, spliced into prebuilt bytes (one allocation beside
        # the encoded text, no dict per chunk)
        return b"".join((prefix, _ENCODE(text), _TEXT_TAIL))

    def start(self) -> bytes:
        """The first chunk: the assistant role."""
        return self._delta({"role": "assistant", "content": ""})

    def push(self, chunk: StreamChunk) -> bytes:
        """The bytes of one chunk (empty when it has none on this wire)."""
        if isinstance(chunk, TextDelta):
            return self._text(self._prefix_text, chunk.text) if chunk.text else b""
        if isinstance(chunk, ReasoningDelta):
            return self._text(self._prefix_reasoning, chunk.text) if chunk.text else b""
        if isinstance(chunk, ToolCallDelta):
            return self._tool_delta(chunk)
        if isinstance(chunk, UsageChunk):
            self._usage = chunk.usage
            return b""
        if isinstance(chunk, Finish):
            return self._finish(chunk)
        if isinstance(chunk, BlockEnd) and isinstance(chunk.block, ToolCallBlock):
            return self._tool_end(chunk.index, chunk.block)
        if isinstance(chunk, (BlockStart, BlockEnd)):
            return b""
        return b""

    def _tool_delta(self, chunk: ToolCallDelta) -> bytes:
        slot = self._tools.get(chunk.index)
        if slot is None:
            slot = self._tools[chunk.index] = len(self._tools)
            call: dict[str, object] = {
                "index": slot,
                "id": chunk.id or "",
                "type": "function",
                "function": {"name": chunk.name or "", "arguments": chunk.arguments_delta},
            }
            return self._delta({"tool_calls": [call]})
        if not chunk.arguments_delta:
            return b""
        delta = {"index": slot, "function": {"arguments": chunk.arguments_delta}}
        return self._delta({"tool_calls": [delta]})

    def _tool_end(self, index: int, block: ToolCallBlock) -> bytes:
        if index in self._tools:
            return b""
        # a call that came whole (no deltas): open and fill it at once
        self._tools[index] = slot = len(self._tools)
        call = {
            "index": slot,
            "id": block.id,
            "type": "function",
            "function": {"name": block.name, "arguments": block.arguments},
        }
        return self._delta({"tool_calls": [call]})

    def _finish(self, chunk: Finish) -> bytes:
        reason = chunk.reason
        if isinstance(reason, Error) and reason.failure.code != "CONTENT_FILTER":
            error = failure_error(reason.failure, self._where)
            return b"data: " + _ENCODE(error_body("openai", error)) + b"\n\n"
        out = self._delta({}, chat_finish_reason(reason))
        if self._include_usage:
            usage = chat_usage(self._usage)
            out += self._event(b"[]", b',"usage":' + _ENCODE(usage))
        return out + DONE
