"""The gateway request as an OpenTelemetry server span, when telemetry is on and OpenTelemetry is
installed: `POST /v1/chat/completions` (kind SERVER) with the method, path, the key's name (never
the key) and the response status; a `traceparent` the client sent makes it part of the client's
trace. The upstream call's client span (`modelwire.telemetry.instrument`) is its child."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["RequestSpans"]


class RequestSpans:
    """Starts the server span of each request (module docstring); a no-op without OpenTelemetry."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self._tracer: Tracer | None = None
        try:
            from opentelemetry import trace
        except ImportError:
            return
        provider = tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer("modelwire")

    @contextlib.contextmanager
    def span(self, method: str, path: str, headers: Mapping[str, str]) -> Iterator[Span | None]:
        """The server span of one request, current while the handler runs (None: no tracing)."""
        tracer = self._tracer
        if tracer is None:
            yield None
            return
        from opentelemetry import propagate, trace

        parent = propagate.extract(dict(headers))
        attributes = {"http.request.method": method, "url.path": path}
        with tracer.start_as_current_span(
            f"{method} {path}", context=parent, kind=trace.SpanKind.SERVER, attributes=attributes
        ) as span:
            yield span
