"""What the three protocol translators share: the response record and its block bookkeeping
(open, delta, close), stop mapping, error text classification, usage and the v2 replay envelope
written on `finish`."""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from ....errors import (
    ErrorCode,
    LlmError,
)
from ....vocab import (
    Aborted,
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    FinishReason,
    LlmFailure,
    MaxTokens,
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
    ToolCalls,
    UsageChunk,
)
from ....wire.status import redact_secrets
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


class BlockRecord:
    """One streamed content block: its kind, index, accumulated text and replay signatures."""

    __slots__ = ("closed", "id", "index", "kind", "name", "parts", "redacted", "signature")

    def __init__(self, index: int, kind: str) -> None:
        self.index = index
        self.kind = kind  # "text" | "reasoning" | "tool-call"
        self.parts: list[str] = []
        self.signature: str | None = None  # thinking / text / thought signature
        self.redacted = False
        self.id = ""
        self.name = ""
        self.closed = False

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
        return entry


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
        "input",
        "model",
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
        block.id = call_id
        block.name = name
        self.blocks.append(block)
        out.append(BlockStart(block.index, "tool-call"))
        block.arguments_delta(arguments, out)
        return block

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
        """The v2 replay envelope of this response."""
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
        return ReplayEnvelope(response, tuple(b.replay_entry() for b in self.blocks))


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
        if not record.blocks:
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
    False) and carries no error yet fails with `unterminated` (a TRANSPORT text); then usage and
    finish."""
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
