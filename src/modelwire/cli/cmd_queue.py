"""The `modelwire queue …` commands (typer); the work is in `queues.py`."""

from __future__ import annotations

from typing import Annotated

import typer

from .cmd_worker import QueueLogOption
from .errors import run_async
from .options import DebugOption, JsonOption, examples

__all__ = ["queue_app"]

queue_app = typer.Typer(
    help="Submit turns for `modelwire worker` to run, wait for them, and count the queue. The "
    "queue lives in the log database (SQLite or PostgreSQL) beside the sessions.",
    short_help="Submit turns to the workers, wait for them, count the queue.",
    no_args_is_help=True,
    add_completion=False,
)


@queue_app.command(
    "status",
    short_help="Count the queue's tickets per state.",
    epilog=examples(
        "modelwire queue status --log jobs.db",
        "modelwire queue status --json | jq .queued",
    ),
)
def queue_status(
    log: QueueLogOption = None, json_out: JsonOption = False, debug: DebugOption = False
) -> None:
    """Count the tickets: queued, running (and per worker), expired leases (running tickets whose
    worker stopped renewing: the next claim takes them over), completed and failed. --json prints
    one object: queued, running, completed, failed, by_worker, expired."""

    async def go() -> int:
        from .queues import print_status

        return await print_status(log_option=log, as_json=json_out)

    run_async(go, debug=debug)


@queue_app.command(
    "submit",
    short_help="Queue a turn of a session; prints its ticket.",
    epilog=examples(
        'modelwire queue submit report-42 "Summarize the quarterly report"',
        "cat notes.txt | modelwire queue submit notes-7          # the text from stdin",
        'ticket=$(modelwire queue submit s1 "Hi") && modelwire queue wait "$ticket"',
    ),
)
def queue_submit(
    session_id: Annotated[
        str, typer.Argument(metavar="SESSION", help="Session id.", show_default=False)
    ],
    text: Annotated[
        str | None,
        typer.Argument(
            metavar="TEXT",
            help="The user's message [default: the whole of stdin]",
            show_default=False,
        ),
    ] = None,
    log: QueueLogOption = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the ticket as JSON: id, session_id, position.")
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Queue a turn of SESSION with the user's TEXT (or stdin) and print its ticket id. A worker
    runs it after the session's earlier tickets; `modelwire queue wait TICKET` waits for it."""

    async def go() -> int:
        from .queues import submit_turn

        return await submit_turn(session_id, text, log_option=log, as_json=json_out)

    run_async(go, debug=debug)


@queue_app.command(
    "wait",
    short_help="Wait for a ticket; prints its answer.",
    epilog=examples(
        'modelwire queue wait "$ticket" --timeout 300',
        "modelwire queue wait tk_0123… --json | jq -r .state",
    ),
)
def queue_wait(
    ticket: Annotated[str, typer.Argument(metavar="TICKET", help="Ticket id.", show_default=False)],
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0,
            metavar="S",
            help="Give up after S seconds (exit 1) [default: wait as long as it takes]",
            show_default=False,
        ),
    ] = None,
    log: QueueLogOption = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the ticket's status as JSON: id, session_id, state, worker, claims, "
            "reason, output, error, …",
        ),
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Wait until TICKET ended and print the answer on stdout (its state on stderr). Exit codes:
    0 completed, 1 failed (the failure on stderr) or still unfinished after --timeout, 2 an
    unknown ticket."""

    async def go() -> int:
        from .queues import wait_ticket

        return await wait_ticket(ticket, timeout_s=timeout, log_option=log, as_json=json_out)

    run_async(go, debug=debug)
