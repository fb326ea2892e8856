"""Cost as the meter reports it — or nothing: the inspector never prices tokens itself.

The token meter offers `report.cost` (a `Decimal` in USD, or None when a price is unknown) and
`report.calls_cost[(turn, step, attempt)]`, priced at the `request/context` logged before each
call — so every fold that feeds a meter applies those events too, or every cost reads unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from ..meter import CallKey, UsageReport

__all__ = ["call_costs", "cost_text", "total_cost"]


def cost_text(value: object) -> str | None:
    """A cost as a plain decimal string (`0.00042`), or None when `value` is not a number."""
    if isinstance(value, bool) or not isinstance(value, (Decimal, int, float)):
        return None
    number = value if isinstance(value, Decimal) else Decimal(str(value))
    if not number.is_finite():
        return None
    return format(number, "f")


def total_cost(report: UsageReport) -> str | None:
    """The session's cost, when the meter knows it."""
    return cost_text(getattr(report, "cost", None))


def call_costs(report: UsageReport) -> dict[CallKey, str]:
    """The cost of each call the meter priced (calls it could not price are absent)."""
    costs = getattr(report, "calls_cost", None)
    if not isinstance(costs, Mapping):
        return {}
    out: dict[CallKey, str] = {}
    for key, value in costs.items():
        text = cost_text(value)
        if text is not None and isinstance(key, tuple) and len(key) == 3:
            out[(int(key[0]), int(key[1]), int(key[2]))] = text
    return out
