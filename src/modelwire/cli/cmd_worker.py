"""The `modelwire worker` command line (typer); the work is in `worker.py`."""

from __future__ import annotations

from typing import Annotated

import typer

from .errors import run_async
from .options import ConfigOption, DebugOption, examples

__all__ = ["QueueLogOption", "register"]

QueueLogOption = Annotated[
    str | None,
    typer.Option(
        "--log",
        metavar="PATH|URL",
        help="Log database holding the turn queue: a file path (SQLite), sqlite:////abs/path.db "
        "or postgresql://HOST/DB (not memory:) [default: $MODELWIRE_LOG, else sessions.db under "
        "the user data dir]",
        show_default=False,
    ),
]

WORKER_HELP = """Run queued turns (`modelwire queue submit`) with an agent, up to --concurrency at
a time, until SIGTERM or Ctrl-C (with --until-idle: until nothing is left to run).

The agent is --agent MODULE:FACTORY, a function of yours called with the worker's session log
that returns an `Agent` (sync or async; MODULE is imported with the current directory on
sys.path), or --model ROUTE:MODEL, an agent without tools on a route of the config file (as for
`modelwire chat`; without either, the config file's [default] model). Every worker sharing the log database (SQLite, or PostgreSQL for workers on
many hosts) takes turns from the same queue; a session runs one turn at a time, and the turns of
a worker that died are taken over once its leases expire.

SIGTERM or Ctrl-C stops claiming, lets running turns finish for --grace-ms, then gives their
leases up so another worker continues them, and exits 0; a second signal exits at once (130).
One line per claimed, finished, taken-over or lost ticket goes to stderr.
"""


def register(app: typer.Typer) -> None:
    """Add the `worker` command to `app`."""
    app.command(
        "worker",
        help=WORKER_HELP,
        short_help="Run queued turns with an agent (many workers share a log).",
        epilog=examples(
            "modelwire worker --model local:qwen3:8b --concurrency 8",
            "modelwire worker --until-idle            # the [default] model; run the queue dry",
            "modelwire worker --agent myapp.agents:make_agent --log postgresql://db/modelwire",
            "PYTHONPATH=src modelwire worker --agent bots:make --log jobs.db --grace-ms 5000",
        ),
    )(worker)


def worker(
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="MODULE:FACTORY",
            help="Your agent factory: FACTORY(log) -> Agent, e.g. myapp.agents:make_agent.",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "-m",
            "--model",
            metavar="ROUTE:MODEL",
            help="An agent without tools on this route and model, e.g. deepseek:deepseek-v4-flash.",
            show_default=False,
        ),
    ] = None,
    system: Annotated[
        str | None,
        typer.Option("-s", "--system", metavar="TEXT", help="System prompt (with --model)."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", metavar="N", help="Turns run at once.")
    ] = 4,
    lease_ms: Annotated[
        int,
        typer.Option(
            "--lease-ms",
            metavar="MS",
            help="How long a claimed session stays this worker's without a renewal.",
        ),
    ] = 30_000,
    renew_ms: Annotated[
        int | None,
        typer.Option(
            "--renew-ms",
            metavar="MS",
            help="How often leases are renewed [default: a third of --lease-ms]",
            show_default=False,
        ),
    ] = None,
    grace_ms: Annotated[
        int,
        typer.Option(
            "--grace-ms",
            metavar="MS",
            help="On SIGTERM/Ctrl-C, how long running turns may take to finish.",
        ),
    ] = 30_000,
    until_idle: Annotated[
        bool,
        typer.Option(
            "--until-idle",
            help="Exit 0 once this worker runs nothing and finds nothing to claim (a batch).",
        ),
    ] = False,
    config: ConfigOption = None,
    log: QueueLogOption = None,
    debug: DebugOption = False,
) -> None:
    async def go() -> int:
        from .worker import WorkerRequest, run_worker

        request = WorkerRequest(
            agent=agent,
            model=model,
            system=system,
            concurrency=concurrency,
            lease_ms=lease_ms,
            renew_ms=renew_ms,
            grace_ms=grace_ms,
            until_idle=until_idle,
            config_path=config,
            log_option=log,
        )
        return await run_worker(request)

    run_async(go, debug=debug)
