"""The installed model catalog: package data built by `scripts/build_catalog.py`, loaded once."""

from __future__ import annotations

import functools
from decimal import Decimal
from importlib import resources

import msgspec

from ...vocab import ModelPricing, PriceTier
from .compat import CompatSwitches

__all__ = [
    "Catalog",
    "CatalogCost",
    "CatalogModel",
    "CatalogProvider",
    "CatalogSource",
    "load_catalog",
]


class CatalogCost(msgspec.Struct, frozen=True, kw_only=True):
    """A model's list prices in USD per million tokens, per usage bucket (as the catalog's
    source publishes them; 0 = free or not charged separately)."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    tiers: tuple[CatalogTier, ...] = ()

    def pricing(self) -> ModelPricing:
        """These prices as exact decimals (each float read as the decimal it prints as)."""
        return ModelPricing(
            input=_dec(self.input),
            output=_dec(self.output),
            cache_read=_dec(self.cache_read),
            cache_write=_dec(self.cache_write),
            tiers=tuple(
                PriceTier(
                    input_tokens_above=t.input_tokens_above,
                    input=_dec(t.input),
                    output=_dec(t.output),
                    cache_read=_dec(t.cache_read),
                    cache_write=_dec(t.cache_write),
                )
                for t in self.tiers
            ),
        )


class CatalogTier(msgspec.Struct, frozen=True, kw_only=True):
    """Rates that apply once a call's billed input exceeds `input_tokens_above`."""

    input_tokens_above: int
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


def _dec(value: float) -> Decimal:
    return Decimal(repr(value))


class CatalogModel(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """One catalog model: identity, protocol, endpoint, capacities, reasoning map and compat."""

    id: str
    name: str
    api: str
    base_url: str | None = None
    reasoning: bool = False
    input: tuple[str, ...] = ("text",)
    context_window: int
    max_tokens: int
    thinking_level_map: dict[str, str | None] | None = None
    compat: CompatSwitches | None = None
    headers: dict[str, str] | None = None
    cost: CatalogCost | None = None


class CatalogProvider(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True, dict=True):
    """One catalog provider: display name, base URL, ambient key variables, the recommended
    model (the route's default) and its models."""

    name: str
    base_url: str | None = None
    api_key_env: tuple[str, ...] = ()
    recommended: str | None = None
    models: tuple[CatalogModel, ...] = ()

    @functools.cached_property
    def by_id(self) -> dict[str, CatalogModel]:
        """The provider's models keyed by id."""
        return {m.id: m for m in self.models}

    @property
    def default_model(self) -> str | None:
        """The recommended model when the catalog lists it, else the first one."""
        if self.recommended is not None and self.recommended in self.by_id:
            return self.recommended
        return self.models[0].id if self.models else None

    @property
    def shared_api(self) -> str | None:
        """The single protocol every model of the provider speaks, or None when they differ."""
        apis = {m.api for m in self.models}
        return next(iter(apis)) if len(apis) == 1 else None


class CatalogSource(msgspec.Struct, frozen=True, kw_only=True):
    """Where the catalog data came from (package, pinned version, licence, generation time)."""

    package: str
    version: str
    license: str
    generated_at: str | None = None
    structure_hash: str | None = None


class Catalog(msgspec.Struct, frozen=True, kw_only=True):
    """The whole installed catalog document."""

    source: CatalogSource
    withheld: dict[str, str]
    providers: dict[str, CatalogProvider]


@functools.cache
def load_catalog() -> Catalog:
    """Decode the packaged `catalog.json` (once per process)."""
    data = resources.files(__package__).joinpath("catalog.json").read_bytes()
    return msgspec.json.decode(data, type=Catalog)
