"""DeepSeek streaming translation (spec B.4): SSE ``data`` payloads → `StreamChunk`s.

Payloads are decoded with a typed `msgspec` decoder into the small structs below (unknown fields
skipped, nothing built as dicts). Block indices are assigned in first-open order across kinds; the
literal ``[DONE]`` closes every open block, then emits usage, then the finish. A payload carrying an
``error`` object ends the stream at once with an error finish. ``[DONE]`` completes the response
even when no ``finish_reason`` came: the finish is then inferred (tool calls → tool-calls, else
stop) and the replay envelope says so (``extras: {"finish": "inferred"}``).

A successful finish (stop, tool calls, max tokens) carries a `ReplayEnvelope` whose response
names the stream's ``id`` and ``model`` (first reported wins) as ``response_id`` /
``response_model`` — the keys the multi-provider adapter uses, which telemetry reads for
``gen_ai.response.id`` / ``gen_ai.response.model``. It has no per-block entries, and nothing in
the DeepSeek request reads it back.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ...errors import (
    ErrorCode,
    LlmError,
    is_context_window_exceeded_error,
    is_quota_exceeded_error,
)
from ...vocab import (
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
from ...vocab.usage import TokenCount
from ...wire.metadata import redact_call_id, redact_metadata
from ...wire.sse import SseEvent
from ...wire.status import http_error_code, redact_failure, redact_secrets

__all__ = ["DONE", "EMPTY_RESPONSE_MESSAGE", "Translator", "map_finish_reason"]

DONE: Final = "[DONE]"
EMPTY_RESPONSE_MESSAGE: Final = "model returned a completed response with no content"


class _Function(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(msgspec.Struct, gc=False):
    index: int = 0
    id: str | None = None
    type: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct, gc=False):
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class _Choice(msgspec.Struct, gc=False):
    delta: _Delta | None = None
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct, gc=False):
    cached_tokens: TokenCount | None = None


class _CompletionDetails(msgspec.Struct, gc=False):
    reasoning_tokens: TokenCount | None = None


class _Usage(msgspec.Struct, gc=False):
    prompt_tokens: TokenCount = 0
    completion_tokens: TokenCount = 0
    prompt_cache_hit_tokens: TokenCount | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None
    reasoning_tokens: TokenCount | None = None  # non-standard top-level field of some hosts


class _StreamError(msgspec.Struct, gc=False):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class _Payload(msgspec.Struct, gc=False):
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: _StreamError | None = None


class _NamedPayload(_Payload, gc=False):
    """A payload read while the response's id or model is still unknown (usually the first)."""

    id: str | None = None
    model: str | None = None


_DECODER: Final = msgspec.json.Decoder(_Payload)
_NAMED_DECODER: Final = msgspec.json.Decoder(_NamedPayload)
_STOP: Final = Stop()
_TOOL_CALLS: Final = ToolCalls()
_MAX_TOKENS: Final = MaxTokens()


def map_finish_reason(reason: str) -> FinishReason:
    """``stop``/``tool_calls``/``length`` → stop/tool-calls/max-tokens; anything else → error."""
    if reason == "stop":
        return _STOP
    if reason == "tool_calls":
        return _TOOL_CALLS
    if reason == "length":
        return _MAX_TOKENS
    # a failure code is never made from provider text: known stops map to their code, any
    # other reason to UNKNOWN (the message names it)
    return Error(LlmFailure(f"model stopped: {reason}", _STOP_CODES.get(reason, ErrorCode.UNKNOWN)))


_STOP_CODES: Final[dict[str, str]] = {
    "content_filter": ErrorCode.CONTENT_FILTER,
    "insufficient_system_resource": ErrorCode.INSUFFICIENT_SYSTEM_RESOURCE,
}


def _map_usage(u: _Usage) -> TokenUsage:
    # DeepSeek's own `prompt_cache_hit_tokens` wins; the OpenAI-style mirror
    # `prompt_tokens_details.cached_tokens` serves hosts that only report that one.
    cache_read = u.prompt_cache_hit_tokens
    if cache_read is None and u.prompt_tokens_details is not None:
        cache_read = u.prompt_tokens_details.cached_tokens
    details = u.completion_tokens_details
    reasoning = (
        details.reasoning_tokens
        if details is not None and details.reasoning_tokens is not None
        else u.reasoning_tokens
    )
    # A host that reports more cache hits than prompt tokens must not yield a negative bucket.
    uncached = max(0, u.prompt_tokens - (cache_read or 0))
    return TokenUsage(uncached, u.completion_tokens, cache_read, None, reasoning)


def _stream_error(err: _StreamError, secrets: tuple[str, ...]) -> Error:
    message = err.message or "DeepSeek stream reported an error"
    detail = " ".join(str(v) for v in (err.code, err.type, err.message) if v)
    if isinstance(err.code, int) and 400 <= err.code <= 599:
        code = http_error_code(err.code, detail)
    elif is_quota_exceeded_error(detail):
        code = ErrorCode.QUOTA
    elif is_context_window_exceeded_error(detail):
        code = ErrorCode.CONTEXT_WINDOW_EXCEEDED
    elif "rate" in detail.lower() and "limit" in detail.lower():
        code = ErrorCode.RATE_LIMIT
    else:
        code = ErrorCode.SERVER
    return Error(redact_failure(LlmFailure(f"DeepSeek stream error: {message}", code), secrets))


class _ToolState:
    __slots__ = ("args", "id", "index", "name")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id = ""
        self.name: str | None = None
        self.args: list[str] = []


class Translator:
    """Per-response translation state (a `wire.pump.Translator`): `feed` one SSE event at a time
    until `done` is True, then `end` (which fails a stream that stopped before ``[DONE]``).

    `secrets` (the request's credentials) are redacted from provider text that ends up in a
    failure message.
    """

    __slots__ = (
        "_naming",
        "_next",
        "_order",
        "_reasoning",
        "_reasoning_index",
        "_response_id",
        "_response_model",
        "_secrets",
        "_text",
        "_text_index",
        "_tools",
        "done",
        "finish",
        "usage",
    )

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        self._secrets = secrets
        self._next = 0
        self._order: list[tuple[str, int, _ToolState | None]] = []
        self._text: list[str] = []
        self._text_index = -1
        self._reasoning: list[str] = []
        self._reasoning_index = -1
        self._tools: dict[int, _ToolState] = {}
        self._response_id: str | None = None
        self._response_model: str | None = None
        self._naming = True  # decode `id` / `model` until both are known
        self.finish: FinishReason | None = None
        self.usage: TokenUsage | None = None
        self.done = False

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one SSE event's data payload, appending the chunks it produces to `out`.

        Raises `LlmError` ``MALFORMED_RESPONSE`` for a payload that is not valid JSON of the
        chunk shape. After ``[DONE]`` (or an in-band error) `done` is True.
        """
        data = event.data
        if data == DONE:
            self._close(out)
            return
        payload: _Payload
        try:
            if self._naming:
                payload = self._named(_NAMED_DECODER.decode(data))
            else:
                payload = _DECODER.decode(data)
        except msgspec.DecodeError:
            raise LlmError(
                f"malformed SSE payload: {redact_secrets(data, self._secrets)[:120]}",
                ErrorCode.MALFORMED_RESPONSE,
            ) from None
        if payload.choices:
            for choice in payload.choices:
                delta = choice.delta
                if delta is not None:
                    text = delta.reasoning_content
                    if text:
                        if self._reasoning_index < 0:
                            self._reasoning_index = self._open("reasoning", out)
                        self._reasoning.append(text)
                        out.append(ReasoningDelta(self._reasoning_index, text))
                    text = delta.content
                    if text:
                        if self._text_index < 0:
                            self._text_index = self._open("text", out)
                        self._text.append(text)
                        out.append(TextDelta(self._text_index, text))
                    if delta.tool_calls:
                        self._tool_deltas(delta.tool_calls, out)
                if choice.finish_reason is not None:
                    finish = map_finish_reason(choice.finish_reason)
                    if isinstance(finish, Error):  # provider text in the message and code
                        finish = Error(redact_failure(finish.failure, self._secrets))
                    self.finish = finish
        if payload.usage is not None:
            self.usage = _map_usage(payload.usage)
        if payload.error is not None:
            if self.usage is not None:
                out.append(UsageChunk(self.usage))
            out.append(Finish(_stream_error(payload.error, self._secrets)))
            self.done = True

    def push(self, data: str, out: list[StreamChunk]) -> None:
        """`feed` for a bare data payload."""
        self.feed(SseEvent(None, data), out)

    def end(self, out: list[StreamChunk]) -> None:
        """The stream is over: nothing is owed after ``[DONE]``; without it the stream was cut."""
        if not self.done:
            raise LlmError("SSE stream ended without [DONE]", ErrorCode.STREAM_CLOSED)

    def _named(self, payload: _NamedPayload) -> _NamedPayload:
        """Keep the first `id` and `model` the stream reports (then stop decoding them)."""
        if payload.id and self._response_id is None:
            self._response_id = payload.id
        if payload.model and self._response_model is None:
            self._response_model = payload.model
        self._naming = self._response_id is None or self._response_model is None
        return payload

    def _open(self, kind: str, out: list[StreamChunk], tool: _ToolState | None = None) -> int:
        index = self._next
        self._next += 1
        self._order.append((kind, index, tool))
        out.append(BlockStart(index, kind))
        return index

    def _tool_deltas(self, calls: list[_ToolCallDelta], out: list[StreamChunk]) -> None:
        for call in calls:
            if call.type not in (None, "function"):
                continue  # a kind of call DeepSeek does not send: never a function call
            state = self._tools.get(call.index)
            if state is None:
                state = _ToolState(self._next)
                self._tools[call.index] = state
                self._open("tool-call", out, state)
            if call.id:
                state.id = redact_call_id(call.id, self._secrets, state.index)
            fragment = ""
            fn = call.function
            if fn is not None:
                if fn.name:
                    state.name = fn.name
                fragment = fn.arguments or ""
            state.args.append(fragment)
            out.append(ToolCallDelta(state.index, state.id, fragment, state.name))

    def _close(self, out: list[StreamChunk]) -> None:
        for kind, index, tool in self._order:
            if tool is not None:
                block: ToolCallBlock | TextBlock | ReasoningBlock = ToolCallBlock(
                    tool.id, tool.name or "", "".join(tool.args)
                )
            elif kind == "text":
                block = TextBlock("".join(self._text))
            else:
                block = ReasoningBlock("".join(self._reasoning))
            out.append(BlockEnd(index, block))
        if self.usage is not None:
            out.append(UsageChunk(self.usage))
        reason = self.finish
        inferred = reason is None
        if reason is None:
            reason = _TOOL_CALLS if self._tools else _STOP
        if isinstance(reason, Stop) and not self._order:
            reason = Error(LlmFailure(EMPTY_RESPONSE_MESSAGE, ErrorCode.EMPTY_RESPONSE))
        envelope = None if isinstance(reason, Error) else self._envelope(inferred)
        out.append(Finish(reason, envelope))
        self.done = True

    def _envelope(self, inferred: bool) -> ReplayEnvelope | None:
        """The response's id and model as replay state (None when the stream named neither),
        and whether the finish was inferred; never a credential (`redact_metadata`)."""
        response: dict[str, object] = {}
        if self._response_id is not None:
            response["response_id"] = self._response_id
        if self._response_model is not None:
            response["response_model"] = self._response_model
        if inferred:
            response["extras"] = {"finish": "inferred"}
        return redact_metadata(ReplayEnvelope(response), self._secrets) if response else None
