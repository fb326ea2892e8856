"""The `modelwire` command tree (typer): argument parsing only; each command imports its work lazily.

Heavy modules (aiohttp, adapters, the session log, the agent loop) are imported inside the command
bodies, so `modelwire --help` and the demo's first line appear immediately.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .errors import run_async

__all__ = ["app"]

app = typer.Typer(
    name="modelwire",
    help="Stream from LLM providers through one vocabulary, with a durable session log.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
sessions_app = typer.Typer(
    help="Inspect or resume sessions stored in a session log.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(sessions_app, name="sessions")

LogOption = Annotated[
    str | None,
    typer.Option(
        "--log",
        metavar="URL",
        help="Session log: memory:, sqlite:///PATH or postgresql://... "
        "[default: $MODELWIRE_LOG, else SQLite under the user data dir]",
        show_default=False,
    ),
]
DebugOption = Annotated[
    bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors.")
]
ConfigOption = Annotated[
    str | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="Config file (.toml/.yaml) with provider routes "
        "[default: $MODELWIRE_CONFIG, else config.toml in the user config dir if present]",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


@app.command()
def demo(
    log: LogOption = None,
    delay_ms: Annotated[
        int, typer.Option("--delay-ms", min=0, max=1000, help="Pause between streamed frames.")
    ] = 12,
    debug: DebugOption = False,
) -> None:
    """Run an agent turn offline against a local DeepSeek-compatible server (no key, no network)."""
    from .demo import print_header

    print_header()

    async def go() -> int:
        from .demo import run_demo

        return await run_demo(log_option=log, delay_ms=delay_ms)

    run_async(go, debug=debug)


@app.command()
def chat(
    prompt: Annotated[
        str | None, typer.Argument(help="Send one message and exit (default: interactive).")
    ] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", metavar="ROUTE", help="Provider route.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", metavar="ID", help="Model id.")] = None,
    session: Annotated[
        str | None,
        typer.Option("--session", metavar="ID", help="Continue this session (default: new)."),
    ] = None,
    system: Annotated[
        str | None, typer.Option("--system", metavar="TEXT", help="System prompt.")
    ] = None,
    config: ConfigOption = None,
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Chat with a model: one-shot with PROMPT, else an interactive loop (Ctrl-C cancels)."""

    async def go() -> int:
        from .chat import ChatRequest, run_chat

        request = ChatRequest(
            prompt=prompt,
            provider=provider,
            model=model,
            session_id=session,
            system=system,
            config_path=config,
            log_option=log,
        )
        return await run_chat(request)

    run_async(go, debug=debug)


@sessions_app.command("list")
def sessions_list(
    log: LogOption = None, json_out: JsonOption = False, debug: DebugOption = False
) -> None:
    """List the sessions in the log."""

    async def go() -> int:
        from .sessions import list_sessions

        return await list_sessions(log_option=log, as_json=json_out)

    run_async(go, debug=debug)


@sessions_app.command("show")
def sessions_show(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="Session id.")],
    log: LogOption = None,
    json_out: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Print a session's events: turns, steps, messages, tool calls, retries."""

    async def go() -> int:
        from .sessions import show_session

        return await show_session(session_id, log_option=log, as_json=json_out)

    run_async(go, debug=debug)


@sessions_app.command("usage")
def sessions_usage(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="Session id.")],
    log: LogOption = None,
    json_out: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Token usage of a session per provider call (turn, step, attempt) and in total."""

    async def go() -> int:
        from .sessions import show_usage

        return await show_usage(session_id, log_option=log, as_json=json_out)

    run_async(go, debug=debug)


@sessions_app.command("export")
def sessions_export(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="Session id.")],
    file: Annotated[str, typer.Argument(metavar="FILE", help="Where to write the export.")],
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Write a session to FILE (replayable with `modelwire replay FILE`)."""

    async def go() -> int:
        from .sessions import export_to_file

        return await export_to_file(session_id, file, log_option=log)

    run_async(go, debug=debug)


@sessions_app.command("resume")
def sessions_resume(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="Session id.")],
    config: ConfigOption = None,
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Continue the turn a killed process left open in session ID (same turn, same retry count)."""

    async def go() -> int:
        from .resume import resume_session

        return await resume_session(session_id, config_path=config, log_option=log)

    run_async(go, debug=debug)


@app.command()
def replay(
    file: Annotated[str, typer.Argument(metavar="FILE", help="A session export.")],
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Re-run an exported session's turns offline against its recorded model responses."""

    async def go() -> int:
        from .replay import run_replay

        return await run_replay(file, log_option=log)

    run_async(go, debug=debug)


@app.command()
def providers(
    config: ConfigOption = None, json_out: JsonOption = False, debug: DebugOption = False
) -> None:
    """List the provider routes: the built-in `deepseek` route and the configured ones."""

    async def go() -> int:
        from .routes import list_providers

        return await list_providers(config_path=config, as_json=json_out)

    run_async(go, debug=debug)


@app.command()
def models(
    route: Annotated[str, typer.Argument(metavar="ROUTE", help="Provider route.")],
    config: ConfigOption = None,
    json_out: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """List a route's models (its catalog, or the models its config declares)."""

    async def go() -> int:
        from .routes import list_models

        return await list_models(route, config_path=config, as_json=json_out)

    run_async(go, debug=debug)
