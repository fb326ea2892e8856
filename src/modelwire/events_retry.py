"""The retry plugin's log events: `llm/retry` (a retry was decided) and `llm/retry-started` (its
wait completed). Pure data beside `modelwire.events` (layer 2), which registers them."""

from __future__ import annotations

from typing import Literal

import msgspec

from .vocab import LlmFailure

__all__ = ["LlmRetry", "LlmRetryStarted"]


class LlmRetry(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """`llm/retry`: a retry was decided (appended before the wait); always mode omits `max_retries`."""

    retry_id: str
    turn: int
    step: int
    provider: str
    policy_key: str
    mode: Literal["normal", "always"]
    failure: LlmFailure
    retry: int
    max_retries: int | None = None
    delay_ms: float


class LlmRetryStarted(msgspec.Struct, frozen=True, kw_only=True):
    """`llm/retry-started`: the wait of retry `retry` completed and the attempt starts."""

    retry_id: str
    turn: int
    step: int
    retry: int
