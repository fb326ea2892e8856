"""Model prices and what a call cost: USD per million tokens per usage bucket, with the input
tiers some providers charge above a prompt size; amounts are `Decimal` (never float), and an
unknown price is None, never 0."""

from __future__ import annotations

from decimal import Decimal
from typing import Final

import msgspec

from .usage import TokenUsage

__all__ = ["ModelPricing", "PriceTier", "call_cost"]

_MILLION: Final = Decimal(1_000_000)
_ZERO: Final = Decimal(0)


class PriceTier(msgspec.Struct, frozen=True, kw_only=True):
    """The rates that apply once a call's billed input exceeds `input_tokens_above`."""

    input_tokens_above: int
    input: Decimal
    output: Decimal
    cache_read: Decimal = _ZERO
    cache_write: Decimal = _ZERO


class ModelPricing(msgspec.Struct, frozen=True, kw_only=True):
    """A model's list prices in USD per million tokens: uncached input, output (reasoning is
    part of output), cache reads, cache writes, and the higher tiers by billed input size."""

    input: Decimal
    output: Decimal
    cache_read: Decimal = _ZERO
    cache_write: Decimal = _ZERO
    tiers: tuple[PriceTier, ...] = ()

    def rates(self, billed_input: int) -> ModelPricing | PriceTier:
        """The rates of a call whose billed input is `billed_input` tokens (the highest tier it
        exceeds, else the base rates)."""
        best: ModelPricing | PriceTier = self
        threshold = -1
        for tier in self.tiers:
            if billed_input > tier.input_tokens_above > threshold:
                best, threshold = tier, tier.input_tokens_above
        return best

    def cost(self, usage: TokenUsage) -> Decimal:
        """What `usage` costs at these prices, in USD."""
        rates = self.rates(usage.billed_input_tokens)
        total = (
            rates.input * usage.input_tokens
            + rates.output * usage.output_tokens
            + rates.cache_read * (usage.cache_read_tokens or 0)
            + rates.cache_write * (usage.cache_write_tokens or 0)
        )
        return total / _MILLION


def call_cost(pricing: ModelPricing | None, usage: TokenUsage | None) -> Decimal | None:
    """The cost of one call: None when the price is unknown; zero when it reported no usage."""
    if pricing is None:
        return None
    return _ZERO if usage is None else pricing.cost(usage)
