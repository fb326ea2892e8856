"""The `modelwire keys …`, `modelwire logs …` and `modelwire config …` commands (typer): where
keys, the session log and the config file live; the work is in `keys.py`, `logs.py` and
`where.py`."""

from __future__ import annotations

from typing import Annotated

import typer

from .errors import run_async
from .options import ConfigOption, DebugOption, JsonOption, LogOption, examples

__all__ = ["config_app", "keys_app", "logs_app"]

keys_app = typer.Typer(
    help="Store API keys per route in the user config dir (mode 0600). A key variable set in "
    "the environment always wins over a stored key.",
    short_help="Store, list or remove API keys.",
    no_args_is_help=True,
    add_completion=False,
)
logs_app = typer.Typer(
    help="Where the session log lives.",
    short_help="Where the session log lives.",
    no_args_is_help=True,
    add_completion=False,
)
config_app = typer.Typer(
    help="Where the config file lives (routes, the [default] model, the built-in deepseek "
    "route's settings).",
    short_help="Where the config file lives.",
    no_args_is_help=True,
    add_completion=False,
)

RouteArgument = Annotated[
    str, typer.Argument(metavar="ROUTE", help="Provider route.", show_default=False)
]


@keys_app.command(
    "set",
    short_help="Store the API key of a route.",
    epilog=examples(
        "modelwire keys set deepseek                     # asks, input hidden",
        "printenv OPENAI_API_KEY | modelwire keys set openai",
    ),
)
def keys_set(route: RouteArgument, config: ConfigOption = None, debug: DebugOption = False) -> None:
    """Store the API key of ROUTE: typed at a hidden prompt on a terminal, else read from stdin
    (never from the command line). It is used while the route's key variable is unset."""

    async def go() -> int:
        from .keys import set_key

        return await set_key(route, config_path=config)

    run_async(go, debug=debug)


@keys_app.command(
    "list",
    short_help="Which routes have a key, and from where.",
    epilog=examples("modelwire keys list", "modelwire keys list --json"),
)
def keys_list(
    config: ConfigOption = None, json_out: JsonOption = False, debug: DebugOption = False
) -> None:
    """List the routes, the variable each reads its key from, whether a key is stored or set in
    the environment, and which one is used. Never prints a key."""

    async def go() -> int:
        from .keys import list_keys

        return await list_keys(config_path=config, as_json=json_out)

    run_async(go, debug=debug)


@keys_app.command(
    "rm",
    short_help="Remove the stored key of a route.",
    epilog=examples("modelwire keys rm openai"),
)
def keys_rm(route: RouteArgument, debug: DebugOption = False) -> None:
    """Remove the stored API key of ROUTE (the environment is not touched)."""

    async def go() -> int:
        from .keys import remove_key

        return await remove_key(route)

    run_async(go, debug=debug)


@logs_app.command(
    "path",
    short_help="Print where the session log is.",
    epilog=examples("modelwire logs path", 'sqlite3 "$(modelwire logs path)" .tables'),
)
def logs_path(
    log: LogOption = None, json_out: JsonOption = False, debug: DebugOption = False
) -> None:
    """Print the session log every command uses: its file for SQLite (the default: sessions.db
    under the user data dir), else its URL without credentials. Creates nothing."""

    async def go() -> int:
        from .logs import print_log_path

        return await print_log_path(log, as_json=json_out)

    run_async(go, debug=debug)


@config_app.command(
    "path",
    short_help="Print where the config file is, and whether it exists.",
    epilog=examples(
        "modelwire config path",
        '"${EDITOR:-vi}" "$(modelwire config path)"',
        "modelwire config path --json | jq .exists",
    ),
)
def config_path(
    config: ConfigOption = None, json_out: JsonOption = False, debug: DebugOption = False
) -> None:
    """Print the config file every command reads (--config, else $MODELWIRE_CONFIG, else
    config.toml in the user config dir) on stdout, and on stderr whether it exists. Creates
    nothing. --json prints one object: path, exists, source, default, keys, keys_exist."""

    async def go() -> int:
        from .where import print_config_path

        return await print_config_path(config, as_json=json_out)

    run_async(go, debug=debug)
