"""The `modelwire` command tree (typer): argument parsing only; each command imports its work lazily.

Heavy modules (aiohttp, adapters, the session log, the agent loop) are imported inside the command
bodies, so `modelwire --help` and the demo's first line appear immediately. `chat` lives in
`cmd_chat`, `sessions …` in `cmd_sessions`, `keys …` and `logs …` in `cmd_keys`, `worker` in
`cmd_worker`, `queue …` in `cmd_queue`, `mcp …` in `cmd_mcp` and `serve …` in `cmd_serve`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .cmd_batch import batch_app
from .cmd_chat import register as register_chat
from .cmd_embed import register as register_embed
from .cmd_keys import config_app, keys_app, logs_app
from .cmd_mcp import mcp_app
from .cmd_queue import queue_app
from .cmd_serve import serve_app
from .cmd_sessions import sessions_app
from .cmd_worker import register as register_worker
from .errors import run_async
from .options import ConfigOption, DebugOption, JsonOption, LogOption, examples
from .ui import ui

__all__ = ["app"]

ROOT_HELP = """Stream from LLM providers through one vocabulary, with a durable session log.

Start with `modelwire demo` (offline, no key), then `modelwire chat "…"` with DEEPSEEK_API_KEY
set (or `modelwire keys set deepseek`). `modelwire COMMAND --help` shows each command's options
and examples.
"""

EXIT_CODES = (
    "Exit codes: 0 success; 1 the provider or the turn failed (a model the provider does not "
    "know included); 2 usage error, found before anything was sent (bad arguments, config, "
    "route, model, session, key, log path, or an empty prompt); 130 cancelled (Ctrl-C, or stdout "
    'closed). With --json a failure also prints {"error": {code, message}, "exit_code"} on '
    "stdout."
)

app = typer.Typer(
    name="modelwire",
    help=ROOT_HELP,
    epilog=EXIT_CODES,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"max_content_width": 100},
)


def _version(value: bool) -> None:
    """`--version`: the installed distribution's version, as `modelwire.__version__` reads it
    (the CLI sits below the top package in the layering, so it asks the metadata itself)."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("modelwire")
        except PackageNotFoundError:
            installed = "0+unknown"
        typer.echo(f"modelwire {installed}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Print the version and exit.",
            callback=_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Stream from LLM providers through one vocabulary, with a durable session log."""


@app.command(
    short_help="Run one agent turn offline (no key, no network).",
    epilog=examples("modelwire demo", "modelwire demo --log memory: --delay-ms 0"),
)
def demo(
    log: LogOption = None,
    delay_ms: Annotated[
        int,
        typer.Option(
            "--delay-ms", min=0, max=1000, metavar="MS", help="Pause between streamed frames."
        ),
    ] = 12,
    debug: DebugOption = False,
) -> None:
    """Run an agent turn offline against a local DeepSeek-compatible server: the real adapter,
    a tool call, a retried HTTP 503, token usage, all written to the session log."""
    from .demo import print_header

    print_header()

    async def go() -> int:
        from .demo import run_demo

        return await run_demo(log_option=log, delay_ms=delay_ms)

    run_async(go, debug=debug)


register_chat(app)
register_embed(app)
app.add_typer(sessions_app, name="sessions")
app.add_typer(keys_app, name="keys")
app.add_typer(logs_app, name="logs")
app.add_typer(config_app, name="config")
app.add_typer(queue_app, name="queue")
app.add_typer(mcp_app, name="mcp")
app.add_typer(serve_app, name="serve")
app.add_typer(batch_app, name="batch")


@app.command(
    short_help="Re-run an exported session offline.",
    epilog=examples("modelwire sessions export ID s.jsonl && modelwire replay s.jsonl"),
)
def replay(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="A session export.", show_default=False)
    ],
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Re-run an exported session's turns offline against its recorded model responses and
    check that they reproduce."""

    async def go() -> int:
        from .replay import run_replay

        return await run_replay(file, log_option=log)

    run_async(go, debug=debug)


@app.command(
    short_help="List the provider routes.",
    epilog=examples("modelwire providers", "modelwire providers --json"),
)
def providers(
    config: ConfigOption = None, json_out: JsonOption = False, debug: DebugOption = False
) -> None:
    """List the provider routes (the built-in `deepseek` route and the configured ones) with
    whether their key is present, and the catalog providers a config section would enable."""

    async def go() -> int:
        from .routes import list_providers

        return await list_providers(config_path=config, as_json=json_out)

    run_async(go, debug=debug)


@app.command(
    short_help="List a route's models.",
    epilog=examples("modelwire models deepseek", "modelwire models openai --json"),
)
def models(
    route: Annotated[
        str, typer.Argument(metavar="ROUTE", help="Provider route.", show_default=False)
    ],
    config: ConfigOption = None,
    json_out: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """List a route's models: its catalog, or the models its config declares (a catalog
    provider that is not configured yet shows its catalog models and how to enable it)."""

    async def go() -> int:
        from .routes import list_models

        return await list_models(route, config_path=config, as_json=json_out)

    run_async(go, debug=debug)


app.command(
    "ui",
    short_help="Browse the session log in a local web page (read-only).",
    epilog=examples("modelwire ui", "modelwire ui --log sqlite:////srv/sessions.db --port 9000"),
)(ui)
register_worker(app)
