"""One span and the client metrics per model call: an `llm/generate` and an `llm/stream` middleware.

Span: name `chat <model>`, kind CLIENT, started when the call starts with the request attributes
`gen_ai.operation.name` (`chat`), `gen_ai.provider.name` (the route), `gen_ai.request.model`,
`gen_ai.request.temperature`, `gen_ai.request.max_tokens`, `gen_ai.request.stop_sequences`,
`gen_ai.conversation.id` (the session) and, inside an instrumented agent turn, `modelwire.turn`,
`modelwire.step`, `modelwire.attempt`. When the call ends, once: `gen_ai.response.model` and
`gen_ai.response.id` (when the finish's replay state names them), `gen_ai.response.finish_reasons`,
`gen_ai.usage.input_tokens` (every prompt token: uncached, cache reads and cache writes),
`gen_ai.usage.output_tokens`, `gen_ai.usage.cache_read.input_tokens`,
`gen_ai.usage.cache_creation.input_tokens`, and on a failed call `error.type` = the failure code
with status ERROR. Metrics: `gen_ai.client.token.usage` (by `gen_ai.token.type` input/output) and
`gen_ai.client.operation.duration` (seconds, with `error.type` on a failure).

Cost per chunk: `rt.generate()` is traced by the generate middleware from its assembled result,
and its own stream passes through untouched — no work per chunk at all. `rt.stream()` (and the
agent's calls) are traced by a generator over the stream that does one type lookup per chunk;
everything else happens once, at the start and at the end. Content (`gen_ai.input.messages`,
`gen_ai.system_instructions`, `gen_ai.output.messages`) only with `capture_content=True`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final

import msgspec

from ..vocab import (
    Aborted,
    Error,
    Finish,
    FinishReason,
    GenerateOptions,
    MaxTokens,
    ReplayEnvelope,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCalls,
    UsageChunk,
)
from .otel import ABORTED, Instruments, error_type
from .scope import CURRENT_TURN, TurnScope

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

    from ..runtime.generate import GenerateResult
    from ..runtime.middleware import CallNext, GenerateNext

__all__ = ["generate_middleware", "stream_middleware"]

_FINISH_NAMES: Final[Mapping[type[FinishReason], str]] = {
    Stop: "stop",
    ToolCalls: "tool_calls",
    MaxTokens: "length",
    Error: "error",
    Aborted: "cancelled",
}
_TAIL: Final = frozenset({UsageChunk, Finish})
_TAIL_AND_TEXT: Final = frozenset({UsageChunk, Finish, TextDelta})

_GENERATING: Final[ContextVar[list[bool] | None]] = ContextVar(
    "modelwire.telemetry.generating", default=None
)
"""Set by the generate middleware around its call: the first stream under it is its own."""


def _request_attributes(
    tools: Instruments, options: GenerateOptions, scope: TurnScope | None
) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": options.provider,
        "gen_ai.request.model": options.model,
    }
    if options.temperature is not None:
        attributes["gen_ai.request.temperature"] = options.temperature
    if options.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = options.max_tokens
    if options.stop:
        attributes["gen_ai.request.stop_sequences"] = options.stop
    if options.session_id is not None:
        attributes["gen_ai.conversation.id"] = options.session_id
    if scope is not None:
        attributes["modelwire.turn"] = scope.turn
        attributes["modelwire.step"] = scope.step
        attributes["modelwire.attempt"] = scope.attempt
    if tools.capture_content:
        attributes["gen_ai.input.messages"] = msgspec.json.encode(options.messages).decode()
        if options.system is not None:
            attributes["gen_ai.system_instructions"] = options.system
    return attributes


def _response(replay: ReplayEnvelope | None) -> tuple[str | None, str | None]:
    """The response id and model the finish's replay state names (adapters that keep them)."""
    response = replay.response if replay is not None else None
    if not isinstance(response, Mapping):
        return None, None
    return _named(response.get("response_id")), _named(response.get("response_model"))


def _named(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class _Call:
    """One traced model call: its span (started now) and what its end records."""

    __slots__ = ("options", "scope", "span", "started", "tools")

    def __init__(self, tools: Instruments, options: GenerateOptions) -> None:
        scope = CURRENT_TURN.get()
        if scope is not None and scope.session_id != options.session_id:
            scope = None  # another session's call made from inside a turn
        self.tools = tools
        self.options = options
        self.scope = scope
        self.span = tools.tracer.start_span(
            f"chat {options.model}",
            kind=tools.trace.SpanKind.CLIENT,
            attributes=_request_attributes(tools, options, scope),
        )
        self.started = time.perf_counter()

    def end(
        self,
        usage: TokenUsage | None,
        reason: FinishReason | None,
        replay: ReplayEnvelope | None,
        error: str | None,
        text: str | None,
    ) -> None:
        """Record the call's outcome on its span and in the metrics, then end the span."""
        elapsed = time.perf_counter() - self.started
        if error is None and isinstance(reason, (Error, Aborted)):
            error = str(reason.failure.code)
        response_id, response_model = _response(replay)
        tools, span, options = self.tools, self.span, self.options
        if span.is_recording():
            attributes: dict[str, AttributeValue] = {}
            if reason is not None:
                name = _FINISH_NAMES.get(type(reason), reason.kind)
                attributes["gen_ai.response.finish_reasons"] = (name,)
            if response_id is not None:
                attributes["gen_ai.response.id"] = response_id
            if response_model is not None:
                attributes["gen_ai.response.model"] = response_model
            if usage is not None:
                attributes.update(_usage_attributes(usage))
            if text is not None:
                attributes["gen_ai.output.messages"] = text
            span.set_attributes(attributes)
            if error is not None:
                tools.fail(span, error)
        span.end()
        inputs, outputs, duration = tools.metric_attributes(
            options.provider, options.model, response_model, error
        )
        if usage is not None:
            prompt = usage.input_tokens + (usage.cache_read_tokens or 0)
            prompt += usage.cache_write_tokens or 0
            tools.tokens.record(prompt, inputs)
            tools.tokens.record(usage.output_tokens, outputs)
            scope = self.scope
            if scope is not None:
                scope.calls += 1
                scope.input_tokens += prompt
                scope.output_tokens += usage.output_tokens
        tools.duration.record(elapsed, duration)


def _usage_attributes(usage: TokenUsage) -> dict[str, AttributeValue]:
    read = usage.cache_read_tokens or 0
    write = usage.cache_write_tokens or 0
    attributes: dict[str, AttributeValue] = {
        "gen_ai.usage.input_tokens": usage.input_tokens + read + write,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    if usage.cache_read_tokens is not None:
        attributes["gen_ai.usage.cache_read.input_tokens"] = read
    if usage.cache_write_tokens is not None:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = write
    return attributes


def _answer_text(result: GenerateResult) -> str:
    return "".join(b.text for b in result.message.content if isinstance(b, TextBlock))


def generate_middleware(
    tools: Instruments,
) -> Callable[[GenerateOptions, GenerateNext], Awaitable[GenerateResult]]:
    """The `llm/generate` middleware: one span per `generate()` call, from its result."""

    async def traced(options: GenerateOptions, call_next: GenerateNext) -> GenerateResult:
        call = _Call(tools, options)
        token = _GENERATING.set([True])
        try:
            result = await call_next()
        except BaseException as exc:
            call.end(None, None, None, error_type(exc), None)
            raise
        finally:
            _GENERATING.reset(token)
        text = _answer_text(result) if tools.capture_content else None
        call.end(result.usage, result.finish, result.replay_state, None, text)
        return result

    return traced


def stream_middleware(
    tools: Instruments,
) -> Callable[[GenerateOptions, CallNext], AsyncIterator[StreamChunk]]:
    """The `llm/stream` middleware: one span per streamed call; a `generate()` call's own stream
    is handed through as it is (the generate middleware traces it)."""

    def traced(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        pending = _GENERATING.get()
        if pending:
            pending.clear()  # claimed: a second stream under the same generate() is traced
            return call_next()
        return _traced_stream(tools, options, call_next)

    return traced


async def _traced_stream(
    tools: Instruments, options: GenerateOptions, call_next: CallNext
) -> AsyncIterator[StreamChunk]:
    call = _Call(tools, options)
    watched = _TAIL_AND_TEXT if tools.capture_content else _TAIL
    texts: list[str] = []
    usage: TokenUsage | None = None
    finish: Finish | None = None
    error: str | None = None
    try:
        async for chunk in call_next():
            if type(chunk) in watched:  # the only per-chunk work: one set lookup
                if type(chunk) is TextDelta:
                    texts.append(chunk.text)
                elif type(chunk) is UsageChunk:
                    usage = chunk.usage
                elif type(chunk) is Finish:
                    finish = chunk
            yield chunk
    except GeneratorExit:  # the consumer closed the stream: a failure only before the finish
        if finish is None:
            error = ABORTED
        raise
    except BaseException as exc:
        error = error_type(exc)
        raise
    finally:
        reason = finish.reason if finish is not None else None
        replay = finish.replay_state if finish is not None else None
        text = "".join(texts) if tools.capture_content else None
        call.end(usage, reason, replay, error, text)
