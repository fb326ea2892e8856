"""OpenTelemetry for model calls and agents, following the OpenTelemetry GenAI semantic
conventions: `instrument(runtime)` emits one span per model call and the GenAI client metrics
(`gen_ai.client.token.usage`, `gen_ai.client.operation.duration`); `instrument(agent)` adds one
`invoke_agent` span per turn and one `execute_tool` span per tool call, with the model calls and
the tools of a turn nested under its span (`instrument_agent(agent)`: only those).

Optional: install the `otel` extra (`opentelemetry-api`). Without it `instrument` does nothing
(no span, no error), and neither `import modelwire` nor `import modelwire.telemetry` imports
OpenTelemetry. Message content is put on spans only when `capture_content=True`.
"""

from __future__ import annotations

from .instrument import instrument, instrument_agent

__all__ = ["instrument", "instrument_agent"]
