"""A providers call under its route's client-side rate limits (`wire.ratelimit`).

The route's side of the shared `wire.ratelimit_reads`: the token estimate of a request for its
model (bytes / 4, at most the model's context window), and `limited_reads` for one call of a
profile, whose permit goes back with the tokens the call's `ResponseRecord` reported.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from ...wire import ratelimit_reads
from ...wire.pump import Read
from ...wire.ratelimit import RateLimiter
from .config import ResolvedProfile
from .materialize import ModelDescriptor
from .protocols import ResponseRecord

__all__ = ["limited_reads", "request_tokens"]


def request_tokens(body: bytes, model: ModelDescriptor) -> int:
    """A rough token estimate of a request (its JSON bytes / 4, at most the context window)."""
    return ratelimit_reads.estimate_tokens(body, model.context_window)


def _used(record: ResponseRecord) -> int | None:
    """The tokens the response reported (every bucket), None when it reported none."""
    if not record.reported:
        return None
    return record.input + record.output + record.cache_read + record.cache_write


def limited_reads(
    reads: AsyncGenerator[Read, None],
    limiter: RateLimiter,
    profile: ResolvedProfile,
    estimated_tokens: int,
    record: ResponseRecord,
) -> AsyncGenerator[Read, None]:
    """`reads`, started once `limiter` grants the route a permit; the permit is released
    however the reads end (`wire.ratelimit_reads.limited_reads`)."""
    return ratelimit_reads.limited_reads(
        reads,
        limiter,
        profile.route,
        estimated_tokens,
        lambda: _used(record),
        limits=profile.rate_limits,
    )
