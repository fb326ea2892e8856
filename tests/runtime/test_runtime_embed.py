"""`LlmRuntime.embed`'s own rules, over an in-process adapter (the HTTP side is tested per
provider in tests/providers/test_embeddings_*): splitting by the adapter's limits and rejoining
in input order whatever order the parts finish in, each part retried on its own under the
route's policy, usage and cost summed, and the default adapter refusing embeddings."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import modelwire as mw
from modelwire.errors import ErrorCode, LlmError
from modelwire.runtime.embed import split_inputs
from modelwire.vocab import EmbedLimits, EmbedOptions, EmbedResult, StreamChunk


class _Embedder(mw.LlmAdapter):
    """Answers each input with [len(text)]; `fail_first` parts fail once with `code`."""

    def __init__(self, limits: EmbedLimits, fail_first: int = 0, code: str = "RATE_LIMIT") -> None:
        self.limits = limits
        self.calls: list[tuple[str, ...]] = []
        self.fail_first = fail_first
        self.code = code
        self.rng = random.Random(7)

    def stream(self, options: mw.GenerateOptions) -> AsyncIterator[StreamChunk]:
        raise NotImplementedError

    def embed_limits(self, options: EmbedOptions) -> EmbedLimits:
        return self.limits

    async def embed(self, options: EmbedOptions) -> EmbedResult:
        self.calls.append(options.inputs)
        for _ in range(self.rng.randrange(4)):
            await asyncio.sleep(0)  # parts finish out of order
        if self.fail_first > 0:
            self.fail_first -= 1
            raise LlmError("busy", self.code, status=429)
        return EmbedResult(
            vectors=tuple([float(len(t))] for t in options.inputs),
            usage=mw.TokenUsage(len(options.inputs), 0),
            provider=options.provider,
            model=options.model,
            dimensions=1,
            cost=Decimal(len(options.inputs)),
        )


def _rt(adapter: mw.LlmAdapter) -> mw.LlmRuntime:
    rt = mw.LlmRuntime()
    rt.register_adapter(["e"], adapter)
    return rt


@given(
    st.lists(st.text(min_size=1, max_size=40), max_size=60),
    st.integers(1, 9),
    st.one_of(st.none(), st.integers(1, 30)),
)
def test_split_parts_rejoin_to_the_inputs_within_the_limits(
    inputs: list[str], most: int, budget: int | None
) -> None:
    parts = split_inputs(inputs, EmbedLimits(max_inputs=most, max_request_tokens=budget))
    assert [t for part in parts for t in part] == inputs
    for part in parts:
        assert 1 <= len(part) <= most
        if budget is not None and len(part) > 1:
            assert sum(len(t.encode("utf-8", "surrogatepass")) // 4 + 1 for t in part) <= budget


async def test_parts_finishing_out_of_order_rejoin_in_input_order_with_sums() -> None:
    adapter = _Embedder(EmbedLimits(max_inputs=3))
    texts = ["a" * (i % 7 + 1) for i in range(20)]
    result = await _rt(adapter).embed(EmbedOptions("e", "m", texts))
    assert result.vectors == tuple([float(len(t))] for t in texts)
    assert result.usage == mw.TokenUsage(20, 0) and result.cost == Decimal(20)
    assert len(adapter.calls) == 7


async def test_each_failed_part_is_retried_alone() -> None:
    adapter = _Embedder(EmbedLimits(max_inputs=5), fail_first=1)
    texts = [f"t{i}" for i in range(10)]
    result = await _rt(adapter).embed(EmbedOptions("e", "m", texts))
    assert len(result.vectors) == 10 and len(adapter.calls) == 3  # two parts, one retried


async def test_a_non_retryable_failure_raises_its_category_at_once() -> None:
    adapter = _Embedder(EmbedLimits(), fail_first=5, code="AUTH")
    with pytest.raises(mw.AuthError):
        await _rt(adapter).embed(EmbedOptions("e", "m", ["x"]))
    assert len(adapter.calls) == 1


async def test_the_default_adapter_serves_no_embeddings() -> None:
    class ChatOnly(mw.LlmAdapter):
        def stream(self, options: mw.GenerateOptions) -> AsyncIterator[StreamChunk]:
            raise NotImplementedError

    with pytest.raises(LlmError) as caught:
        await _rt(ChatOnly()).embed(EmbedOptions("e", "m", ["x"]))
    assert caught.value.code == ErrorCode.UNSUPPORTED_OPTION and '"e"' in str(caught.value)
