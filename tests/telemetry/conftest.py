"""Fixtures of the telemetry tests (the helpers live in `otel_helpers.py`)."""

from __future__ import annotations

from otel_helpers import log, otel

__all__ = ["log", "otel"]
