"""Token usage in disjoint buckets, and the serializable failure facts of one call."""

from __future__ import annotations

from typing import Annotated, TypeAlias

import msgspec

__all__ = ["LlmFailure", "TokenCount", "TokenUsage"]

TokenCount: TypeAlias = Annotated[int, msgspec.Meta(ge=0)]
"""A token count as a provider reports it: a negative one does not decode (issue 29: the adapters'
usage structs use it, so a negative count is a malformed event, never a budget going backwards)."""


class TokenUsage(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """Token counts in disjoint buckets.

    `input_tokens` is uncached input only; cache reads and writes live in their own buckets, so
    billed input is `input_tokens + cache_read_tokens + cache_write_tokens`. `reasoning_tokens` is a
    part of `output_tokens`, never counted on top of it.
    """

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    @property
    def billed_input_tokens(self) -> int:
        """Uncached input plus cache reads plus cache writes."""
        return self.input_tokens + (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)

    @property
    def total_tokens(self) -> int:
        """Billed input plus output (reasoning is inside output, counted once)."""
        return self.billed_input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            _add_opt(self.cache_read_tokens, other.cache_read_tokens),
            _add_opt(self.cache_write_tokens, other.cache_write_tokens),
            _add_opt(self.reasoning_tokens, other.reasoning_tokens),
        )

    def __sub__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            _sub_opt(self.cache_read_tokens, other.cache_read_tokens),
            _sub_opt(self.cache_write_tokens, other.cache_write_tokens),
            _sub_opt(self.reasoning_tokens, other.reasoning_tokens),
        )


def _add_opt(a: int | None, b: int | None) -> int | None:
    if a is None and b is None:
        return None
    return (a or 0) + (b or 0)


def _sub_opt(a: int | None, b: int | None) -> int | None:
    if a is None and b is None:
        return None
    return (a or 0) - (b or 0)


class LlmFailure(msgspec.Struct, frozen=True, omit_defaults=True):
    """Serializable facts about one failed call: text, stable code, and optional HTTP facts.

    It carries no policy (no retryable flag): retry decisions read `code` against a policy.
    """

    message: str
    code: str
    status: int | None = None
    provider_retry_after_ms: float | None = None
    request_id: str | None = None
