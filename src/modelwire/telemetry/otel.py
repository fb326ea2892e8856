"""OpenTelemetry, loaded only when an instrumentation is installed: the tracer, the two GenAI
client histograms and the helpers every span of this package shares.

Nothing here imports OpenTelemetry at module import (`import modelwire.telemetry` stays free of
it); `load` does, and answers None when the `otel` extra is not installed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from ..codes import ErrorCode

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["ABORTED", "SCOPE", "Instruments", "error_type", "load"]

SCOPE: Final = "modelwire"
"""The instrumentation scope name of every span and metric."""

TOKEN_BUCKETS: Final = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)
"""`gen_ai.client.token.usage` bucket boundaries (GenAI semantic conventions, advisory)."""

DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24)
"""`gen_ai.client.operation.duration` bucket boundaries in seconds (advisory)."""

ABORTED: Final = ErrorCode.ABORTED.value
"""`error.type` of a cancelled call, turn or tool (plain `str`, as every attribute value here)."""

_METRIC_CACHE: Final = 256


def error_type(exc: BaseException) -> str:
    """`error.type` of an exception: our failure code when it carries one, `ABORTED` for a
    cancellation, else the exception's class name (never its message: it may hold anything)."""
    if isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
        return ABORTED
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code:
        return str(code)
    return type(exc).__qualname__


class Instruments:
    """The tracer and histograms of one instrumentation, and whether content is recorded.

    `metric_attributes` hands out the attribute sets of a call's measurements, built once per
    (route, model, response model, error) and reused (a bounded cache): the SDK copies them.
    """

    __slots__ = (
        "_metric_sets",
        "capture_content",
        "context",
        "duration",
        "tokens",
        "trace",
        "tracer",
    )

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        capture_content: bool,
    ) -> None:
        from opentelemetry import context, metrics, trace

        self.trace = trace
        self.context = context
        self.tracer: Tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
        self.tokens: Histogram = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used per model call",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.duration: Histogram = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Duration of a model call",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.capture_content = capture_content
        self._metric_sets: dict[
            tuple[str, str, str | None, str | None],
            tuple[Mapping[str, str], Mapping[str, str], Mapping[str, str]],
        ] = {}

    def metric_attributes(
        self, provider: str, model: str, response_model: str | None, error: str | None
    ) -> tuple[Mapping[str, str], Mapping[str, str], Mapping[str, str]]:
        """The (input tokens, output tokens, duration) attribute sets of one call."""
        key = (provider, model, response_model, error)
        found = self._metric_sets.get(key)
        if found is not None:
            return found
        base = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        if response_model is not None:
            base["gen_ai.response.model"] = response_model
        duration = dict(base)
        if error is not None:
            duration["error.type"] = error
        built = (
            {**base, "gen_ai.token.type": "input"},
            {**base, "gen_ai.token.type": "output"},
            duration,
        )
        if len(self._metric_sets) >= _METRIC_CACHE:
            self._metric_sets.clear()
        self._metric_sets[key] = built
        return built

    def fail(self, span: Span, error: str) -> None:
        """Mark `span` failed with `error.type` = `error` (status ERROR, the code as description)."""
        span.set_attribute("error.type", error)
        span.set_status(self.trace.Status(self.trace.StatusCode.ERROR, error))


def load(
    tracer_provider: TracerProvider | None,
    meter_provider: MeterProvider | None,
    capture_content: bool,
) -> Instruments | None:
    """The instruments on these providers (None: the globals), or None without OpenTelemetry."""
    try:
        return Instruments(tracer_provider, meter_provider, capture_content)
    except ImportError:
        return None
