"""`bedrock-converse-stream` streaming: ConverseStream events → chunks.

The event-stream decoder (`wire.eventstream`) hands each message over as an `SseEvent` named
after its ``:event-type`` (``exception:<type>`` / ``error:<code>`` for failures). Events:
``messageStart``; ``contentBlockStart`` (only tool uses and server-side tool results announce
themselves); ``contentBlockDelta`` (``text``, ``toolUse.input`` string fragments,
``reasoningContent.text`` / ``.signature`` / ``.redactedContent``); ``contentBlockStop``;
``messageStop`` (the stop reason); ``metadata`` (usage, after ``messageStop``). The response is
complete (`done`) once ``metadata`` arrived; a body that ends after ``messageStop`` without it
is complete too (no usage), one that ends before ``messageStop`` is a TRANSPORT failure.

Blocks follow ``contentBlockIndex``; a text or reasoning block opens on its first delta that
carries something (an empty ``text`` delta opens nothing). Server-side tool uses
(``type: server_tool_use``) and their results are not client calls: they mark the response as a
server tool loop and their start is kept in the replay envelope (so an answer made of them is
content, not EMPTY_RESPONSE). A block start, delta or event of a kind this translator does not
know is kept or skipped and reported, never an error; ``metadata`` without a ``messageStop``
before it completes the response with an inferred finish. Reasoning signatures are kept byte-exact on the block (the
replay envelope); redacted reasoning keeps its opaque blob there and streams as
``[Reasoning redacted]``. Usage: ``inputTokens`` (Bedrock reports it without the cached part),
``cacheReadInputTokens``, ``cacheWriteInputTokens``, ``outputTokens``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final

import msgspec

from ....errors import ErrorCode
from ....vocab import StreamChunk
from ....vocab.usage import TokenCount
from ....wire.sse import SseEvent
from .anthropic_stream import REDACTED_THINKING_TEXT
from .common import (
    BlockRecord,
    ResponseRecord,
    StopReason,
    classify_error_text,
    end_stream,
    is_overflow_text,
    malformed_event,
)

__all__ = ["BedrockTranslator", "exception_code", "exception_text", "record_exception"]


class _ToolStart(msgspec.Struct, gc=False, rename="camel"):
    tool_use_id: str | None = None
    name: str | None = None
    type: str | None = None


class _Start(msgspec.Struct, gc=False, rename="camel"):
    tool_use: _ToolStart | None = None
    tool_result: msgspec.Raw = msgspec.Raw(b"")


class _ToolDelta(msgspec.Struct, gc=False):
    input: str | None = None


class _Reasoning(msgspec.Struct, gc=False, rename="camel"):
    text: str | None = None
    signature: str | None = None
    redacted_content: str | None = None


class _Delta(msgspec.Struct, gc=False, rename="camel"):
    text: str | None = None
    tool_use: _ToolDelta | None = None
    reasoning_content: _Reasoning | None = None


class _Usage(msgspec.Struct, gc=False, rename="camel"):
    input_tokens: TokenCount | None = None
    output_tokens: TokenCount | None = None
    cache_read_input_tokens: TokenCount | None = None
    cache_write_input_tokens: TokenCount | None = None


class _Event(msgspec.Struct, gc=False, rename="camel"):
    content_block_index: int | None = None
    start: msgspec.Raw = msgspec.Raw(b"")
    delta: _Delta | None = None
    stop_reason: str | None = None
    usage: _Usage | None = None


class _Exception(msgspec.Struct, gc=False):
    message: str | None = None
    Message: str | None = None  # some AWS exception payloads capitalize it


_DECODE: Final = msgspec.json.Decoder(_Event).decode
_START: Final = msgspec.json.Decoder(_Start).decode
_KEYS: Final = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode


class _DeltaKeys(msgspec.Struct, gc=False):
    delta: dict[str, msgspec.Raw] = msgspec.field(default_factory=dict)


_DELTA_KEYS: Final = msgspec.json.Decoder(_DeltaKeys).decode
_EVENTS: Final = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)
_DELTAS: Final = frozenset({"text", "toolUse", "reasoningContent", "citation"})
_DECODE_EXCEPTION: Final = msgspec.json.Decoder(_Exception).decode
_STOPS: Final[dict[str, StopReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
}
_REFUSALS: Final = {
    "guardrail_intervened": "a Bedrock guardrail intervened",
    "content_filtered": "the content was filtered",
}
_EXCEPTIONS: Final[dict[str, tuple[str, str]]] = {
    # :exception-type (first letter lower-cased) → (code, pi-ai's message prefix)
    "throttlingException": (ErrorCode.RATE_LIMIT, "Throttling error"),
    "validationException": (ErrorCode.INVALID_REQUEST, "Validation error"),
    "serviceUnavailableException": (ErrorCode.SERVER, "Service unavailable"),
    "internalServerException": (ErrorCode.SERVER, "Internal server error"),
    "modelStreamErrorException": (ErrorCode.SERVER, "Model stream error"),
    "modelNotReadyException": (ErrorCode.SERVER, "Model not ready"),
    "modelErrorException": (ErrorCode.SERVER, "Model error"),
    "modelTimeoutException": (ErrorCode.TIMEOUT, "Model timeout"),
    "accessDeniedException": (ErrorCode.AUTH, "Access denied"),
    "unrecognizedClientException": (ErrorCode.AUTH, "Unrecognized client"),
    "expiredTokenException": (ErrorCode.AUTH, "Expired token"),
    "resourceNotFoundException": (ErrorCode.MODEL_NOT_FOUND, "Resource not found"),
    "serviceQuotaExceededException": (ErrorCode.QUOTA, "Service quota exceeded"),
}


def _key(kind: str) -> str:
    kind = kind.split(":", 1)[0].strip()
    return kind[:1].lower() + kind[1:]


def exception_code(kind: str, message: str) -> str:
    """The failure code of a Bedrock exception type (in-stream ``throttlingException`` or an
    HTTP ``x-amzn-ErrorType`` ``ThrottlingException:...``) carrying `message`."""
    known = _EXCEPTIONS.get(_key(kind))
    if known is None:
        return classify_error_text(f"{kind}: {message}")
    code = known[0]
    if code == ErrorCode.INVALID_REQUEST and is_overflow_text(message):
        return ErrorCode.CONTEXT_WINDOW_EXCEEDED
    return code


def exception_text(kind: str, message: str) -> str:
    """pi-ai's wording of a Bedrock exception (``Throttling error: <message>``)."""
    known = _EXCEPTIONS.get(_key(kind))
    prefix = known[1] if known is not None else kind
    return f"{prefix}: {message}" if message else prefix


def record_exception(record: ResponseRecord, kind: str, data: str) -> None:
    """Fail `record` with an in-stream event-stream failure: ``exception:<type>`` (a JSON
    ``{"message"}`` payload, or the payload itself) or ``error:<code>``."""
    name = kind.partition(":")[2]
    message = data
    if kind.startswith("exception:"):
        try:
            exc = _DECODE_EXCEPTION(data)
        except msgspec.DecodeError:
            exc = None  # not JSON: the payload is the message
        if exc is not None:
            message = exc.message or exc.Message or data
    record.stop_reason = "error"
    record.error_message = exception_text(name, message.strip())
    record.error_code = exception_code(name, message)


def _concat_blob(first: str, more: str) -> str:
    """Two base64 pieces of one redacted blob as one (decoded, joined, re-encoded)."""
    try:
        joined = base64.b64decode(first) + base64.b64decode(more)
    except (binascii.Error, ValueError):
        return first + more
    return base64.b64encode(joined).decode("ascii")


class BedrockTranslator:
    """Folds ConverseStream events into chunks; `end()` emits usage and finish."""

    __slots__ = ("_by_index", "_record", "_skipped", "_stopped", "done")

    def __init__(self, record: ResponseRecord) -> None:
        self._record = record
        self._by_index: dict[int, BlockRecord] = {}
        self._skipped: set[int] = set()  # server-side tool blocks
        self._stopped = False  # messageStop arrived
        self.done = False  # metadata (or an exception) arrived: stop reading

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one event-stream message, appending its chunks to `out`."""
        if self.done:
            return
        kind = event.event or ""
        if kind.startswith(("exception:", "error:")):
            self._exception(kind, event.data)
            return
        try:
            ev = _DECODE(event.data)
        except msgspec.DecodeError as exc:
            raise malformed_event(self._record, "Bedrock ConverseStream", exc) from exc
        if kind == "contentBlockDelta":
            self._delta(ev, event.data, out)
        elif kind == "contentBlockStart":
            self._start(ev, out)
        elif kind == "contentBlockStop":
            index = ev.content_block_index
            block = self._by_index.get(-1 if index is None else index)
            if block is not None and not block.closed:
                block.close(out)
        elif kind == "messageStop":
            self._stopped = True
            self._stop(ev.stop_reason or "")
        elif kind == "metadata":
            if ev.usage is not None:
                self._usage(ev.usage)
            self.done = True
        elif kind not in _EVENTS:
            self._record.note_unknown(f"event:{kind or '(untyped)'}")
        # messageStart carries nothing to translate

    def _exception(self, kind: str, data: str) -> None:
        record_exception(self._record, kind, data)
        self.done = True

    def _start(self, ev: _Event, out: list[StreamChunk]) -> None:
        index = ev.content_block_index
        raw = ev.start
        if index is None or not raw or index in self._by_index or index in self._skipped:
            return
        try:
            start = _START(raw)
        except msgspec.DecodeError as exc:
            raise malformed_event(self._record, "Bedrock ConverseStream", exc) from exc
        record = self._record
        tool = start.tool_use
        if tool is None:
            if start.tool_result:  # a server-side tool's result
                record.server_tool_loop = True
            else:
                kinds = list(_KEYS(raw))
                record.note_unknown(f"block:{kinds[0] if kinds else '(empty)'}")
            self._skipped.add(index)
            record.keep(bytes(raw).decode())
            return
        if tool.type not in (None, "tool_use"):  # server_tool_use: the provider runs it
            self._skipped.add(index)
            record.server_tool_loop = True
            record.keep(bytes(raw).decode())
            return
        if record.is_answer_tool(tool.name):
            self._by_index[index] = record.open_block("text", out)  # the structured answer
            return
        self._by_index[index] = record.open_tool_call(tool.tool_use_id or "", tool.name or "", out)

    def _delta(self, ev: _Event, data: str, out: list[StreamChunk]) -> None:
        index = ev.content_block_index
        delta = ev.delta
        if index is None or delta is None or index in self._skipped:
            return
        block = self._by_index.get(index)
        if delta.text is not None:
            if block is None:
                if not delta.text:
                    return
                block = self._by_index[index] = self._record.open_block("text", out)
            if block.kind == "text" and delta.text:
                block.text_delta(delta.text, out)
        elif delta.tool_use is not None:
            piece = delta.tool_use.input or ""
            if block is None:
                return
            if block.kind == "tool-call":
                block.arguments_delta(piece, out)
            elif block.kind == "text" and piece:  # the answer tool's input is the answer
                block.text_delta(piece, out)
        elif delta.reasoning_content is not None:
            self._reasoning(index, block, delta.reasoning_content, out)
        else:
            kinds = [k for k in _DELTA_KEYS(data).delta if k not in _DELTAS]
            if kinds:
                self._record.note_unknown(f"delta:{kinds[0]}")

    def _reasoning(
        self, index: int, block: BlockRecord | None, delta: _Reasoning, out: list[StreamChunk]
    ) -> None:
        if block is None:
            if not (delta.text or delta.signature or delta.redacted_content):
                return
            block = self._by_index[index] = self._record.open_block("reasoning", out)
            if delta.redacted_content:
                block.redacted = True
                block.reasoning_delta(REDACTED_THINKING_TEXT, out)
        if block.kind != "reasoning":
            return
        if delta.redacted_content:
            if not block.redacted:  # a redacted blob after readable text: keep the blob only
                block.redacted = True
                block.signature = None
            sig = block.signature
            block.signature = (
                delta.redacted_content if not sig else _concat_blob(sig, delta.redacted_content)
            )
            return
        if block.redacted:
            return
        if delta.text:
            block.reasoning_delta(delta.text, out)
        if delta.signature:
            block.signature = (block.signature or "") + delta.signature

    def _stop(self, reason: str) -> None:
        record = self._record
        stop = record.settled(_STOPS.get(reason))
        if stop is not None:
            record.stop_reason = stop
            return
        record.stop_reason = "error"
        refusal = _REFUSALS.get(reason)
        if refusal is not None:
            said = "".join("".join(b.parts) for b in record.blocks if b.kind == "text").strip()
            record.error_message = f'model "{record.model}" refused: {said or refusal}'
            record.error_code = ErrorCode.CONTENT_FILTER
        elif reason == "model_context_window_exceeded":
            record.error_message = "Unhandled stop reason: model_context_window_exceeded"
            record.error_code = ErrorCode.CONTEXT_WINDOW_EXCEEDED
        else:
            record.error_message = f"Unhandled stop reason: {reason or '(none)'}"

    def _usage(self, usage: _Usage) -> None:
        record = self._record
        record.reported = True
        record.input = usage.input_tokens or 0
        record.output = usage.output_tokens or 0
        record.cache_read = usage.cache_read_input_tokens or 0
        record.cache_write = usage.cache_write_input_tokens or 0

    def end(self, out: list[StreamChunk]) -> None:
        """The stream ended: usage and finish (an error when `messageStop` never came)."""
        end_stream(
            self._record,
            self._stopped or self.done,
            "Bedrock ConverseStream ended before messageStop",
            out,
        )
