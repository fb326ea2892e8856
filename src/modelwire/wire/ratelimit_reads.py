"""One call's body reads under its route's client-side rate limits (`wire.ratelimit`).

Shared by every adapter that owns a `RateLimiter` (the providers routes, the DeepSeek adapter):

- `estimate_tokens` — the token estimate a call is admitted with: its JSON body bytes / 4, at
  most the model's context window (the usage the call reports corrects it at release);
- `limited_reads` — wraps the reads of one call: the first read waits for the route's permit
  (before the request is sent: the inner reads do nothing until they are first read), and the
  permit goes back when the reads end — completed, failed, cancelled or closed early by the pump —
  with the tokens `used()` then reports. A permit is only taken inside the generator's body, so
  reads that are never started hold none; cancelling the waiting task leaves the queue.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Final, TypeVar

from .ratelimit import RateLimiter, RouteLimits

__all__ = ["BYTES_PER_TOKEN", "estimate_tokens", "limited_reads"]

T = TypeVar("T")  # a read: body bytes, or its pieces

BYTES_PER_TOKEN: Final = 4
"""The rough request size of one token, in JSON body bytes."""


def estimate_tokens(body: bytes, context_window: int | None) -> int:
    """A rough token estimate of a request body (bytes / 4, at most `context_window` when set)."""
    estimate = len(body) // BYTES_PER_TOKEN
    return min(estimate, context_window) if context_window else estimate


async def limited_reads(
    reads: AsyncGenerator[T, None],
    limiter: RateLimiter,
    route: str,
    estimated_tokens: int,
    used: Callable[[], int | None],
    *,
    limits: RouteLimits | None = None,
) -> AsyncGenerator[T, None]:
    """`reads`, started once `limiter` grants `route` (configured with `limits`) a permit; the
    permit is released however the reads end, with `used()` tokens (None: not reported)."""
    permit = await limiter.acquire(route, estimated_tokens, limits=limits)
    try:
        async for data in reads:
            yield data
    finally:
        try:
            await reads.aclose()
        finally:
            limiter.release(permit, used())
