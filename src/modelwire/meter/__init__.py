"""The token meter: projections over a session's durable events.

`TokenMeter` is the usage projection (billed tokens per provider call, keyed by turn, step and
attempt, in disjoint buckets) — rebuildable from the log at any seq and updated incrementally —
and its cost in USD (`Decimal`, at the prices logged in `request/context`; None when unknown).
`ContextMeter` adds the heuristic context views (pressure and composition) built on the fixed
estimator in `estimate.py`; `TokenMeasure` sizes the next request from the latest usage anchor.
"""

from __future__ import annotations

from .context import ContextBreakdown, ContextMeter, ContextPressure, ContextState
from .estimate import (
    estimate_blocks,
    estimate_header,
    estimate_message,
    estimate_system,
    estimate_tools,
    utf16_length,
)
from .measure import Baseline, Measurement, SurfaceNode, TokenMeasure, canonical_header
from .usage import ZERO_USAGE, CallKey, MeterState, TokenMeter, UsageReport, normalize_usage

__all__ = [
    "ZERO_USAGE",
    "Baseline",
    "CallKey",
    "ContextBreakdown",
    "ContextMeter",
    "ContextPressure",
    "ContextState",
    "Measurement",
    "MeterState",
    "SurfaceNode",
    "TokenMeasure",
    "TokenMeter",
    "UsageReport",
    "canonical_header",
    "estimate_blocks",
    "estimate_header",
    "estimate_message",
    "estimate_system",
    "estimate_tools",
    "normalize_usage",
    "utf16_length",
]
