"""What a client-side rate-limit wait says: the notice the limiter gives, and its log event.

A call that must wait before its request (its route's concurrency is taken, its request or token
budget is spent, the provider asked for a pause) announces the wait once per reason with a
`RateLimitNotice`; the agent records it as the `llm/rate-limit-wait` event (`LlmRateLimitWait`)
of the attempt that waits, and the CLI prints it on stderr. Pure data beside `modelwire.events`
(layer 2), in a module of its own only to keep `events.py` within the module size budget;
`modelwire.events` imports it and registers the event type with the others.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

__all__ = ["LlmRateLimitWait", "RateLimitNotice", "WaitReason"]

WaitReason: TypeAlias = Literal["concurrency", "queue", "requests", "tokens", "retry-after"]
"""Why a call waits: `concurrency` (the route's `max_concurrency` calls are in flight), `queue`
(earlier calls of the route wait first: the queue is FIFO), `requests` / `tokens` (the request or
token budget is spent, locally or as the provider published it, until its reset), `retry-after`
(the provider asked the route to pause)."""


class RateLimitNotice(msgspec.Struct, frozen=True, kw_only=True):
    """A call of `route` starts to wait for `reason`.

    `wait_ms` is how long the wait is expected to last (None: until an earlier call of the route
    ends, which no clock can say); `detail` names the budget in plain words (no secret: numbers
    and field names only).
    """

    route: str
    reason: WaitReason
    wait_ms: float | None
    detail: str


class LlmRateLimitWait(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`llm/rate-limit-wait`: attempt `attempt` of step `step` waited before its request, on the
    route's client-side rate limit (appended when the wait starts, one per reason)."""

    turn: int
    step: int
    attempt: int
    provider: str
    reason: WaitReason
    wait_ms: float | None = None
    detail: str = ""
