"""Model materialization: catalog entries, `models`, `model_overrides`, efforts and compat.

Resolution per field: entry → catalog → route fallback; compat: model → route → catalog (the
protocol builders apply endpoint detection last). Absent, empty and null stay distinct.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Final

import msgspec

from ...errors import ErrorCode, HarnessError
from ...vocab import ModelPricing
from ...vocab.redacted import hidden_headers, hidden_repr, hidden_rich_repr
from .catalog import CatalogModel, CatalogProvider, load_catalog
from .compat import (
    LEVELS,
    MODALITIES,
    MODALITIES_TEXT,
    NO_SWITCHES,
    SWITCH_PROTOCOLS,
    WITHHELD_SWITCHES,
    CompatSwitches,
    overlay,
    switch_value_error,
    written,
)

__all__ = ["DEFAULT_MAX_TOKENS", "ModelDescriptor", "materialize_models", "supported_levels"]

DEFAULT_MAX_TOKENS: Final = 32_768
"""The output cap of a model nothing sizes (no entry `max_tokens`, no catalog, no profile
`default_max_tokens`); an OpenAI-compatible request leaves the field out instead."""

_ENTRY_FIELDS: Final = frozenset(
    {"id", "name", "context_window", "max_tokens", "input", "reasoning_efforts", "compat", "cost"}
)
_COST_FIELDS: Final = ("input", "output", "cache_read", "cache_write")


class ModelDescriptor(msgspec.Struct, frozen=True, kw_only=True):
    """A fully resolved model of one route: what the request path needs to reach it.

    Its repr shows header names only (a configured header may carry a credential).
    """

    id: str
    name: str
    api: str
    provider: str
    base_url: str
    reasoning: bool
    thinking_level_map: Mapping[str, str | None] | None
    input: tuple[str, ...]
    context_window: int
    max_tokens: int
    configured_max_tokens: int | None
    headers: tuple[tuple[str, str], ...]
    compat: CompatSwitches
    api_version: str | None = None
    """The route's API version (Azure's ``api-version`` query parameter); None = unset."""
    pricing: ModelPricing | None = None
    """List prices (catalog, or the entry's `cost`); None = unknown."""
    max_tokens_known: bool = True
    """Whether `max_tokens` is the model's (its entry, the catalog, or the profile's
    `default_max_tokens`), not modelwire's fallback: an OpenAI-compatible request then leaves
    the output cap to the server unless the caller names one."""

    def __repr__(self) -> str:
        return hidden_repr(self, {"headers": hidden_headers(self.headers)})

    def __rich_repr__(self) -> list[tuple[str, object]]:
        return hidden_rich_repr(self, {"headers": hidden_headers(self.headers)})

    @property
    def levels(self) -> tuple[str, ...]:
        """The reasoning levels this model supports, in escalation order."""
        return supported_levels(self.reasoning, self.thinking_level_map)


def supported_levels(
    reasoning: bool, level_map: Mapping[str, str | None] | None
) -> tuple[str, ...]:
    """pi-ai's supported levels: `(off,)` without reasoning; else levels not pinned to null,
    with `xhigh`/`max` only when mapped to a value."""
    if not reasoning:
        return ("off",)
    m = level_map or {}
    out = []
    for level in LEVELS:
        if level in m and m[level] is None:
            continue
        if level in ("xhigh", "max") and m.get(level) is None:
            continue
        out.append(level)
    return tuple(out)


def _pricing(
    route: str, site: str, raw: object, catalog: CatalogModel | None
) -> ModelPricing | None:
    """The entry's `cost` (USD per million tokens; unnamed buckets cost 0), else the catalog's."""
    if raw is None:
        return catalog.cost.pricing() if catalog is not None and catalog.cost else None
    if not isinstance(raw, Mapping) or not raw:
        raise _fail(route, f"{site}.cost must map input/output/cache_read/cache_write to prices")
    values: dict[str, Decimal] = {}
    for key, value in raw.items():
        if key not in _COST_FIELDS:
            raise _fail(route, f'{site}.cost has an unknown bucket "{key}"')
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < 1e6:
            raise _fail(route, f"{site}.cost.{key} must be a non-negative number (USD per 1M)")
        values[key] = Decimal(repr(value))
    if "input" not in values or "output" not in values:
        raise _fail(route, f"{site}.cost needs at least input and output")
    zero = Decimal(0)
    return ModelPricing(
        input=values["input"],
        output=values["output"],
        cache_read=values.get("cache_read", zero),
        cache_write=values.get("cache_write", zero),
    )


def _fail(route: str, text: str) -> HarnessError:
    return HarnessError(f'providers: provider "{route}" {text}', ErrorCode.INVALID_CONFIG)


def _check_vocabulary(route: str, site: str, compat: object) -> CompatSwitches:
    if compat is None:
        return NO_SWITCHES
    if not isinstance(compat, Mapping):
        raise _fail(route, f"{site} must be a mapping of compat switches")
    for key, value in compat.items():
        if key in WITHHELD_SWITCHES:
            raise _fail(
                route,
                f"{site}.{key} is not configurable here; name that provider as the route to get "
                "its catalog setting",
            )
        if key not in SWITCH_PROTOCOLS:
            raise _fail(
                route,
                f'{site} sets "{key}", which no wire protocol declares; the configurable '
                "switches are " + ", ".join(sorted(SWITCH_PROTOCOLS)),
            )
        if value is None:
            raise _fail(route, f"{site}.{key} is written with no value")
        why = switch_value_error(key, value)
        if why is not None:
            raise _fail(route, f"{site}.{key} {why}")
    # an empty mapping (`chat_template_kwargs: {}`) counts as not written
    kept = {k: v for k, v in compat.items() if not (isinstance(v, Mapping) and not v)}
    try:
        return msgspec.convert(kept, CompatSwitches)
    except msgspec.ValidationError as exc:  # the checks above admit only valid values
        raise _fail(route, f"{site}: {exc}") from exc


def _efforts(
    route: str, site: str, raw: object, catalog: CatalogModel | None
) -> tuple[bool, Mapping[str, str | None] | None]:
    if raw is _ABSENT:
        if catalog is None:
            return False, None
        return catalog.reasoning, catalog.thinking_level_map
    if raw is False:
        return False, None
    if raw is None or (isinstance(raw, Mapping) and not raw):
        raise _fail(route, f"{site} is an empty reasoningEfforts (reasoning_efforts)")
    if not isinstance(raw, Mapping):
        raise _fail(route, f"{site} must be false or a mapping of levels to wire strings")
    level_map: dict[str, str | None] = {level: None for level in LEVELS}
    for level, wire in raw.items():
        if level not in LEVELS:
            raise _fail(
                route,
                f'{site} names level "{level}"; levels are ' + ", ".join(f'"{x}"' for x in LEVELS),
            )
        if wire is not None and not isinstance(wire, str):
            raise _fail(route, f"{site}.{level} must be a string wire value")
        if wire is None and level != "off":
            raise _fail(route, f'{site}.{level} has no value; only "off" may leave it empty')
        if wire == "":
            raise _fail(route, f"{site}.{level} must not be an empty string")
        if level == "off" and wire is None:
            del level_map["off"]  # declared without value: supported, sends nothing special
        else:
            level_map[level] = wire
    if all(level == "off" for level in raw):
        raise _fail(route, f'{site} offers no level beyond "off"')
    return True, MappingProxyType(level_map)


_ABSENT: Final = object()


def _pos(route: str, site: str, entry: Mapping[str, object], key: str) -> int | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _fail(route, f"{site}.{key}: {_camel(key)} must be a positive integer")
    return value


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p.title() for p in rest)


def _entries(
    route: str, raw: Mapping[str, object], catalog: CatalogProvider | None
) -> list[tuple[str, object]]:
    models = raw.get("models")
    overrides = raw.get("model_overrides")
    if models is not None and not isinstance(models, (list, tuple)):
        raise _fail(route, f"providers.{route}.models must be a list of model entries")
    if overrides:
        if not isinstance(overrides, Mapping):
            raise _fail(route, f"providers.{route}.model_overrides must be a mapping")
        if "" in overrides:
            raise _fail(route, "has a modelOverrides entry with an empty model id")
        if catalog is None:
            raise _fail(
                route,
                "sets model_overrides, but a declared route spells every model out in models",
            )
        if models:
            raise _fail(
                route,
                "sets model_overrides beside models; models already replaces the served catalog",
            )
        for mid, value in overrides.items():
            if mid not in catalog.by_id:
                raise _fail(
                    route,
                    f'has a model_overrides entry for "{mid}", which the installed catalog does '
                    "not describe",
                )
            if not isinstance(value, Mapping):
                raise _fail(route, f"providers.{route}.model_overrides.{mid} must be a mapping")
            if "id" in value:
                raise _fail(route, f'model_overrides.{mid} sets "id", which is the dict key')
    if models:
        return [(f"providers.{route}.models[{i}]", e) for i, e in enumerate(models)]
    if catalog is None:
        withheld = load_catalog().withheld.get(route)
        if withheld is not None and not raw.get("api"):
            raise _fail(route, f"is not served by modelwire: {withheld}")
        raise _fail(route, "resolves no models: a declared route needs api, base_url and models")
    over = overrides if isinstance(overrides, Mapping) else {}
    return [
        (f"providers.{route}.model_overrides.{m.id}", {"id": m.id, **over.get(m.id, {})})
        for m in catalog.models
    ]


_CLOUD_ROOTS: Final = {
    "anthropic-bedrock": "https://bedrock-runtime.amazonaws.com",
    "anthropic-vertex": "https://aiplatform.googleapis.com",
}
"""The endpoint root of a cloud protocol a route may leave out (the dispatch builds the real
URL from the route's region and project)."""


def materialize_models(
    route: str,
    raw: Mapping[str, object],
    *,
    api: str | None,
    base_url: str | None,
    default_context_window: int,
    default_max_tokens: int | None,
    default_input: tuple[str, ...],
) -> tuple[dict[str, ModelDescriptor], bool, tuple[str, ...]]:
    """Materialize a route's models; returns (models by id, is-catalog-route, ambient key vars).
    `default_max_tokens` None: the profile gives none (a model no entry or catalog sizes gets
    `DEFAULT_MAX_TOKENS`, marked unknown)."""
    catalog = load_catalog().providers.get(route)
    raw_entries = _entries(route, raw, catalog)
    route_compat = _check_vocabulary(route, f"providers.{route}.compat", raw.get("compat"))
    entries: list[tuple[str, Mapping[str, object]]] = []
    for site, entry in raw_entries:
        if not isinstance(entry, Mapping):
            raise _fail(route, f"{site} must be a mapping")
        for key in entry:
            if key not in _ENTRY_FIELDS:
                raise _fail(route, f'{site} has an unknown field "{key}"')
        _check_vocabulary(route, f"{site}.compat", entry.get("compat"))
        entries.append((site, entry))
    out: dict[str, ModelDescriptor] = {}
    shared_api = catalog.shared_api if catalog else None
    readable: set[str] = set()
    for site, entry in entries:
        mid = entry.get("id")
        if not isinstance(mid, str) or not mid:
            raise _fail(route, f"has a model with an empty id ({site}.id)")
        if mid in out:
            raise _fail(route, f'lists model "{mid}" more than once')
        cat = catalog.by_id.get(mid) if catalog else None
        model_api = api or (cat.api if cat else None) or shared_api
        if model_api is None:
            raise _fail(route, f'model "{mid}" needs an api ({site})')
        url = base_url or (cat.base_url if cat else None) or (catalog.base_url if catalog else None)
        url = url or _CLOUD_ROOTS.get(model_api)  # built per call from region / project
        if not url:
            raise _fail(route, f'model "{mid}" needs a baseURL (providers.{route}.base_url)')
        context_window = _pos(route, site, entry, "context_window")
        max_tokens = _pos(route, site, entry, "max_tokens")
        name = entry.get("name")
        if name is not None and not isinstance(name, str):
            raise _fail(route, f"{site}.name must be a string")
        modalities = entry.get("input") or None
        if modalities is not None and (
            not isinstance(modalities, (list, tuple))
            or any(m not in MODALITIES for m in modalities)
        ):
            raise _fail(route, f"{site}.input must list {MODALITIES_TEXT}")
        reasoning, level_map = _efforts(
            route, f"{site}.reasoning_efforts", entry.get("reasoning_efforts", _ABSENT), cat
        )
        model_compat = _check_vocabulary(route, f"{site}.compat", entry.get("compat"))
        for key in written(model_compat):
            if model_api not in SWITCH_PROTOCOLS[key]:
                raise _fail(
                    route,
                    f'model "{mid}" sets compat.{key}, but its api is "{model_api}", which does '
                    f"not take it; {key} exists on " + ", ".join(SWITCH_PROTOCOLS[key]),
                )
        taken = tuple(k for k in written(route_compat) if model_api in SWITCH_PROTOCOLS[k])
        readable.update(taken)
        configured = overlay(overlay(NO_SWITCHES, route_compat, taken), model_compat)
        base_compat = (cat.compat if cat else None) or NO_SWITCHES
        if written(configured):
            same_api = cat is not None and cat.api == model_api
            compat = overlay(base_compat if same_api else NO_SWITCHES, configured)
        else:
            compat = base_compat
        out[mid] = ModelDescriptor(
            id=mid,
            name=name or (cat.name if cat else mid),
            api=model_api,
            provider=route,
            base_url=url,
            reasoning=reasoning,
            thinking_level_map=level_map,
            input=tuple(dict.fromkeys(modalities))
            if modalities
            else (cat.input if cat else default_input),
            context_window=context_window
            or (cat.context_window if cat else default_context_window),
            max_tokens=max_tokens
            or (cat.max_tokens if cat else default_max_tokens or DEFAULT_MAX_TOKENS),
            configured_max_tokens=max_tokens,
            max_tokens_known=bool(max_tokens or cat or default_max_tokens),
            headers=tuple((cat.headers or {}).items()) if cat else (),
            compat=compat,
            pricing=_pricing(route, site, entry.get("cost"), cat),
        )
    for key in written(route_compat):
        if key not in readable:
            raise _fail(
                route,
                f"sets compat.{key}, but no model on the route speaks a protocol that takes it",
            )
    ambient = catalog.api_key_env if catalog else ()
    return out, catalog is not None, ambient
