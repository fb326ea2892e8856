"""Provider routes for the CLI: the built-in `deepseek` route plus the config file's routes.

`build_routes(config)` constructs the adapters (never touching the network) and knows, per route,
which variable holds its key and whether it is set. A key stored with `modelwire keys set ROUTE`
fills that variable for the adapters while the environment leaves it unset (the environment
wins). `modelwire providers` and `modelwire models ROUTE` print the routes, together with the
installed catalog's providers that a config section would enable.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import msgspec
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..errors import HarnessError
from .config import CliConfig, load_config
from .errors import fail
from .keystore import load_keys

if TYPE_CHECKING:
    from ..runtime import LlmRuntime
    from ..runtime.adapter import LlmAdapter

__all__ = [
    "BUILTIN_ROUTE",
    "Route",
    "RouteSet",
    "build_routes",
    "catalog_key_vars",
    "choose_model",
    "list_models",
    "list_providers",
]

BUILTIN_ROUTE: Final = "deepseek"
"""The route served by the built-in `DeepSeekAdapter` (unless the config declares its own)."""


@dataclass(frozen=True, slots=True)
class Route:
    """One usable route: its adapter, where it was defined, and the credential it still needs.

    `key_vars` are the variables its key is read from (first set one wins; empty: the route
    needs no key or carries it in a header); `key_source` says where the key comes from now:
    `env`, `stored` (`modelwire keys set`), `config` (a literal in the config file) or None.
    """

    name: str
    display_name: str
    source: str
    adapter: LlmAdapter
    missing_env: str | None
    key_vars: tuple[str, ...] = ()
    key_source: str | None = None


@dataclass(frozen=True, slots=True)
class RouteSet:
    """Every route the CLI can serve, by name, plus how to register them on a runtime."""

    routes: Mapping[str, Route]
    config: CliConfig

    def get(self, name: str, what: str | None = None) -> Route:
        """The route `name`, or a one-line `CliError` listing the known routes (`what`: where
        the name came from, e.g. `-m 'locl:qwen3:8b'`)."""
        route = self.routes.get(name)
        if route is None:
            from ..runtime.registry import unknown_route_text

            where = f"{what}: " if what else ""
            text = f"{where}{unknown_route_text(name, self.routes)}; see `modelwire providers`"
            fail(text, code="NO_ADAPTER")
        return route

    async def parse(self, value: str, base: str, what: str) -> tuple[str, str]:
        """`value` as (route, model): `route:model` (split at the first colon) when a known
        route comes first, else a model of the route `base` (which must list an id containing a
        colon, such as `qwen3:8b`); a colon after no known route is an unknown route."""
        route, sep, model = value.partition(":")
        if sep and route in self.routes:
            if not model:
                fail(f"{what} {value!r}: the model id after {route}: is empty")
            return route, model
        if not value.strip():
            fail(f"{what}: the model id is empty")
        if sep:
            listed = self.routes.get(base)
            ids = {m.id for m in await listed.adapter.list_models(base)} if listed else set()
            if value not in ids:
                self.get(route, f"{what} {value!r}")
        return base, value

    async def default(self) -> tuple[str | None, str | None]:
        """The config file's `[default]` route and model (None: not set), checked: `model =
        "route:model"` (or a model of the built-in route), or `provider` with its `model`."""
        chosen, where = self.config.default, self.config.path or "config"
        if chosen.provider is not None:
            self.get(chosen.provider, f"{where}: [default] provider")
            return chosen.provider, chosen.model
        if chosen.model is not None:
            return await self.parse(chosen.model, BUILTIN_ROUTE, f"{where}: [default] model")
        return None, None

    def register(self, runtime: LlmRuntime, names: list[str] | None = None) -> None:
        """Register the adapters of `names` (default: all routes) on `runtime`."""
        chosen = [self.routes[n] for n in (names if names is not None else list(self.routes))]
        by_adapter: dict[int, tuple[LlmAdapter, list[str]]] = {}
        for route in chosen:
            by_adapter.setdefault(id(route.adapter), (route.adapter, []))[1].append(route.name)
        for adapter, route_names in by_adapter.values():
            runtime.register_adapter(route_names, adapter)


def _env_missing(name: str | None, env: Mapping[str, str]) -> str | None:
    if name is None:
        return None
    return None if env.get(name, "").strip() else name


def catalog_key_vars(route: str) -> tuple[str, ...]:
    """The key variables the installed catalog names for provider `route` (empty if unknown)."""
    from ..adapters.providers.catalog import load_catalog

    provider = load_catalog().providers.get(route)
    return provider.api_key_env if provider is not None else ()


def build_routes(
    config: CliConfig,
    env: Mapping[str, str] | None = None,
    stored: Mapping[str, str] | None = None,
) -> RouteSet:
    """Build the adapters for the built-in route and every configured route (no network I/O).

    `stored` is the keys stored per route (default: the user's key file, with a warning when
    others may read it); a route reads its stored key while `env` (default: the process
    environment) leaves its key variables unset — the same rule as `open_runtime`'s.
    """
    from ..agent.keystore import StoredKeyEnvironment
    from ..agent.setup import route_key_vars

    environ = dict(env if env is not None else os.environ)
    keys = dict(stored) if stored is not None else load_keys(using=True)
    where = f"config file {config.path}" if config.path else "config"
    settings = dict(config.deepseek)
    key_vars = route_key_vars(config.providers, settings)
    merged = StoredKeyEnvironment(keys, key_vars, environ)
    routes: dict[str, Route] = {}
    if config.providers:
        from ..adapters.providers import ProvidersAdapter

        try:
            providers = ProvidersAdapter.from_config({"providers": config.providers}, env=merged)
        except HarnessError as err:
            fail(f"{where}: {err}")
        for name in config.providers:
            routes[name] = Route(
                name=name,
                display_name=providers.provider_info(name).name,
                source=config.path or "config",
                adapter=providers,
                missing_env=providers.missing_credential(name),
                key_vars=key_vars[name],
                key_source=merged.source(key_vars[name]),
            )
    if BUILTIN_ROUTE not in routes:
        from ..adapters.deepseek import DeepSeekAdapter

        try:
            adapter = DeepSeekAdapter.from_config(settings, env=merged)
        except HarnessError as err:
            fail(f"{where}: [deepseek] {err}")
        has_literal = bool(settings.get("api_key"))
        names = key_vars[BUILTIN_ROUTE]
        routes[BUILTIN_ROUTE] = Route(
            name=BUILTIN_ROUTE,
            display_name=adapter.provider_info(BUILTIN_ROUTE).name,
            source="built-in",
            adapter=adapter,
            missing_env=None if has_literal else _env_missing(names[0] if names else None, merged),
            key_vars=names,
            key_source="config" if has_literal else merged.source(names),
        )
    return RouteSet(routes=routes, config=config)


async def choose_model(route: Route, wanted: str | None) -> str:
    """`wanted` if the route lists it (or lists nothing), else the route's recommended model
    (its first when none is marked).

    An id the route's catalog does not list is a one-line `CliError` naming route and model.
    """
    infos = await route.adapter.list_models(route.name)
    ids = [m.id for m in infos]
    if wanted is None:
        if not ids:
            fail(f"route {route.name!r} lists no models: pass -m {route.name}:MODEL")
        return next((m.id for m in infos if m.recommended), ids[0])
    if ids and wanted not in ids:
        shown = ", ".join(ids[:12]) + (", …" if len(ids) > 12 else "")
        fail(
            f"unknown model {wanted!r} for route {route.name!r} (known: {shown}; "
            f"see `modelwire models {route.name}`)",
            code="UNKNOWN_MODEL",
        )
    return wanted


def _catalog_providers() -> dict[str, tuple[str, tuple[str, ...]]]:
    from ..adapters.providers.catalog import load_catalog

    catalog = load_catalog()
    return {pid: (p.name, tuple(m.id for m in p.models)) for pid, p in catalog.providers.items()}


async def list_providers(*, config_path: str | None, as_json: bool) -> int:
    """Print the usable routes and the catalog providers a config section would enable."""
    routes = build_routes(load_config(config_path))
    catalog = _catalog_providers()
    rows = [
        {
            "route": r.name,
            "name": r.display_name,
            "source": r.source,
            "ready": r.missing_env is None,
            "missing_env": r.missing_env,
        }
        for r in sorted(routes.routes.values(), key=lambda r: r.name)
    ]
    enable = sorted(pid for pid in catalog if pid not in routes.routes)
    if as_json:
        out = {"routes": rows, "catalog": [{"provider": p, "name": catalog[p][0]} for p in enable]}
        sys.stdout.write(msgspec.json.encode(out).decode() + "\n")
        return 0
    table = Table(title="provider routes", title_justify="left", show_edge=False)
    for column in ("route", "name", "source", "status"):
        table.add_column(column)
    for row in rows:
        status = "ready" if row["ready"] else f"needs {row['missing_env']}"
        table.add_row(*(escape(str(row[k])) for k in ("route", "name", "source")), status)
    console = Console(highlight=False, soft_wrap=True)
    console.print(table)
    console.print()
    console.print(
        Text(
            f"{len(enable)} more providers in the installed catalog (enable one with a "
            "[providers.<id>] section in your config):",
            style="dim",
        )
    )
    console.print(Text(", ".join(enable)))
    return 0


async def list_models(route: str, *, config_path: str | None, as_json: bool) -> int:
    """Print a route's models with their list prices (USD per million tokens, per bucket, and
    the input tiers; "—" / null when unknown); an unconfigured catalog provider shows its
    catalog models."""
    from ..meter.cost import cost_text
    from ..vocab import ModelPricing

    routes = build_routes(load_config(config_path))
    rows: list[dict[str, object]]
    prices: list[ModelPricing | None]
    note = ""
    if route in routes.routes:
        adapter = routes.routes[route].adapter
        infos = await adapter.list_models(route)
        prices = []
        for m in infos:
            try:
                prices.append((await adapter.resolve_model(route, m.id)).pricing)
            except HarnessError:  # listed but not resolvable (e.g. discovered): unknown price
                prices.append(None)
        rows = [
            {
                "id": m.id,
                "name": m.name,
                "input": list(m.input_modalities or ("text",)),
                "default": m.recommended,
            }
            for m in infos
        ]
    else:
        catalog = _catalog_providers()
        if route not in catalog:
            routes.get(route)  # the one-line unknown-route error
        from ..adapters.providers.catalog import load_catalog

        provider = load_catalog().providers[route]
        prices = [m.cost.pricing() if m.cost is not None else None for m in provider.models]
        rows = [
            {
                "id": m.id,
                "name": m.name,
                "input": list(m.input),
                "default": m.id == provider.default_model,
            }
            for m in provider.models
        ]
        note = (
            f"{route} is in the installed catalog but not configured: add a [providers.{route}] "
            "section to your config file (see `modelwire providers`)"
        )
    buckets = ("input", "output", "cache_read", "cache_write")
    for row, pricing in zip(rows, prices, strict=True):  # decimals as strings, never floats
        row["pricing"] = None
        if pricing is not None:
            row["pricing"] = {
                **{b: cost_text(getattr(pricing, b)) for b in buckets},
                "tiers": [
                    {"input_tokens_above": t.input_tokens_above}
                    | {b: cost_text(getattr(t, b)) for b in buckets}
                    for t in pricing.tiers
                ],
            }
    if as_json:
        sys.stdout.write(msgspec.json.encode({"route": route, "models": rows}).decode() + "\n")
        return 0
    title = f"models of {route} (prices in USD per 1M tokens)"
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column("id", no_wrap=True)
    for column in ("name", "input", "default"):
        table.add_column(column)
    for column in ("in", "out", "cache r", "cache w"):
        table.add_column(column, justify="right", no_wrap=True)
    tiers: list[str] = []
    for row, pricing in zip(rows, prices, strict=True):
        inputs = row["input"]
        shown = ", ".join(str(i) for i in inputs) if isinstance(inputs, list) else ""
        mark = "default" if row["default"] else ""
        cells = [cost_text(getattr(pricing, b)) if pricing else "—" for b in buckets]
        table.add_row(escape(str(row["id"])), escape(str(row["name"])), escape(shown), mark, *cells)
        for t in pricing.tiers if pricing else ():
            rates = " / ".join(cost_text(getattr(t, b)) for b in buckets)
            tiers.append(f"{row['id']}: above {t.input_tokens_above:,} input tokens: {rates}")
    wide = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 200  # a pipe: no cut
    console = Console(highlight=False, soft_wrap=True, width=wide)
    console.print(table)
    if tiers:
        console.print(Text("input tiers (USD per 1M: in / out / cache r / cache w):", "dim"))
        for line in tiers:
            console.print(Text(line, style="dim"))
    if note:
        console.print(Text(note, style="dim"))
    return 0
