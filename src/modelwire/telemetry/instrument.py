"""`instrument(runtime)`: an `llm/stream` middleware that wraps every model call in a span.

Span: name `chat <model>`, kind CLIENT; attributes `gen_ai.operation.name` (`chat`),
`gen_ai.provider.name` (the route), `gen_ai.request.model`, `gen_ai.request.temperature`,
`gen_ai.request.max_tokens`, `gen_ai.response.model`, `gen_ai.response.id` (when the finish's
replay state names them), `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens` (every
prompt token: uncached, cache reads and cache writes), `gen_ai.usage.output_tokens`,
`gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_creation.input_tokens`, and on a
failed call `error.type` = the failure code with the span status ERROR. Metrics:
`gen_ai.client.token.usage` (histogram, `{token}`, by `gen_ai.token.type` input/output) and
`gen_ai.client.operation.duration` (histogram, seconds).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..vocab import (
    Aborted,
    Error,
    Finish,
    FinishReason,
    GenerateOptions,
    MaxTokens,
    Stop,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCalls,
    UsageChunk,
)

if TYPE_CHECKING:
    from ..runtime import LlmRuntime
    from ..runtime.middleware import CallNext

__all__ = ["instrument"]

_SCOPE: Final = "modelwire"
_FINISH_NAMES: Final[dict[type[FinishReason], str]] = {
    Stop: "stop",
    ToolCalls: "tool_calls",
    MaxTokens: "length",
    Error: "error",
    Aborted: "cancelled",
}


def _otel() -> Any | None:  # Any: the optional dependency is typed only when installed
    try:
        from opentelemetry import metrics, trace
    except ImportError:
        return None
    return trace, metrics


class _Instruments:
    """The tracer and the two histograms of one instrumented runtime."""

    def __init__(
        self, tracer_provider: object, meter_provider: object, capture_content: bool
    ) -> None:
        loaded = _otel()
        assert loaded is not None
        trace, metrics = loaded
        self.trace = trace
        self.tracer = trace.get_tracer(_SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(_SCOPE, meter_provider=meter_provider)
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used per model call"
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="Model call duration"
        )
        self.capture_content = capture_content


def _request_attributes(options: GenerateOptions) -> dict[str, object]:
    attributes: dict[str, object] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": options.provider,
        "gen_ai.request.model": options.model,
    }
    if options.temperature is not None:
        attributes["gen_ai.request.temperature"] = options.temperature
    if options.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = options.max_tokens
    if options.session_id is not None:
        attributes["gen_ai.conversation.id"] = options.session_id
    return attributes


def _usage_attributes(usage: TokenUsage) -> dict[str, int]:
    read = usage.cache_read_tokens or 0
    write = usage.cache_write_tokens or 0
    attributes = {
        "gen_ai.usage.input_tokens": usage.input_tokens + read + write,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    if usage.cache_read_tokens is not None:
        attributes["gen_ai.usage.cache_read.input_tokens"] = read
    if usage.cache_write_tokens is not None:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = write
    return attributes


def _finish_attributes(finish: Finish) -> dict[str, object]:
    reason = finish.reason
    attributes: dict[str, object] = {
        "gen_ai.response.finish_reasons": (_FINISH_NAMES.get(type(reason), reason.kind),)
    }
    response = finish.replay_state.response if finish.replay_state is not None else None
    if isinstance(response, dict):
        for key, name in (
            ("response_id", "gen_ai.response.id"),
            ("response_model", "gen_ai.response.model"),
        ):
            value = response.get(key)
            if isinstance(value, str) and value:
                attributes[name] = value
    return attributes


def _middleware(
    tools: _Instruments,
) -> Callable[[GenerateOptions, CallNext], AsyncIterator[StreamChunk]]:
    trace = tools.trace

    async def traced(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        attributes = _request_attributes(options)
        if tools.capture_content:
            attributes["gen_ai.input.messages"] = msgspec.json.encode(options.messages).decode()
        started = time.perf_counter()
        span = tools.tracer.start_span(
            f"chat {options.model}", kind=trace.SpanKind.CLIENT, attributes=attributes
        )
        usage: TokenUsage | None = None
        error: str | None = None
        texts: list[str] | None = [] if tools.capture_content else None
        try:
            async for chunk in call_next():
                if type(chunk) is TextDelta:
                    if texts is not None:
                        texts.append(chunk.text)
                elif type(chunk) is UsageChunk:
                    usage = chunk.usage
                elif type(chunk) is Finish:
                    span.set_attributes(_finish_attributes(chunk))
                    reason = chunk.reason
                    if isinstance(reason, (Error, Aborted)):
                        error = reason.failure.code
                yield chunk
        except BaseException as exc:
            error = error or type(exc).__name__
            raise
        finally:
            metric = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": options.provider}
            metric["gen_ai.request.model"] = options.model
            if usage is not None:
                span.set_attributes(_usage_attributes(usage))
                read = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
                tools.tokens.record(
                    usage.input_tokens + read, {**metric, "gen_ai.token.type": "input"}
                )
                tools.tokens.record(usage.output_tokens, {**metric, "gen_ai.token.type": "output"})
            if texts is not None:
                span.set_attribute("gen_ai.output.messages", "".join(texts))
            if error is not None:
                span.set_attribute("error.type", error)
                span.set_status(trace.Status(trace.StatusCode.ERROR, error))
                metric["error.type"] = error
            tools.duration.record(time.perf_counter() - started, metric)
            span.end()

    return traced


def instrument(
    runtime: LlmRuntime,
    *,
    tracer_provider: object | None = None,
    meter_provider: object | None = None,
    capture_content: bool = False,
) -> Callable[[], None]:
    """Emit a span and the client metrics for every model call of `runtime` (outermost
    middleware, so a re-routing middleware's final route is what the adapter served); returns a
    disposer. Without OpenTelemetry installed it does nothing and the disposer is a no-op.

    `tracer_provider` / `meter_provider` default to the global ones. `capture_content=True` also
    records the request messages and the answer text (off by default: they may be sensitive).
    """
    if _otel() is None:
        return lambda: None
    tools = _Instruments(tracer_provider, meter_provider, capture_content)
    return runtime.use(_middleware(tools), prepend=True)
