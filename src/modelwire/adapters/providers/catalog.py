"""The installed model catalog: package data built by `scripts/build_catalog.py`, loaded once."""

from __future__ import annotations

import functools
from importlib import resources

import msgspec

from .compat import CompatSwitches

__all__ = ["Catalog", "CatalogModel", "CatalogProvider", "CatalogSource", "load_catalog"]


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


class CatalogProvider(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True, dict=True):
    """One catalog provider: display name, base URL, ambient key variables and its models."""

    name: str
    base_url: str | None = None
    api_key_env: tuple[str, ...] = ()
    models: tuple[CatalogModel, ...] = ()

    @functools.cached_property
    def by_id(self) -> dict[str, CatalogModel]:
        """The provider's models keyed by id."""
        return {m.id: m for m in self.models}

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
