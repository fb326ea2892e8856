"""What the three protocol translators share: the response record and its block bookkeeping
(open, delta, close), stop mapping, error text classification, usage and the v2 replay envelope
written on `finish`.

Forward compatibility (every translator): an event, item, block, part or delta a translator does
not know never fails the stream. Its label (``item:tool_search_call``) is noted once per stream
(`ResponseRecord.note_unknown`) and, where it is a piece of the answer, its raw JSON is kept
(`ResponseRecord.keep`) at its place among the blocks; known parts are delivered as usual. A
stream that delivered its protocol's end marker without a finish signal is complete: its finish
is inferred (`ResponseRecord.infer_finish`: tool calls → tool-calls, else stop). The envelope
written on `finish` carries all three: the kept parts as ``opaque`` (on the block entry they
precede, the ones after the last block in ``response.opaque_tail``), and the report as
``response.extras`` (``unknown``: the labels in order of first sight; ``finish: "inferred"``).
A response whose only output is kept parts (server tools) is content, never EMPTY_RESPONSE.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from ....errors import (
    ErrorCode,
    LlmError,
)
from ....vocab import (
    Aborted,
    BlockStart,
    Error,
    Finish,
    FinishReason,
    LlmFailure,
    MaxTokens,
    ReplayEnvelope,
    Stop,
    StreamChunk,
    TokenUsage,
    ToolCalls,
    UsageChunk,
)
from ....wire.metadata import redact_call_id, redact_metadata
from ....wire.status import redact_secrets
from .block_record import BlockRecord, place_opaque
from .stream_errors import classify_error_text, error_type_code, is_overflow_text

__all__ = [
    "BlockRecord",
    "ResponseRecord",
    "StopReason",
    "classify_error_text",
    "end_stream",
    "error_type_code",
    "finish_chunks",
    "is_overflow_text",
    "malformed_event",
]

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]
"""pi-ai's neutral stop reasons (the spelling stored in replay state)."""

_STOP: Final = Stop()
_TOOL_CALLS: Final = ToolCalls()
_MAX_TOKENS: Final = MaxTokens()


class ResponseRecord:
    """The neutral facts of one response as it streams: blocks, usage, stop reason, ids."""

    __slots__ = (
        "answer_tool",
        "api",
        "blocks",
        "cache_read",
        "cache_write",
        "context_window",
        "error_code",
        "error_message",
        "inferred",
        "input",
        "model",
        "opaque",
        "output",
        "provider",
        "reasoning",
        "refusal",
        "reported",
        "response_id",
        "response_model",
        "secrets",
        "server_tool_loop",
        "stop_reason",
        "unknown",
    )

    def __init__(
        self,
        *,
        api: str,
        provider: str,
        model: str,
        context_window: int | None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.secrets = secrets  # the request's credentials: redacted from provider error text
        self.api = api
        self.provider = provider
        self.model = model
        self.context_window = context_window
        self.blocks: list[BlockRecord] = []
        self.input = 0
        self.output = 0
        self.reported = False  # the provider reported usage (else the stream has no usage chunk)
        self.cache_read = 0
        self.cache_write = 0
        self.reasoning: int | None = None
        self.stop_reason: StopReason | None = None
        self.error_message: str | None = None
        self.error_code: str | None = None
        self.response_id: str | None = None
        self.response_model: str | None = None
        # refusal text the provider streamed apart from the answer (Chat `delta.refusal`,
        # Responses `refusal` parts); a response that carries one ends in CONTENT_FILTER
        self.refusal: list[str] | None = None
        # the provider ran a server-side tool loop: its input counts sum several model calls,
        # so they say nothing about one call's context window
        self.server_tool_loop = False
        # the tool whose input is the structured answer (Anthropic's forced answer tool): its
        # input streams as the answer's text, and calling it is a plain stop
        self.answer_tool: str | None = None
        # forward compatibility: labels of what the translator did not know (once each), the
        # raw JSON of the parts it keeps (with the number of blocks before each), and whether
        # the finish was inferred from the end marker alone
        self.unknown: list[str] | None = None
        self.opaque: list[tuple[int, str]] | None = None
        self.inferred = False

    def note_unknown(self, label: str) -> None:
        """Report `label` (``event:x``, ``item:x``, ``block:x``, ``part:x``, ``delta:x``) once."""
        unknown = self.unknown
        if unknown is None:
            self.unknown = [label]
        elif label not in unknown:
            unknown.append(label)

    def keep(self, raw: str, at: int | None = None) -> None:
        """Keep a part the answer holds but no block can carry (its raw JSON) at this place (or
        before block `at`, the number of blocks there were when it began)."""
        if self.opaque is None:
            self.opaque = []
        self.opaque.append((len(self.blocks) if at is None else at, raw))

    def infer_finish(self) -> None:
        """The end marker came without a finish signal: tool calls → tool-calls, else stop."""
        self.inferred = True
        calls = any(b.kind == "tool-call" for b in self.blocks)
        self.stop_reason = "toolUse" if calls else "stop"

    def is_answer_tool(self, name: str | None) -> bool:
        """Whether a tool call named `name` is the forced answer tool (its input is the text)."""
        return self.answer_tool is not None and name == self.answer_tool

    def settled(self, stop: StopReason | None) -> StopReason | None:
        """`stop`, except that a tool-use stop that called only the answer tool is a plain stop
        (the structured answer is complete)."""
        if (
            stop == "toolUse"
            and self.answer_tool is not None
            and not any(b.kind == "tool-call" for b in self.blocks)
        ):
            return "stop"
        return stop

    def refuse(self, piece: str) -> None:
        """Accumulate refusal text (the response then finishes as a CONTENT_FILTER failure)."""
        if self.refusal is None:
            self.refusal = []
        self.refusal.append(piece)

    def open_block(self, kind: str, out: list[StreamChunk]) -> BlockRecord:
        """Append a block of `kind` (`text`, `reasoning`) at the next index; emit `block-start`."""
        block = BlockRecord(len(self.blocks), kind)
        self.blocks.append(block)
        out.append(BlockStart(block.index, kind))
        return block

    def open_tool_call(
        self, call_id: str, name: str, out: list[StreamChunk], arguments: str = ""
    ) -> BlockRecord:
        """Open a tool-call block and emit its start plus a first delta naming the call."""
        block = BlockRecord(len(self.blocks), "tool-call")
        block.id = self.call_id(call_id, block.index)
        block.name = name
        self.blocks.append(block)
        out.append(BlockStart(block.index, "tool-call"))
        block.arguments_delta(arguments, out)
        return block

    def call_id(self, raw: str, index: int) -> str:
        """The provider's tool-call id `raw` as kept: never a credential (`redact_call_id`)."""
        return redact_call_id(raw, self.secrets, index)

    def openai_usage(
        self, prompt: int, cached: int, cache_write: int, output: int, reasoning: int | None
    ) -> None:
        """Set usage from OpenAI-style totals: cache reads and writes leave the input bucket."""
        self.reported = True
        self.input = max(0, prompt - cached - cache_write)
        self.cache_read = cached
        self.cache_write = cache_write
        self.output = output
        self.reasoning = reasoning

    def usage(self) -> TokenUsage:
        """Usage in disjoint buckets; cache fields only when non-zero."""
        return TokenUsage(
            self.input,
            self.output,
            self.cache_read or None,
            self.cache_write or None,
            self.reasoning,
        )

    def envelope(self) -> ReplayEnvelope:
        """The v2 replay envelope of this response, with no credential in it (`redact_metadata`:
        what the provider said about the response is never trusted to be free of one)."""
        response: dict[str, object] = {
            "kind": "pi-ai",
            "version": 2,
            "api": self.api,
            "provider": self.provider,
            "model": self.model,
        }
        if self.response_model is not None and self.response_model != self.model:
            response["response_model"] = self.response_model
        if self.response_id is not None:
            response["response_id"] = self.response_id
        response["stop_reason"] = self.stop_reason or "error"
        entries = [b.replay_entry() for b in self.blocks]
        if self.opaque:
            tail = place_opaque(self.opaque, self.blocks, entries, self.stop_reason == "length")
            if tail:
                response["opaque_tail"] = tail
        extras: dict[str, object] = {}
        if self.unknown:
            extras["unknown"] = list(self.unknown)
        if self.inferred:
            extras["finish"] = "inferred"
        if extras:
            response["extras"] = extras
        envelope = redact_metadata(ReplayEnvelope(response, tuple(entries)), self.secrets)
        assert envelope is not None  # the response keeps its kind, version and api
        return envelope


def _reason(record: ResponseRecord) -> FinishReason:
    stop = record.stop_reason
    text = record.error_message
    if text is not None:
        text = redact_secrets(text, record.secrets)
    # the "clean stop but input > window" heuristics need one call's input: a server-side
    # tool loop (Anthropic `pause_turn`, server tools) reports the sum of several calls
    window = None if record.server_tool_loop else record.context_window
    overflow = False
    prompt = record.input + record.cache_read
    if (
        (
            stop == "error"
            and (
                record.error_code == ErrorCode.CONTEXT_WINDOW_EXCEEDED
                or (
                    record.error_code != ErrorCode.CONTENT_FILTER
                    and text is not None
                    and is_overflow_text(text)
                )
            )
        )
        or (window is not None and stop == "stop" and prompt > window)
        or (
            window is not None
            and stop == "length"
            and record.output == 0
            and prompt >= 0.99 * window
        )
    ):
        overflow = True
    if overflow:
        message = text or f'pi-ai detected context overflow for model "{record.model}"'
        return Error(LlmFailure(message, ErrorCode.CONTEXT_WINDOW_EXCEEDED))
    if stop == "stop":
        if not record.blocks and not record.opaque:
            return Error(
                LlmFailure(
                    f'model "{record.model}" returned a completed response with no content',
                    ErrorCode.EMPTY_RESPONSE,
                )
            )
        return _STOP
    if stop == "length":
        return _MAX_TOKENS
    if stop == "toolUse":
        return _TOOL_CALLS
    if stop == "aborted":
        return Aborted(LlmFailure(text or "pi-ai stream aborted", ErrorCode.ABORTED))
    message = text or "pi-ai stream error"
    return Error(LlmFailure(message, record.error_code or classify_error_text(message)))


def malformed_event(record: ResponseRecord, protocol: str, exc: Exception) -> LlmError:
    """The `MALFORMED_RESPONSE` error for a stream event of `protocol` that does not decode."""
    return LlmError(
        f"{record.provider}: malformed {protocol} stream event",
        ErrorCode.MALFORMED_RESPONSE,
        cause=exc,
    )


def end_stream(
    record: ResponseRecord, complete: bool, unterminated: str, out: list[StreamChunk]
) -> None:
    """Close the response: a stream that ended before its protocol's end marker (`complete`
    False) and carries no error yet fails with `unterminated` (a TRANSPORT text); a complete one
    without a finish signal gets an inferred finish; then usage and finish."""
    if complete and record.stop_reason is None:
        record.infer_finish()
    if not complete and record.stop_reason != "error":
        record.stop_reason = "error"
        record.error_message = unterminated
    finish_chunks(record, out)


def finish_chunks(record: ResponseRecord, out: list[StreamChunk]) -> None:
    """Append `usage` then `finish`; replay state only for a response that completed (`done`)."""
    if record.reported:  # a stream that reports no usage has none (None), never zeros
        out.append(UsageChunk(record.usage()))
    if record.refusal is not None and record.stop_reason in ("stop", "length", "toolUse"):
        refused = "".join(record.refusal).strip() or "(no explanation)"
        record.stop_reason = "error"
        record.error_code = ErrorCode.CONTENT_FILTER
        record.error_message = f'model "{record.model}" refused: {refused}'
    reason = _reason(record)
    done = record.stop_reason in ("stop", "length", "toolUse")
    out.append(Finish(reason, record.envelope() if done else None))
