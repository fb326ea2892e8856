"""A providers call under its route's client-side rate limits (`wire.ratelimit`).

`limited_reads` wraps the body reads of one call: the first read waits for the route's permit
(before the request is sent: the inner reads do nothing until they are first read), and the
permit goes back when the reads end — completed, failed, cancelled or closed early by the pump —
with the tokens the response reported. A permit is only taken inside the generator's body, so
reads that are never started hold none.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Final

from ...wire.ratelimit import RateLimiter
from .config import ResolvedProfile
from .materialize import ModelDescriptor
from .protocols import ResponseRecord

__all__ = ["limited_reads", "request_tokens"]

_BYTES_PER_TOKEN: Final = 4


def request_tokens(body: bytes, model: ModelDescriptor) -> int:
    """A rough token estimate of a request (its JSON bytes / 4, at most the context window)."""
    estimate = len(body) // _BYTES_PER_TOKEN
    window = model.context_window
    return min(estimate, window) if window else estimate


def _used(record: ResponseRecord) -> int | None:
    """The tokens the response reported (every bucket), None when it reported none."""
    if not record.reported:
        return None
    return record.input + record.output + record.cache_read + record.cache_write


async def limited_reads(
    reads: AsyncGenerator[bytes, None],
    limiter: RateLimiter,
    profile: ResolvedProfile,
    estimated_tokens: int,
    record: ResponseRecord,
) -> AsyncGenerator[bytes, None]:
    """`reads`, started once `limiter` grants the route a permit; the permit is released
    however the reads end (see the module docstring)."""
    permit = await limiter.acquire(profile.route, estimated_tokens, limits=profile.rate_limits)
    try:
        async for data in reads:
            yield data
    finally:
        try:
            await reads.aclose()
        finally:
            limiter.release(permit, _used(record))
