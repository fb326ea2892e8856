"""`modelwire ui`: serve the read-only web inspector of the session log on 127.0.0.1.

Registered in `app.py` with one line (`app.command("ui", ...)(ui)`); the server itself lives in
`modelwire.ui` and is imported only when the command runs.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from .errors import fail, run_async

__all__ = ["ui"]


def _missing_sqlite_file(url: str) -> bool:
    """A `sqlite:///` log whose file does not exist yet (read-only commands do not create it)."""
    return url[:10].lower() == "sqlite:///" and not Path(url[10:]).exists()


def ui(
    log: Annotated[
        str | None,
        typer.Option(
            "--log",
            metavar="PATH|URL",
            help="Session log to inspect [default: $MODELWIRE_LOG, else the default log]",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free one).")
    ] = 8765,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="ADDRESS",
            help="Address to bind; anything but loopback also needs --allow-remote.",
        ),
    ] = "127.0.0.1",
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Allow a non-loopback --host: everyone who can reach it reads every session.",
        ),
    ] = False,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            metavar="NAME",
            help="A host name the page is reached by besides localhost (repeatable): requests "
            "addressed to any other name are refused (DNS rebinding).",
        ),
    ] = None,
) -> None:
    """Browse the session log in a local web page: sessions, transcripts, a timeline of every
    attempt and retry, raw chunks, token usage; running sessions update live. Read-only.
    Prints the URL; Ctrl-C stops it."""

    async def go() -> int:
        from ..errors import HarnessError
        from ..ui import serve
        from ..ui.guard import allowed_host_name, is_loopback_host
        from .logs import open_cli_log, shown_url

        if not is_loopback_host(host) and not allow_remote:
            fail(
                f"--host {host} is not a loopback address: anyone who can reach it could read "
                "every message in the log; pass --allow-remote to serve it there anyway"
            )
        try:
            names = [allowed_host_name(name) for name in allowed_host or ()]
        except HarnessError as err:
            fail(f"--allowed-host: {err.message}")
        async with open_cli_log(log, write=False) as (opened, url):
            try:
                server = await serve(
                    opened, host=host, port=port, allow_remote=allow_remote, allowed_hosts=names
                )
            except OSError as err:
                fail(f"cannot listen on {host}:{port}: {err.strerror or err}")
            try:
                sys.stdout.write(
                    f"modelwire ui: {shown_url(url)}\n{server.url}\n(read-only; Ctrl-C stops it)\n"
                )
                sys.stdout.flush()
                if _missing_sqlite_file(url):
                    sys.stderr.write(
                        "note: this log file does not exist yet, so the page shows no sessions; "
                        "start `modelwire ui` again once an agent has written to it\n"
                    )
                await asyncio.Event().wait()
            finally:
                await server.close()
        return 0

    run_async(go, debug=False)
