"""`modelwire keys set | list | rm`: API keys stored per route in the user config dir.

`keys set ROUTE` reads the key from a hidden prompt on a terminal, else the whole of stdin
(`printenv OPENAI_API_KEY | modelwire keys set openai`), never from the command line (which shell
history and `ps` would keep). A route's key variable in the environment still wins over the
stored key. No command prints a key, not even part of one.
"""

from __future__ import annotations

import sys

import msgspec
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .config import load_config
from .errors import fail
from .keystore import keys_path, load_keys, loose_permissions, save_keys
from .render import print_table
from .routes import RouteSet, build_routes, catalog_key_vars

__all__ = ["list_keys", "remove_key", "set_key"]


def _key_vars(routes: RouteSet, route: str) -> tuple[str, ...]:
    """The variables route `route` reads its key from; unknown routes are a one-line error."""
    known = routes.routes.get(route)
    if known is not None:
        return known.key_vars
    names = catalog_key_vars(route)
    if names:
        return names
    routes.get(route)  # the one-line unknown-route error
    return ()


def _read_key(route: str) -> str:
    if sys.stdin.isatty():
        import getpass

        try:
            return getpass.getpass(f"API key for {route} (input hidden): ")
        except EOFError:
            return ""
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError:
        fail("the key on stdin is not UTF-8 text")


async def set_key(route: str, *, config_path: str | None) -> int:
    """Store a key for `route` (hidden prompt on a terminal, else stdin)."""
    from ..errors import LlmError
    from ..wire.credentials import assert_usable_api_key

    routes = build_routes(load_config(config_path))
    names = _key_vars(routes, route)
    if not names:
        fail(
            f"route {route!r} reads no key variable, so a stored key would never be used: add "
            f'api_key_env = "{route.upper().replace("-", "_")}_API_KEY" to its [providers.{route}] '
            "section, then store the key"
        )
    raw = _read_key(route)
    if not raw.strip():
        fail(
            f"no key given for route {route!r}: type it at the prompt or pipe it on stdin, or "
            f"export {names[0]} instead",
            code="MISSING_CREDENTIAL",
        )
    try:
        key = assert_usable_api_key(raw, "modelwire keys", "stdin")
    except LlmError:
        fail(
            f"the key given for route {route!r} contains characters no HTTP header can carry "
            "(spaces inside it, or non-ASCII): give the raw key alone"
        )
    keys = load_keys()
    keys[route] = key
    path = save_keys(keys)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    err.print(f"stored the key for route {escape(route)!r} in {path} (mode 0600)")
    if any(name in _environ() for name in names):
        err.print(
            f"[yellow]note: {escape(names[0])} is set in the environment and takes precedence[/]"
        )
    return 0


def _environ() -> set[str]:
    import os

    return {k for k, v in os.environ.items() if v.strip()}


async def list_keys(*, config_path: str | None, as_json: bool) -> int:
    """Which routes have a stored key, which variable each reads, and where its key comes from."""
    stored = load_keys()
    routes = build_routes(load_config(config_path), stored=stored)
    environ = _environ()
    rows: list[dict[str, object]] = []
    for name in sorted(set(routes.routes) | set(stored)):
        route = routes.routes.get(name)
        names = route.key_vars if route is not None else catalog_key_vars(name)
        in_env = next((n for n in names if n in environ), None)
        used = "env" if in_env else ("stored" if name in stored and names else None)
        if route is not None and route.key_source == "config":
            used = "config"
        rows.append(
            {
                "route": name,
                "configured": route is not None,
                "variable": names[0] if names else None,
                "stored": name in stored,
                "env": in_env is not None,
                "used": used,
            }
        )
    loose = loose_permissions()
    if as_json:
        out = {"file": str(keys_path()), "loose_permissions": loose, "routes": rows}
        sys.stdout.write(msgspec.json.encode(out).decode() + "\n")
        return 0
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for column in ("ROUTE", "VARIABLE", "STORED", "ENVIRONMENT", "USED"):
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(
            escape(str(row["route"])) + ("" if row["configured"] else " (not configured)"),
            escape(str(row["variable"] or "–")),
            "yes" if row["stored"] else "–",
            "set" if row["env"] else "–",
            str(row["used"] or "none"),
        )
    console = Console(highlight=False, soft_wrap=True)
    print_table(console, table)
    console.print(f"[dim]stored keys: {escape(str(keys_path()))}[/]")
    if loose is not None:
        Console(stderr=True, highlight=False).print(
            f"[yellow]warning: {escape(str(keys_path()))} has mode {loose}; run chmod 600 on it[/]"
        )
    return 0


async def remove_key(route: str) -> int:
    """Forget the stored key of `route`."""
    keys = load_keys()
    if route not in keys:
        stored = ", ".join(sorted(keys)) or "none"
        fail(f"no stored key for route {route!r} (stored: {stored}; see `modelwire keys list`)")
    del keys[route]
    path = save_keys(keys)
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"removed the stored key of route {escape(route)!r} from {path}"
    )
    return 0
