"""DeepSeek list prices, read from the installed model catalog (its `deepseek` provider).

The catalog is the one source of prices (`scripts/build_catalog.py` takes them from pi-ai), so
nothing is duplicated here; it is loaded on the first lookup, not when the adapter is imported.
An id the catalog does not list has no known price (None, never 0).
"""

from __future__ import annotations

import functools
from typing import Final

from ...vocab import ModelPricing

__all__ = ["CATALOG_PROVIDER", "catalog_pricing"]

CATALOG_PROVIDER: Final = "deepseek"
"""The catalog provider whose models this adapter serves."""


@functools.lru_cache(maxsize=256)
def catalog_pricing(model: str) -> ModelPricing | None:
    """The list prices of DeepSeek `model` in the installed catalog, or None when unlisted."""
    from ..providers.catalog import load_catalog

    provider = load_catalog().providers.get(CATALOG_PROVIDER)
    entry = None if provider is None else provider.by_id.get(model)
    if entry is None or entry.cost is None:
        return None
    return entry.cost.pricing()
