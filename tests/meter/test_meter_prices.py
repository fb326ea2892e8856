"""Prices from the catalog to the meter: pi-ai's figures checked by hand on the catalog →
`ResolvedModelInfo` path (through the runtime), profile overrides, input tiers, unknown prices in
sums, and `MeterState` checkpoints that carry each call's prices (version 2, version 1 still read).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal

import msgspec
import pytest

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.errors import HarnessError
from modelwire.meter import TokenMeter
from modelwire.runtime import LlmRuntime
from modelwire.runtime.adapter import LlmAdapter
from modelwire.session import AssistantChunk, Event, RequestContext, StepStart, TurnStart
from modelwire.session.events import event_type_of
from modelwire.vocab import (
    GenerateOptions,
    ModelPricing,
    PriceTier,
    ResolvedModelInfo,
    StreamChunk,
    TokenUsage,
    UsageChunk,
)

D = Decimal


def _events(*datas: msgspec.Struct) -> list[Event]:
    return [Event(i, event_type_of(d), 0, d) for i, d in enumerate(datas)]


def _usage(turn: int, step: int, usage: TokenUsage, attempt: int = 1) -> AssistantChunk:
    return AssistantChunk(turn, step, attempt, UsageChunk(usage))


async def _resolved(profile: dict[str, object], route: str, model: str) -> ModelPricing | None:
    adapter = ProvidersAdapter.from_config({"providers": {route: profile}}, env={"K": "sk-k"})
    runtime = LlmRuntime()
    adapter.register(runtime)
    return (await runtime.resolve_model_info(route, model)).pricing


# ---- pi-ai's prices, checked by hand ------------------------------------------------------------
# Copied by hand from /tmp/piai/package/dist/providers/data/*.json (pi-ai's raw catalog data):
#   anthropic.json  claude-opus-4-8    cost {input 5, output 25, cacheRead 0.5, cacheWrite 6.25}
#   deepseek.json   deepseek-v4-pro    cost {input 0.435, output 0.87, cacheRead 0.003625,
#                                            cacheWrite 0}
#   openai.json     gpt-5.5            cost {input 5, output 30, cacheRead 0.5, cacheWrite 0,
#                                            tiers [{inputTokensAbove 272000, input 10,
#                                                    output 45, cacheRead 1, cacheWrite 0}]}


async def test_claude_opus_4_8_is_priced_as_pi_ai_lists_it() -> None:
    pricing = await _resolved({"api_key_env": "K"}, "anthropic", "claude-opus-4-8")
    assert pricing == ModelPricing(
        input=D(5), output=D(25), cache_read=D("0.5"), cache_write=D("6.25")
    )


async def test_deepseek_v4_pro_is_priced_as_pi_ai_lists_it_by_the_deepseek_adapter() -> None:
    runtime = LlmRuntime()
    runtime.register_adapter(["deepseek"], DeepSeekAdapter(env={}))
    pricing = (await runtime.resolve_model_info("deepseek", "deepseek-v4-pro")).pricing
    assert pricing == ModelPricing(input=D("0.435"), output=D("0.87"), cache_read=D("0.003625"))
    assert (await runtime.resolve_model_info("deepseek", "deepseek-reasoner")).pricing is None


async def test_gpt_5_5_is_priced_with_its_input_tier_as_pi_ai_lists_it() -> None:
    pricing = await _resolved({"api_key_env": "K"}, "openai", "gpt-5.5")
    assert pricing == ModelPricing(
        input=D(5),
        output=D(30),
        cache_read=D("0.5"),
        tiers=(PriceTier(input_tokens_above=272_000, input=D(10), output=D(45), cache_read=D(1)),),
    )


# ---- a profile's `cost` ---------------------------------------------------------------------------


async def test_a_profile_cost_overrides_the_catalog() -> None:
    profile = {
        "api_key_env": "K",
        "models": [
            {"id": "claude-opus-4-8", "cost": {"input": 1, "output": 2.5, "cache_read": 0.1}}
        ],
    }
    pricing = await _resolved(profile, "anthropic", "claude-opus-4-8")
    assert pricing == ModelPricing(input=D(1), output=D("2.5"), cache_read=D("0.1"))  # write: 0
    declared = {
        "api": "openai-completions",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "K",
        "models": [{"id": "own-1", "cost": {"input": 0.2, "output": 0.4}}, {"id": "own-2"}],
    }
    assert await _resolved(declared, "acme", "own-1") == ModelPricing(
        input=D("0.2"), output=D("0.4")
    )
    assert await _resolved(declared, "acme", "own-2") is None  # declared without cost: unknown


@pytest.mark.parametrize(
    ("cost", "named"),
    [
        ({"input": -1, "output": 2}, "cost.input"),
        ({"input": 1, "output": "2"}, "cost.output"),
        ({"input": 1, "output": True}, "cost.output"),
        ({"input": 1, "output": 2, "cache_reads": 1}, '"cache_reads"'),
        ({"input": 1}, "cost needs at least input and output"),
        ([1, 2], "cost must map"),
    ],
)
def test_a_bad_profile_cost_is_invalid_config_naming_the_field(cost: object, named: str) -> None:
    profile = {"api_key_env": "K", "models": [{"id": "claude-opus-4-8", "cost": cost}]}
    with pytest.raises(HarnessError) as info:
        ProvidersAdapter.from_config({"providers": {"anthropic": profile}}, env={"K": "sk-k"})
    assert info.value.code == "INVALID_CONFIG"
    assert named in str(info.value) and "models[0]" in str(info.value)


# ---- tiers, per call ------------------------------------------------------------------------------


async def test_the_tier_is_chosen_per_call_by_its_billed_input() -> None:
    gpt55 = await _resolved({"api_key_env": "K"}, "openai", "gpt-5.5")
    report = TokenMeter.project(
        _events(
            TurnStart(1),
            RequestContext("openai", "gpt-5.5", 272_000, gpt55),
            StepStart(1, 1),
            _usage(1, 1, TokenUsage(272_000, 1_000)),
            StepStart(1, 2),
            _usage(1, 2, TokenUsage(200_000, 1_000, 72_001)),
            StepStart(1, 3),
            _usage(1, 3, TokenUsage(1_000, 2_000, 280_000, 0, 1_500)),
        )
    )
    # (1,1,1) billed input 272,000 — not above the tier: base rates 5 / 30
    #   272000×5 + 1000×30 = 1,360,000 + 30,000 = 1,390,000 → 1.39
    # (1,2,1) billed input 200,000 + 72,001 = 272,001 — above: tier rates 10 / 45 / cache 1
    #   200000×10 + 1000×45 + 72001×1 = 2,000,000 + 45,000 + 72,001 = 2,117,001 → 2.117001
    # (1,3,1) billed input 281,000 (cache reads count): tier; reasoning inside output
    #   1000×10 + 2000×45 + 280000×1 = 10,000 + 90,000 + 280,000 = 380,000 → 0.38
    #   total 1.39 + 2.117001 + 0.38 = 3.887001
    assert dict(report.calls_cost) == {
        (1, 1, 1): D("1.39"),
        (1, 2, 1): D("2.117001"),
        (1, 3, 1): D("0.38"),
    }
    assert report.cost == D("3.887001")


# ---- unknown prices in sums ---------------------------------------------------------------------

CHEAP = ModelPricing(input=D(1), output=D(2))


def test_sums_are_none_with_a_billed_unpriced_call_and_for_nothing_priced() -> None:
    assert TokenMeter.project([]).cost is None  # nothing metered: no cost to report
    report = TokenMeter.project(
        _events(
            TurnStart(1),
            _usage(1, 1, TokenUsage(0, 0)),  # before any price, but it billed nothing
            RequestContext("p", "m", None, CHEAP),
            _usage(1, 2, TokenUsage(1_000, 500)),  # 1000×1 + 500×2 = 2000 → 0.002
            TurnStart(2),
            RequestContext("p", "m"),  # the route lost its prices
            _usage(2, 1, TokenUsage(10, 1)),
        )
    )
    assert dict(report.calls_cost) == {(1, 1, 1): None, (1, 2, 1): D("0.002"), (2, 1, 1): None}
    assert dict(report.turns_cost) == {1: D("0.002"), 2: None}
    assert report.cost is None
    only_free = TokenMeter.project(_events(TurnStart(1), _usage(1, 1, TokenUsage(0, 0))))
    assert only_free.cost is None and dict(only_free.turns_cost) == {1: None}


def test_a_later_sample_of_a_call_keeps_the_price_of_its_first() -> None:
    pricey = ModelPricing(input=D(100), output=D(100))
    report = TokenMeter.project(
        _events(
            RequestContext("p", "m", None, CHEAP),
            _usage(1, 1, TokenUsage(100, 0)),
            RequestContext("p", "m", None, pricey),  # for the calls after this one
            _usage(1, 1, TokenUsage(100, 50)),  # the same call's final sample: 100×1 + 50×2
            _usage(1, 2, TokenUsage(10, 0)),  # 10×100 = 1000
        )
    )
    assert dict(report.calls_cost) == {(1, 1, 1): D("0.0002"), (1, 2, 1): D("0.001")}


# ---- checkpoints --------------------------------------------------------------------------------


def test_a_checkpoint_carries_each_calls_prices_and_the_next_calls() -> None:
    history = _events(
        RequestContext("p", "m", None, CHEAP),
        _usage(1, 1, TokenUsage(1_000, 0)),
        _usage(1, 1, TokenUsage(1_000, 10), attempt=2),
        RequestContext("q", "n"),
        _usage(2, 1, TokenUsage(5, 5)),
        RequestContext("p", "m", None, CHEAP),
        _usage(3, 1, TokenUsage(1, 1)),
    )
    meter = TokenMeter()
    for event in history[:6]:
        meter.apply(event)
    saved = meter.checkpoint()
    state = json.loads(saved)
    assert state["version"] == 2
    assert state["call_prices"] == [0, 0, -1] and state["pricing"] == 0
    assert len(state["prices"]) == 1  # each distinct price list stored once
    restored = TokenMeter.restore(saved)
    assert restored.report() == meter.report()
    restored.apply(history[6])  # priced by the context logged before the checkpoint
    assert restored.report() == TokenMeter.project(history)
    assert restored.report().call_cost(3, 1) == D("0.000003")  # 1×1 + 1×2 = 3


def test_a_version_1_checkpoint_restores_without_prices() -> None:
    old = b'{"version":1,"next_seq":3,"calls":[[1,1,1,{"input_tokens":9,"output_tokens":1}]]}'
    meter = TokenMeter.restore(old)
    report = meter.report()
    assert report.total.total_tokens == 10 and dict(report.calls_cost) == {(1, 1, 1): None}
    assert report.cost is None and meter.next_seq == 3


@pytest.mark.parametrize(
    ("state", "needle"),
    [
        ({"call_prices": [3]}, "names price list 3"),
        ({"call_prices": [0, 0]}, "2 call prices for 1 calls"),
        ({"call_prices": [-1], "pricing": 5}, "names price list 5"),
        ({"version": 3}, "invalid checkpoint"),
    ],
)
def test_a_malformed_price_checkpoint_is_invalid_args(
    state: dict[str, object], needle: str
) -> None:
    base: dict[str, object] = {
        "version": 2,
        "next_seq": 1,
        "calls": [[1, 1, 1, {"input_tokens": 1, "output_tokens": 1}]],
        "prices": [],
    }
    with pytest.raises(HarnessError, match=needle) as info:
        TokenMeter.restore(json.dumps({**base, **state}))
    assert info.value.code == "INVALID_ARGS"


# ---- the runtime passes an adapter's prices through, checked ----------------------------------


class _Priced(LlmAdapter):
    """Publishes `pricing` as given (msgspec does not type-check on construction)."""

    def __init__(self, pricing: object) -> None:
        super().__init__()
        self.pricing = pricing

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        return ResolvedModelInfo(provider=provider, id=model, name=model, pricing=self.pricing)  # type: ignore[arg-type]

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        raise NotImplementedError
        yield  # pragma: no cover


async def test_the_runtime_keeps_valid_prices_and_refuses_malformed_ones() -> None:
    runtime = LlmRuntime()
    runtime.register_adapter(["good"], _Priced(CHEAP))
    runtime.register_adapter(["bad"], _Priced({"input": 1, "output": 2}))
    assert (await runtime.resolve_model_info("good", "m")).pricing == CHEAP
    with pytest.raises(HarnessError, match="pricing must be a ModelPricing") as info:
        await runtime.resolve_model_info("bad", "m")
    assert info.value.code == "INVALID_MODEL_INFO"
