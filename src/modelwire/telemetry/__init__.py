"""OpenTelemetry for model calls: `instrument(runtime)` emits one span per call, following the
OpenTelemetry GenAI semantic conventions, and the GenAI client metrics.

Optional: install the `otel` extra (`opentelemetry-api`). Without it `instrument` does nothing
(no span, no error), and `import modelwire` never imports OpenTelemetry. Message content is put
on spans only when `capture_content=True`.
"""

from __future__ import annotations

from .instrument import instrument

__all__ = ["instrument"]
