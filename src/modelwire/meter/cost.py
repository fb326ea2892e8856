"""What the metered calls cost: the per-call prices of a `TokenMeter` and the sums of its report.

Each provider call is priced at the list prices of the latest `request/context` logged before its
first usage sample (`RequestContext.pricing`), so the cost of a session is a function of its log
alone. Amounts are `Decimal` USD; an unknown price is None, never 0, and a sum over calls is None
as soon as one billed call (one with any tokens) has an unknown price. The input tier of a call
is chosen by that call's own billed input (`ModelPricing.rates`).

`PriceBook` is the checkpoint form: the distinct price lists once, each call naming one by index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Final, TypeAlias

from ..errors import ErrorCode, HarnessError
from ..vocab import ModelPricing, TokenUsage

__all__ = ["NO_PRICE", "CallKey", "PriceBook", "check_parallel", "cost_sums", "cost_text"]

CallKey: TypeAlias = tuple[int, int, int]
"""One provider call: (turn, step, attempt)."""

NO_PRICE: Final = -1
"""The price index of a call (or of the next call) whose prices are unknown."""

_ZERO: Final = Decimal(0)


def cost_sums(
    calls: Mapping[CallKey, TokenUsage], costs: Mapping[CallKey, Decimal | None]
) -> tuple[Decimal | None, dict[int, Decimal | None]]:
    """The total and per-turn cost of `calls` given each call's cost (None: unknown price).

    A sum is None when one of its billed calls has an unknown price, and when none of its calls
    has a known one (no calls yet: nothing is priced). An unpriced call that reported no tokens
    billed nothing: it does not make a sum unknown by itself.
    """
    sums: dict[int, Decimal | None] = {}
    priced: set[int] = set()
    for key, usage in calls.items():
        turn = key[0]
        cost = costs.get(key)
        so_far = sums.get(turn, _ZERO)
        if cost is not None:
            priced.add(turn)
            sums[turn] = None if so_far is None else so_far + cost
        else:
            sums[turn] = so_far if usage.total_tokens == 0 else None
    turns = {turn: cost if turn in priced else None for turn, cost in sums.items()}
    known = [cost for cost in sums.values() if cost is not None]
    total = sum(known, _ZERO) if priced and len(known) == len(sums) else None
    return total, turns


def cost_text(cost: Decimal | None, unknown: str = "—") -> str:
    """An amount as a plain decimal string, exact, without exponent or trailing zeros
    (`Decimal("0.00000840")` → `0.0000084`), or `unknown` for None."""
    if cost is None:
        return unknown
    text = format(cost, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


class PriceBook:
    """Distinct price lists, each stored once, named by index (for `MeterState`)."""

    __slots__ = ("_index", "prices")

    def __init__(self, prices: Iterable[ModelPricing] = ()) -> None:
        self.prices: list[ModelPricing] = list(prices)
        self._index: dict[ModelPricing, int] = {p: i for i, p in enumerate(self.prices)}

    def index(self, pricing: ModelPricing | None) -> int:
        """The index of `pricing` (added when new), or `NO_PRICE` for None."""
        if pricing is None:
            return NO_PRICE
        found = self._index.get(pricing)
        if found is None:
            found = self._index[pricing] = len(self.prices)
            self.prices.append(pricing)
        return found

    def lookup(self, index: int, where: str) -> ModelPricing | None:
        """The price list at `index` (None for `NO_PRICE`); any other index out of range raises
        `HarnessError` `INVALID_ARGS` naming `where`."""
        if index == NO_PRICE:
            return None
        if not 0 <= index < len(self.prices):
            raise HarnessError(
                f"token meter: invalid checkpoint: {where} names price list {index}, "
                f"but it has {len(self.prices)}",
                ErrorCode.INVALID_ARGS,
            )
        return self.prices[index]


def check_parallel(calls: Sequence[object], call_prices: Sequence[int]) -> None:
    """A checkpoint's per-call price indexes must pair with its calls one to one."""
    if len(call_prices) != len(calls):
        raise HarnessError(
            f"token meter: invalid checkpoint: {len(call_prices)} call prices "
            f"for {len(calls)} calls",
            ErrorCode.INVALID_ARGS,
        )
