"""Provider routes for the CLI: the built-in `deepseek` route plus the config file's routes.

`build_routes(config)` constructs the adapters (never touching the network) and knows, per route,
whether its credential is present. `modelwire providers` and `modelwire models ROUTE` print them,
together with the installed catalog's providers that a config section would enable.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import msgspec
from rich.console import Console
from rich.table import Table

from ..errors import HarnessError
from .config import CliConfig, load_config
from .errors import fail

if TYPE_CHECKING:
    from ..runtime import LlmRuntime
    from ..runtime.adapter import LlmAdapter

__all__ = ["BUILTIN_ROUTE", "Route", "RouteSet", "build_routes", "list_models", "list_providers"]

BUILTIN_ROUTE: Final = "deepseek"
"""The route served by the built-in `DeepSeekAdapter` (unless the config declares its own)."""


@dataclass(frozen=True, slots=True)
class Route:
    """One usable route: its adapter, where it was defined, and the credential it still needs."""

    name: str
    display_name: str
    source: str
    adapter: LlmAdapter
    missing_env: str | None


@dataclass(frozen=True, slots=True)
class RouteSet:
    """Every route the CLI can serve, by name, plus how to register them on a runtime."""

    routes: Mapping[str, Route]
    config: CliConfig

    def get(self, name: str) -> Route:
        """The route `name`, or a one-line `CliError` listing the known routes."""
        route = self.routes.get(name)
        if route is None:
            known = ", ".join(sorted(self.routes)) or "none"
            fail(
                f"unknown provider route {name!r} (known routes: {known}; see `modelwire providers`)"
            )
        return route

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


def build_routes(config: CliConfig, env: Mapping[str, str] | None = None) -> RouteSet:
    """Build the adapters for the built-in route and every configured route (no I/O)."""
    environ = env if env is not None else os.environ
    where = f"config file {config.path}" if config.path else "config"
    routes: dict[str, Route] = {}
    if config.providers:
        from ..adapters.providers import ProvidersAdapter

        try:
            providers = ProvidersAdapter.from_config({"providers": config.providers})
        except HarnessError as err:
            fail(f"{where}: {err}")
        for name, profile in config.providers.items():
            key_env = profile.get("api_key_env")
            routes[name] = Route(
                name=name,
                display_name=providers.provider_info(name).name,
                source=config.path or "config",
                adapter=providers,
                missing_env=_env_missing(key_env if isinstance(key_env, str) else None, environ),
            )
    if BUILTIN_ROUTE not in routes:
        from ..adapters.deepseek import DeepSeekAdapter

        settings = dict(config.deepseek)
        try:
            adapter = DeepSeekAdapter.from_config(settings)
        except HarnessError as err:
            fail(f"{where}: [deepseek] {err}")
        key_env = settings.get("api_key_env", "DEEPSEEK_API_KEY")
        has_literal = bool(settings.get("api_key"))
        routes[BUILTIN_ROUTE] = Route(
            name=BUILTIN_ROUTE,
            display_name=adapter.provider_info(BUILTIN_ROUTE).name,
            source="built-in",
            adapter=adapter,
            missing_env=None
            if has_literal
            else _env_missing(key_env if isinstance(key_env, str) else None, environ),
        )
    return RouteSet(routes=routes, config=config)


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
        table.add_row(str(row["route"]), str(row["name"]), str(row["source"]), status)
    console = Console(highlight=False, soft_wrap=True)
    console.print(table)
    console.print(
        f"\n[dim]{len(enable)} more providers in the installed catalog (enable one with a "
        "\\[providers.<id>] section in your config):[/]\n" + ", ".join(enable)
    )
    return 0


async def list_models(route: str, *, config_path: str | None, as_json: bool) -> int:
    """Print a route's models; an unconfigured catalog provider shows its catalog models."""
    routes = build_routes(load_config(config_path))
    rows: list[dict[str, object]]
    note = ""
    if route in routes.routes:
        infos = await routes.routes[route].adapter.list_models(route)
        rows = [
            {"id": m.id, "name": m.name, "input": list(m.input_modalities or ("text",))}
            for m in infos
        ]
    else:
        catalog = _catalog_providers()
        if route not in catalog:
            routes.get(route)  # the one-line unknown-route error
        from ..adapters.providers.catalog import load_catalog

        provider = load_catalog().providers[route]
        rows = [{"id": m.id, "name": m.name, "input": list(m.input)} for m in provider.models]
        note = f"{route} is in the installed catalog but not configured: add [providers.{route}]"
    if as_json:
        sys.stdout.write(msgspec.json.encode({"route": route, "models": rows}).decode() + "\n")
        return 0
    table = Table(title=f"models of {route}", title_justify="left", show_edge=False)
    for column in ("id", "name", "input"):
        table.add_column(column)
    for row in rows:
        inputs = row["input"]
        shown = ", ".join(str(i) for i in inputs) if isinstance(inputs, list) else ""
        table.add_row(str(row["id"]), str(row["name"]), shown)
    console = Console(highlight=False, soft_wrap=True)
    console.print(table)
    if note:
        console.print(f"[dim]{note}[/]")
    return 0
