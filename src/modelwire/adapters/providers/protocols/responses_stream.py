"""`openai-responses` streaming: Responses API SSE events → chunks (spec §4.4).

Blocks are keyed by `output_index` and closed as their item completes. Signatures: a reasoning
block keeps the JSON of its whole output item (with `encrypted_content`), a text block
`{"v":1,"id":<item id>,"phase"?}`, and tool-call ids are `<call_id>|<item id>`. Events are
dispatched on the data's own `type` (some gateways send no `event:` lines).

Client tools other than functions are tool calls too: a ``custom_tool_call`` (free-text input,
streamed by ``response.custom_tool_call_input.delta``) carries its raw input as the arguments;
an ``apply_patch_call`` carries the JSON of its ``operation`` and a ``local_shell_call`` that of
its ``action`` (tools named ``apply_patch`` and ``local_shell``). Each keeps its whole item
(`BlockRecord.item`) so a replay sends it back as it came. Every other item (server tools,
compaction, tool search, approval requests, and types this translator does not know) is kept
whole in the replay envelope; an unknown item type or event type is reported, never an error. A
``[DONE]`` line ends a stream too (some gateways close with it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

import msgspec

from ....errors import ErrorCode, LlmError
from ....vocab import ReasoningBlock, StreamChunk, TextBlock, ToolCallBlock
from ....vocab.usage import TokenCount
from ....wire.sse import SseEvent
from .common import BlockRecord, ResponseRecord, end_stream, malformed_event
from .responses_items import CALL_TYPES, ITEM_KINDS, KEPT_ITEMS, QUIET_EVENTS, SERVER_EVENTS

__all__ = ["ResponsesTranslator"]

_T = TypeVar("_T")


class _Text(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None
    refusal: str | None = None


class _Head(msgspec.Struct, gc=False):
    type: str = ""


class _Item(msgspec.Struct, gc=False):
    type: str = ""
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    input: str | None = None
    operation: msgspec.Raw = msgspec.Raw(b"")
    action: msgspec.Raw = msgspec.Raw(b"")
    phase: str | None = None
    summary: list[_Text] | None = None
    content: list[_Text] | None = None
    encrypted_content: str | None = None


class _InDetails(msgspec.Struct, gc=False):
    cached_tokens: TokenCount | None = None
    cache_write_tokens: TokenCount | None = None


class _OutDetails(msgspec.Struct, gc=False):
    reasoning_tokens: TokenCount | None = None


class _Usage(msgspec.Struct, gc=False):
    input_tokens: TokenCount | None = None
    output_tokens: TokenCount | None = None
    input_tokens_details: _InDetails | None = None
    output_tokens_details: _OutDetails | None = None


class _Err(msgspec.Struct, gc=False):
    code: str | int | None = None
    message: str | None = None


class _Incomplete(msgspec.Struct, gc=False):
    reason: str | None = None


class _Response(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    status: str | None = None
    usage: _Usage | None = None
    error: _Err | None = None
    incomplete_details: _Incomplete | None = None
    output: list[msgspec.Raw] | None = None


class _Event(msgspec.Struct, gc=False):
    type: str = ""
    output_index: int | None = None
    delta: str | None = None
    arguments: str | None = None
    item: msgspec.Raw = msgspec.Raw(b"")
    response: _Response | None = None
    code: str | int | None = None
    message: str | None = None


_DECODE: Final = msgspec.json.Decoder(_Event).decode
_ITEM_DECODE: Final = msgspec.json.Decoder(_Item).decode
_HEAD_DECODE: Final = msgspec.json.Decoder(_Head).decode
_ENCODE: Final = msgspec.json.encode
_FORMAT: Final = msgspec.json.format
_TEXT_DELTAS: Final = frozenset({"response.output_text.delta"})
_THINKING_DELTAS: Final = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
)
_TERMINAL: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})
_ARGUMENT_DELTAS: Final = frozenset(
    {"response.function_call_arguments.delta", "response.custom_tool_call_input.delta"}
)


def _ITEM(raw: msgspec.Raw | bytes) -> _Item:
    """Decode an output item; a wrongly shaped one is a classified malformed response."""
    return _checked(raw, _ITEM_DECODE)


def _checked(raw: msgspec.Raw | bytes, decode: Callable[[msgspec.Raw | bytes], _T]) -> _T:
    try:
        return decode(raw)
    except msgspec.DecodeError as exc:
        raise LlmError(
            f"malformed Responses stream output item: {exc}",
            ErrorCode.MALFORMED_RESPONSE,
            cause=exc,
        ) from exc


class ResponsesTranslator:
    """Folds Responses API stream events into chunks; `end()` emits usage and finish."""

    __slots__ = ("_blocks", "_kept", "_record", "_unencrypted", "done")

    def __init__(self, record: ResponseRecord) -> None:
        self._record = record
        self._blocks: dict[int, BlockRecord] = {}
        # items kept whole, still awaiting their done event: output index → (blocks before the
        # item, the item as it was added)
        self._kept: dict[int, tuple[int, bytes]] = {}
        self.done = False  # a terminal event arrived: the response is complete, stop reading
        # reasoning items whose output_item.done lacked encrypted_content, by item id
        self._unencrypted: dict[str, BlockRecord] = {}

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one SSE event, appending its chunks to `out`."""
        data = event.data
        if data == "[DONE]":
            self.done = True  # the end, even without a terminal event (the finish is inferred)
            return
        if not data or self.done:
            return
        try:
            ev = _DECODE(data)
        except msgspec.DecodeError as exc:
            raise malformed_event(self._record, "Responses", exc) from exc
        kind = ev.type
        if kind in _TEXT_DELTAS or kind in _THINKING_DELTAS:
            block = self._blocks.get(ev.output_index if ev.output_index is not None else -1)
            if block is None or not ev.delta:
                return
            if block.kind == "text":
                block.text_delta(ev.delta, out)
            elif block.kind == "reasoning":
                block.reasoning_delta(ev.delta, out)
            else:
                block.parts.append(ev.delta)
        elif kind == "response.refusal.delta":
            if ev.delta:
                self._record.refuse(ev.delta)  # not answer text: the finish is CONTENT_FILTER
        elif kind in _ARGUMENT_DELTAS:
            block = self._blocks.get(ev.output_index if ev.output_index is not None else -1)
            if block is not None and ev.delta and block.kind == "tool-call":
                block.arguments_delta(ev.delta, out)
        elif kind == "response.function_call_arguments.done":
            block = self._blocks.get(ev.output_index if ev.output_index is not None else -1)
            if block is not None and ev.arguments is not None:
                self._suffix(block, ev.arguments, out)
        elif kind == "response.reasoning_summary_part.done":
            block = self._blocks.get(ev.output_index if ev.output_index is not None else -1)
            if block is not None and block.kind == "reasoning":
                block.reasoning_delta("\n\n", out)
        elif kind == "response.output_item.added" and ev.item:
            self._added(ev, out)
        elif kind == "response.output_item.done" and ev.item:
            self._item_done(ev, out)
        elif kind == "response.created":
            if ev.response is not None and ev.response.id:
                self._record.response_id = ev.response.id
        elif kind in _TERMINAL:
            self._terminal(kind, ev.response)
        elif kind == "error":
            record = self._record
            if record.stop_reason != "error":
                record.stop_reason = "error"
                record.error_message = f"Error Code {ev.code}: {ev.message or 'Unknown error'}"
        elif kind not in QUIET_EVENTS and not kind.startswith(SERVER_EVENTS):
            self._record.note_unknown(f"event:{kind or '(untyped)'}")

    def _added(self, ev: _Event, out: list[StreamChunk]) -> None:
        head = _checked(ev.item, _HEAD_DECODE)
        kind = ITEM_KINDS.get(head.type)
        if ev.output_index is None:
            return
        if kind is None:
            # kept whole once it is done (or as the terminal response lists it)
            self._kept[ev.output_index] = (len(self._record.blocks), bytes(ev.item))
            return
        item = _ITEM(ev.item)
        record = self._record
        if kind == "tool-call":
            call_id = f"{item.call_id or ''}|{item.id or ''}"
            call_type, default_name = CALL_TYPES.get(item.type, (None, None))
            block = record.open_tool_call(call_id, item.name or default_name or "", out)
            block.call_type = call_type
            self._blocks[ev.output_index] = block
        else:
            self._blocks[ev.output_index] = record.open_block(kind, out)

    def _suffix(self, block: BlockRecord, final: str, out: list[StreamChunk]) -> None:
        streamed = "".join(block.parts)
        if final.startswith(streamed) and len(final) > len(streamed):
            block.arguments_delta(final[len(streamed) :], out)

    def _item_done(self, ev: _Event, out: list[StreamChunk]) -> None:
        index = ev.output_index if ev.output_index is not None else -1
        block = self._blocks.get(index)
        if block is None:  # an item kept whole (also one whose added event never came)
            pending = self._kept.pop(index, None)
            if pending is not None or ITEM_KINDS.get(_checked(ev.item, _HEAD_DECODE).type) is None:
                self._keep(bytes(ev.item), pending[0] if pending is not None else None)
            return
        if block.closed:
            return
        raw = bytes(ev.item)
        item = _ITEM(raw)
        if block.kind == "reasoning":
            summaries = [s.text for s in item.summary or () if s.text is not None]
            contents = [c.text for c in item.content or () if c.text is not None]
            if summaries:
                text = "\n\n".join(summaries)
            elif contents:
                text = "\n\n".join(contents)
            else:
                text = "".join(block.parts)
            block.signature = raw.decode()
            if item.encrypted_content is None and item.id:
                self._unencrypted[item.id] = block
            block.close(out, ReasoningBlock(text))
        elif block.kind == "text":
            content = item.content or ()
            record = self._record
            if record.refusal is None:  # a refusal part that came whole, without deltas
                for c in content:
                    if c.type == "refusal" and c.refusal:
                        record.refuse(c.refusal)
            answer = [c.text or "" for c in content if c.type == "output_text"]
            text = "".join(answer) if answer else "".join(block.parts)
            signature: dict[str, object] = {"v": 1, "id": item.id}
            if item.phase is not None:
                signature["phase"] = item.phase
            block.signature = _ENCODE(signature).decode()
            block.close(out, TextBlock(text))
        elif block.call_type is not None:
            self._client_call(block, item, raw, out)
        else:
            if item.arguments is not None:
                self._suffix(block, item.arguments, out)
            args = item.arguments if item.arguments is not None else "".join(block.parts)
            block.close(out, ToolCallBlock(block.id, block.name, args or "{}"))

    def _client_call(
        self, block: BlockRecord, item: _Item, raw: bytes, out: list[StreamChunk]
    ) -> None:
        """Close a custom, apply-patch or local-shell call: free-text input as it came, or the
        compact JSON of the operation / action; the whole item rides in the replay entry."""
        block.item = raw.decode()
        if block.call_type == "custom":
            final = item.input if item.input is not None else "".join(block.parts)
            streamed = "".join(block.parts)
            if final.startswith(streamed) and len(final) > len(streamed):
                block.arguments_delta(final[len(streamed) :], out)
            block.close(out, ToolCallBlock(block.id, block.name, final))
            return
        value = item.operation if block.call_type == "apply_patch" else item.action
        data = bytes(value).strip()
        args = _FORMAT(data, indent=-1).decode() if data.startswith(b"{") else "{}"
        if not block.parts or not "".join(block.parts):
            block.arguments_delta(args, out)
        block.close(out, ToolCallBlock(block.id, block.name, args))

    def _keep(self, raw: bytes, at: int | None = None) -> None:
        """Keep an item that is no content block whole (before block `at`, else here); report a
        type this translator lacks."""
        record = self._record
        try:
            head = _HEAD_DECODE(raw)
        except msgspec.DecodeError:
            record.note_unknown("item:(malformed)")
            return
        if head.type not in KEPT_ITEMS:
            record.note_unknown(f"item:{head.type or '(untyped)'}")
        record.keep(raw.decode(), at)

    def _flush_kept(self, output: list[msgspec.Raw] | None) -> None:
        """Keep the items added but never done: as the terminal response lists them (by output
        index), else as they were added."""
        for index, (at, added) in sorted(self._kept.items()):
            final = bytes(output[index]) if output is not None and index < len(output) else added
            self._keep(final, at)
        self._kept.clear()

    def _terminal(self, kind: str, response: _Response | None) -> None:
        record = self._record
        self.done = True
        if self._kept:
            self._flush_kept(response.output if response is not None else None)
        if response is None:
            return
        if response.id:
            record.response_id = response.id
        if self._unencrypted and response.output:
            self._backfill(response.output)
        if response.model and response.model != record.model:
            record.response_model = response.model
        usage = response.usage
        if usage is not None:
            details = usage.input_tokens_details
            out_details = usage.output_tokens_details
            record.openai_usage(
                usage.input_tokens or 0,
                (details.cached_tokens if details else None) or 0,
                (details.cache_write_tokens if details else None) or 0,
                usage.output_tokens or 0,
                out_details.reasoning_tokens if out_details else None,
            )
        if record.stop_reason == "error":
            return
        status = response.status
        if kind == "response.failed" or status in ("failed", "cancelled"):
            record.stop_reason = "error"
            err = response.error
            if err is not None:
                record.error_message = f"{err.code}: {err.message}"
            elif response.incomplete_details is not None:
                record.error_message = f"incomplete: {response.incomplete_details.reason}"
            else:
                record.error_message = "OpenAI Responses request failed"
        elif status == "incomplete":
            incomplete = response.incomplete_details
            if incomplete is not None and incomplete.reason == "content_filter":
                record.stop_reason = "error"
                record.error_code = ErrorCode.CONTENT_FILTER
                record.error_message = f'model "{record.model}" output stopped by content_filter'
            else:
                record.stop_reason = "length"
        elif any(b.kind == "tool-call" for b in record.blocks):
            record.stop_reason = "toolUse"
        else:
            record.stop_reason = "stop"

    def _backfill(self, output: list[msgspec.Raw]) -> None:
        """Azure sends a reasoning item's `encrypted_content` only in the terminal response's
        `output`: the replay signature becomes that complete item (spec §4.4)."""
        for raw in output:
            try:
                item = _ITEM_DECODE(raw)
            except msgspec.DecodeError:
                continue
            block = self._unencrypted.get(item.id or "")
            if item.type == "reasoning" and block is not None and item.encrypted_content:
                block.signature = bytes(raw).decode()

    def end(self, out: list[StreamChunk]) -> None:
        """The stream ended: usage and finish (an error when no terminal event came)."""
        if self.done and self._kept:  # [DONE] without a terminal event
            self._flush_kept(None)
        end_stream(
            self._record,
            self.done,
            "OpenAI Responses stream ended before a terminal response event",
            out,
        )
