"""`LlmRuntime.embed`: check an `EmbedOptions`, dispatch it to its route, retry like a chat call.

Every check runs before the adapter is asked anything (`INVALID_OPTION` naming the field):
`inputs` a non-empty list of non-empty strings (a single string is refused by name, not split
into characters), `dimensions` a positive integer, `encoding_format` one of
`vocab.embeddings.ENCODING_FORMATS`, `timeout_ms` a non-negative integer.

Splitting: the adapter's `embed_limits` says how many inputs (and about how many tokens) one
provider request takes; a longer list is split into consecutive requests within both (an input
over the token budget alone goes alone), at most `EMBED_CONCURRENCY` in flight, each retried on
its own, and the vectors rejoined in input order with usage and cost summed (None when any part
reported none). One part failing for good cancels the others and raises its failure.

Retries follow the route's retry policy exactly as the retry plugin does for chat calls: normal
mode retries its `retryable_codes` (by default `EMPTY_RESPONSE`, `RATE_LIMIT`, `SERVER`,
`TIMEOUT`, `TRANSPORT`) at most `max_retries` times, always mode every failure; the wait is a
provider's Retry-After when it is within the policy's cap, else the jittered backoff. An embed
call has no session, so the count lives in the call (there is no log to read it back from).
Failures raise as their `LlmError` category (`RateLimitError`, `AuthError`, ...).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from decimal import Decimal
from typing import Final, TypeGuard

import msgspec

from ..errors import ErrorCode, LlmError, categorized
from ..policy import AlwaysRetryPolicy, RetryPolicy, backoff_delay_ms
from ..vocab import ENCODING_FORMATS, EmbedLimits, EmbedOptions, EmbedResult, TokenUsage
from .adapter import LlmAdapter

__all__ = [
    "EMBED_CONCURRENCY",
    "MAX_EMBED_INPUTS",
    "embed_call",
    "embed_problem",
    "embed_with_retries",
    "split_inputs",
]

EMBED_CONCURRENCY: Final = 4
"""The most provider requests of one `embed` call in flight at once."""

MAX_EMBED_INPUTS: Final = 1_000_000
"""The most inputs one `embed` call takes (the adapter splits them into provider requests)."""

Sleep = Callable[[float], Awaitable[None]]


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def embed_problem(options: object) -> str | None:
    """What is wrong with an embed request, naming the field; None when it is well formed."""
    if not isinstance(options, EmbedOptions):
        return f"embed() takes an EmbedOptions, not {type(options).__name__}"
    for name in ("provider", "model"):
        value = getattr(options, name)
        if not isinstance(value, str) or not value.strip():
            return f"{name} must be a non-empty string"
    inputs: object = options.inputs
    if isinstance(inputs, (str, bytes)):
        return "inputs must be a list of strings, not one string (wrap it: inputs=[text])"
    if not isinstance(inputs, tuple):
        return f"inputs must be a list of strings, not {type(inputs).__name__}"
    if not inputs:
        return "inputs is empty: give at least one string to embed"
    if len(inputs) > MAX_EMBED_INPUTS:
        return f"inputs holds {len(inputs)} strings; one call takes at most {MAX_EMBED_INPUTS}"
    for index, item in enumerate(inputs):
        if not isinstance(item, str):
            return f"inputs[{index}] is a {type(item).__name__}, not a string"
        if not item:
            return f"inputs[{index}] is an empty string (providers refuse empty inputs)"
    dimensions: object = options.dimensions
    if dimensions is not None and (not _is_int(dimensions) or dimensions < 1):
        return f"dimensions must be a positive integer, not {dimensions!r}"
    if options.encoding_format is not None and options.encoding_format not in ENCODING_FORMATS:
        return f"encoding_format must be one of {', '.join(ENCODING_FORMATS)}, not " + repr(
            options.encoding_format
        )
    timeout: object = options.timeout_ms
    if timeout is not None and (not _is_int(timeout) or timeout < 0):
        return f"timeout_ms must be a non-negative integer of ms, not {timeout!r}"
    return None


def _retryable(policy: RetryPolicy, error: LlmError, retries: int) -> bool:
    if isinstance(policy, AlwaysRetryPolicy):
        return True
    return retries < policy.max_retries and error.code in policy.retryable_codes


def _delay_ms(
    policy: RetryPolicy, retry: int, error: LlmError, sample: Callable[[], float]
) -> float:
    failure = error.failure
    provider = failure.provider_retry_after_ms if failure is not None else None
    if provider is not None and provider <= policy.max_delay_ms:
        return float(provider)
    return backoff_delay_ms(policy, retry, sample=sample)


async def embed_with_retries(
    adapter: LlmAdapter,
    options: EmbedOptions,
    policy: RetryPolicy,
    *,
    sleep: Sleep = asyncio.sleep,
    sample: Callable[[], float] = random.random,
) -> EmbedResult:
    """`adapter.embed(options)`, retried under `policy`; the last failure raises categorized."""
    retries = 0
    while True:
        try:
            return await adapter.embed(options)
        except LlmError as exc:
            if exc.code == ErrorCode.ABORTED or not _retryable(policy, exc, retries):
                twin = categorized(exc)
                if twin is exc:
                    raise
                raise twin from exc
            retries += 1
            await sleep(_delay_ms(policy, retries, exc, sample) / 1000)


def split_inputs(inputs: Sequence[str], limits: EmbedLimits) -> list[tuple[str, ...]]:
    """`inputs` as consecutive parts of at most `limits.max_inputs` strings and, when set, about
    `limits.max_request_tokens` tokens (UTF-8 bytes / 4) each; joined they are `inputs` again."""
    cap = max(1, limits.max_inputs)
    budget = limits.max_request_tokens
    parts: list[tuple[str, ...]] = []
    current: list[str] = []
    tokens = 0
    for text in inputs:
        cost = len(text.encode("utf-8", "surrogatepass")) // 4 + 1 if budget is not None else 0
        if current and (len(current) >= cap or (budget is not None and tokens + cost > budget)):
            parts.append(tuple(current))
            current, tokens = [], 0
        current.append(text)
        tokens += cost
    if current:
        parts.append(tuple(current))
    return parts


def _joined(options: EmbedOptions, results: Sequence[EmbedResult]) -> EmbedResult:
    first = results[0]
    if len(results) == 1:
        return first
    dims = {r.dimensions for r in results}
    if len(dims) != 1:
        raise LlmError(
            f'provider "{options.provider}" model "{options.model}" answered vectors of '
            f"different lengths ({', '.join(map(str, sorted(dims)))}) across one call",
            ErrorCode.MALFORMED_RESPONSE,
        )
    usage: TokenUsage | None = None
    if all(r.usage is not None for r in results):
        usage = TokenUsage(sum(r.usage.input_tokens for r in results if r.usage), 0)
    cost: Decimal | None = None
    if all(r.cost is not None for r in results):
        cost = sum((r.cost for r in results if r.cost is not None), Decimal(0))
    vectors = tuple(v for r in results for v in r.vectors)
    return EmbedResult(
        vectors=vectors,
        usage=usage,
        provider=first.provider,
        model=first.model,
        dimensions=first.dimensions,
        cost=cost,
    )


async def embed_call(
    adapter: LlmAdapter,
    options: EmbedOptions,
    policy: RetryPolicy,
    *,
    sleep: Sleep = asyncio.sleep,
    sample: Callable[[], float] = random.random,
) -> EmbedResult:
    """One checked `embed` request: split by the adapter's limits, each part retried, rejoined."""
    parts = split_inputs(options.inputs, adapter.embed_limits(options))
    if len(parts) == 1:
        return await embed_with_retries(adapter, options, policy, sleep=sleep, sample=sample)
    gate = asyncio.Semaphore(EMBED_CONCURRENCY)

    async def one(part: tuple[str, ...]) -> EmbedResult:
        async with gate:
            request = msgspec.structs.replace(options, inputs=part)
            return await embed_with_retries(adapter, request, policy, sleep=sleep, sample=sample)

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(part)) for part in parts]
    except BaseExceptionGroup as group_error:
        first = group_error.exceptions[0]
        raise first from None
    return _joined(options, [t.result() for t in tasks])
