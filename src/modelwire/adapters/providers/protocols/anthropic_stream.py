"""`anthropic-messages` streaming: Messages API SSE events → chunks (spec §4.5).

Blocks follow the provider's `index`. Server-tool blocks (``server_tool_use``, the
``*_tool_result`` blocks, MCP and container blocks) and block types this translator does not
know are no content blocks: each is kept whole in the replay envelope (byte-exact as it came, or
with its streamed ``input`` parsed into it), so a replay to the same model sends it back; an
unknown block, delta or event type is reported, never an error. A response made only of such
blocks is content (a plain stop), not EMPTY_RESPONSE. ``message_stop`` completes the response:
without a ``stop_reason`` before it, the finish is inferred.
Usage: `message_start` sets all buckets, `message_delta` overwrites every non-null field (its
`input_tokens` is final). Thinking signatures are the concatenated `signature_delta`s, redacted
thinking keeps its `data` blob byte-exact.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ....errors import ErrorCode
from ....vocab import StreamChunk
from ....vocab.usage import TokenCount
from ....wire.sse import SseEvent
from .common import (
    BlockRecord,
    ResponseRecord,
    StopReason,
    end_stream,
    error_type_code,
    malformed_event,
)

__all__ = ["REDACTED_THINKING_TEXT", "AnthropicTranslator", "anthropic_error_code"]

REDACTED_THINKING_TEXT: Final = "[Reasoning redacted]"
"""The text a redacted thinking block carries (its opaque data rides in replay state)."""


class _OutDetails(msgspec.Struct, gc=False):
    thinking_tokens: TokenCount | None = None


class _Usage(msgspec.Struct, gc=False):
    input_tokens: TokenCount | None = None
    output_tokens: TokenCount | None = None
    cache_read_input_tokens: TokenCount | None = None
    cache_creation_input_tokens: TokenCount | None = None
    output_tokens_details: _OutDetails | None = None


class _Message(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    usage: _Usage | None = None


class _Block(msgspec.Struct, gc=False):
    type: str = ""
    id: str | None = None
    name: str | None = None
    data: str | None = None
    input: msgspec.Raw = msgspec.Raw(b"")


class _Delta(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    partial_json: str | None = None
    signature: str | None = None
    stop_reason: str | None = None


class _Error(msgspec.Struct, gc=False):
    type: str | None = None
    message: str | None = None


class _Event(msgspec.Struct, gc=False):
    type: str = ""
    index: int | None = None
    message: _Message | None = None
    content_block: msgspec.Raw = msgspec.Raw(b"")
    delta: _Delta | None = None
    usage: _Usage | None = None
    error: _Error | None = None


_DECODE: Final = msgspec.json.Decoder(_Event).decode
_BLOCK: Final = msgspec.json.Decoder(_Block).decode
_ENCODE: Final = msgspec.json.encode
_KEPT_BLOCKS: Final = frozenset(
    {
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    }
)
"""Blocks of server tools: no content block, kept whole and sent back (not reported)."""
_EVENTS: Final = frozenset(
    {
        "content_block_delta",
        "content_block_start",
        "content_block_stop",
        "message_start",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)
_DELTAS: Final = frozenset(
    {"text_delta", "thinking_delta", "input_json_delta", "signature_delta", "citations_delta"}
)
_STOPS: Final[dict[str, StopReason]] = {
    "end_turn": "stop",
    "pause_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
}


def anthropic_error_code(error_type: str | None) -> str | None:
    """The failure code an Anthropic `error.type` implies (`overloaded_error` → SERVER), if known."""
    return error_type_code(error_type)


class AnthropicTranslator:
    """Folds Anthropic Messages stream events into chunks; `end()` emits usage and finish."""

    __slots__ = ("_by_index", "_initial", "_kept", "_record", "done")

    def __init__(self, record: ResponseRecord) -> None:
        self._record = record
        self._by_index: dict[int, BlockRecord] = {}
        # blocks kept whole, by index: (place among the blocks, raw start block, input pieces)
        self._kept: dict[int, tuple[int, bytes, list[str]]] = {}
        self.done = False  # a terminal event arrived: the response is complete, stop reading
        # tool inputs that arrived whole in `content_block_start` (programmatic tool calling),
        # by index: they are the arguments unless `input_json_delta`s follow
        self._initial: dict[int, str] = {}

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one SSE event, appending its chunks to `out`."""
        data = event.data
        if not data or data == "[DONE]" or self.done:
            return
        try:
            ev = _DECODE(data)
        except msgspec.DecodeError as exc:
            if event.event == "error":
                self._fail(data, None)
                return
            raise malformed_event(self._record, "Anthropic", exc) from exc
        kind = ev.type or event.event or ""
        record = self._record
        if kind == "content_block_delta":
            block = self._by_index.get(ev.index if ev.index is not None else -1)
            delta = ev.delta
            if delta is None:
                return
            dtype = delta.type
            if dtype not in _DELTAS:
                record.note_unknown(f"delta:{dtype or '(untyped)'}")
                return
            if block is None:
                kept = self._kept.get(ev.index if ev.index is not None else -1)
                if kept is not None and dtype == "input_json_delta" and delta.partial_json:
                    kept[2].append(delta.partial_json)
                return
            if dtype == "text_delta" and delta.text is not None and block.kind == "text":
                block.text_delta(delta.text, out)
            elif dtype == "thinking_delta" and delta.thinking is not None:
                block.reasoning_delta(delta.thinking, out)
            elif dtype == "input_json_delta" and delta.partial_json is not None:
                if delta.partial_json and self._initial:
                    self._initial.pop(block.index, None)
                if block.kind == "text":  # the answer tool's input is the answer's text
                    if delta.partial_json:
                        block.text_delta(delta.partial_json, out)
                else:
                    block.arguments_delta(delta.partial_json, out)
            elif dtype == "signature_delta" and delta.signature is not None:
                block.signature = (block.signature or "") + delta.signature
        elif kind == "content_block_start":
            self._start(ev, out)
        elif kind == "content_block_stop":
            block = self._by_index.get(ev.index if ev.index is not None else -1)
            if block is None and self._kept:
                self._stop_kept(ev.index if ev.index is not None else -1)
            elif block is not None and not block.closed:
                initial = self._initial.pop(block.index, None) if self._initial else None
                if initial is not None:
                    if block.kind == "text":
                        block.text_delta(initial, out)
                    else:
                        block.arguments_delta(initial, out)
                block.close(out)
        elif kind == "message_start":
            message = ev.message
            if message is not None:
                if message.id:
                    record.response_id = message.id
                if message.model and message.model != record.model:
                    record.response_model = message.model
                if message.usage is not None:
                    self._usage(message.usage)
        elif kind == "message_delta":
            if ev.delta is not None and ev.delta.stop_reason:
                self._stop(ev.delta.stop_reason)
            if ev.usage is not None:
                self._usage(ev.usage)
        elif kind == "message_stop":
            self.done = True
        elif kind == "error" or event.event == "error":
            err = ev.error
            self._fail(err.message if err and err.message else data, err.type if err else None)
        elif kind not in _EVENTS:
            record.note_unknown(f"event:{kind or '(untyped)'}")

    def _fail(self, message: str, error_type: str | None) -> None:
        record = self._record
        record.stop_reason = "error"
        record.error_message = message
        record.error_code = anthropic_error_code(error_type)

    def _start(self, ev: _Event, out: list[StreamChunk]) -> None:
        raw = ev.content_block
        if not raw or ev.index is None:
            return
        try:
            cb = _BLOCK(raw)
        except msgspec.DecodeError as exc:
            raise malformed_event(self._record, "Anthropic", exc) from exc
        record = self._record
        btype = cb.type
        if btype == "text":
            block = record.open_block("text", out)
        elif btype == "thinking":
            block = record.open_block("reasoning", out)
            block.signature = ""
        elif btype == "redacted_thinking":
            block = record.open_block("reasoning", out)
            block.signature = cb.data or ""
            block.redacted = True
            block.reasoning_delta(REDACTED_THINKING_TEXT, out)
        elif btype == "tool_use" and record.is_answer_tool(cb.name):
            block = record.open_block("text", out)  # the structured answer, as text
            initial = bytes(cb.input).strip()
            if initial and initial != b"{}":
                self._initial[block.index] = initial.decode()
        elif btype == "tool_use":
            block = record.open_tool_call(cb.id or "", cb.name or "", out)
            initial = bytes(cb.input).strip()
            if initial and initial != b"{}":
                self._initial[block.index] = initial.decode()
        else:
            if btype.endswith(("tool_use", "tool_result")):
                record.server_tool_loop = True  # server tools: input counts sum the loop
            if btype not in _KEPT_BLOCKS:
                record.note_unknown(f"block:{btype or '(untyped)'}")
            # server tools, their results and unknown blocks: kept whole once they stop
            self._kept[ev.index] = (len(record.blocks), bytes(raw), [])
            return
        self._by_index[ev.index] = block

    def _stop_kept(self, index: int) -> None:
        """Keep a finished non-content block: as it came, or with its streamed input parsed."""
        kept = self._kept.pop(index, None)
        if kept is None:
            return
        at, raw, pieces = kept
        if pieces:
            try:
                block = msgspec.json.decode(raw)
                block["input"] = msgspec.json.decode("".join(pieces))
                raw = _ENCODE(block)
            except (msgspec.DecodeError, TypeError):
                self._record.note_unknown("block:(unparsable input)")
        self._record.keep(raw.decode(), at)

    def _stop(self, reason: str) -> None:
        record = self._record
        stop = record.settled(_STOPS.get(reason))
        if stop is not None:
            record.stop_reason = stop
            if reason == "pause_turn":
                record.server_tool_loop = True  # a paused server-side tool loop
            return
        record.stop_reason = "error"
        if reason == "refusal":
            said = "".join("".join(b.parts) for b in record.blocks if b.kind == "text").strip()
            record.error_message = (
                f'model "{record.model}" refused: {said or "(stop_reason refusal)"}'
            )
            record.error_code = ErrorCode.CONTENT_FILTER
        elif reason == "sensitive":
            record.error_message = "The provider flagged the response as sensitive"
            record.error_code = ErrorCode.CONTENT_FILTER
        elif reason == "model_context_window_exceeded":
            record.error_message = "Unhandled stop reason: model_context_window_exceeded"
            record.error_code = ErrorCode.CONTEXT_WINDOW_EXCEEDED
        else:
            record.error_message = f"Unhandled stop reason: {reason}"

    def _usage(self, usage: _Usage) -> None:
        record = self._record
        record.reported = True
        if usage.input_tokens is not None:
            record.input = usage.input_tokens
        if usage.output_tokens is not None:
            record.output = usage.output_tokens
        if usage.cache_read_input_tokens is not None:
            record.cache_read = usage.cache_read_input_tokens
        if usage.cache_creation_input_tokens is not None:
            record.cache_write = usage.cache_creation_input_tokens
        details = usage.output_tokens_details
        if details is not None and details.thinking_tokens is not None:
            record.reasoning = details.thinking_tokens

    def end(self, out: list[StreamChunk]) -> None:
        """The stream ended: usage and finish (an error when `message_stop` never came)."""
        if self.done:
            for index in list(self._kept):  # a kept block that never saw its stop event
                self._stop_kept(index)
        end_stream(self._record, self.done, "Anthropic stream ended before message_stop", out)
