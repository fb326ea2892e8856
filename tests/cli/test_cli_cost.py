"""The cost of a turn in `chat --json`: shown when the meter prices calls, never guessed."""

from __future__ import annotations

from decimal import Decimal
from types import MappingProxyType

from modelwire.cli.chatsession import turn_cost


class Priced:
    calls_cost = MappingProxyType(
        {(1, 1, 1): Decimal("0.010"), (1, 1, 2): Decimal("0.002"), (2, 1, 1): Decimal("1")}
    )


class PartlyPriced:
    calls_cost = {(1, 1, 1): Decimal("0.010"), (1, 2, 1): None}


def test_the_cost_of_a_turn_sums_its_priced_calls() -> None:
    assert turn_cost(Priced(), 1) == Decimal("0.012")  # a retried attempt's cost counts too
    assert turn_cost(Priced(), 2) == Decimal("1")


def test_no_prices_means_no_cost() -> None:
    assert turn_cost(object(), 1) is None  # the meter has no prices yet
    assert turn_cost(Priced(), 3) is None  # no call of that turn
    assert turn_cost(PartlyPriced(), 1) is None  # one unpriced call: the sum would be wrong
