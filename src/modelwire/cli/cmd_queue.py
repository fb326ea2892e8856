"""The `modelwire queue …` commands (typer); the work is in `queues.py`."""

from __future__ import annotations

from typing import Annotated

import typer

from .cmd_worker import QueueLogOption
from .errors import run_async
from .options import DebugOption, JsonOption, examples

__all__ = ["queue_app"]

queue_app = typer.Typer(
    help="Submit turns for `modelwire worker` to run, wait for them, list, cancel and count "
    "them. The queue lives in the log database (SQLite or PostgreSQL) beside the sessions.",
    short_help="Submit turns to the workers, wait for, list, cancel and count them.",
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
    """Count the tickets: queued, running (and per live worker), expired leases (running tickets
    whose worker stopped renewing: the next claim takes them over; a dead worker is no longer
    listed as running), completed, failed and cancelled. --json prints one object: queued,
    running, completed, failed, by_worker, expired, cancelled."""

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
    0 completed, 1 failed (the failure on stderr), still unfinished after --timeout, or paused
    (its turn waits for `queue approve` / `queue deny`: the calls and the commands are printed
    on stderr), 2 an unknown ticket."""

    async def go() -> int:
        from .queues import wait_ticket

        return await wait_ticket(ticket, timeout_s=timeout, log_option=log, as_json=json_out)

    run_async(go, debug=debug)


@queue_app.command(
    "list",
    short_help="List the most recent tickets: state, session, worker.",
    epilog=examples(
        "modelwire queue list",
        "modelwire queue list --state queued --state running",
        "modelwire queue list --session report-42 --json | jq -r '.[].id'",
    ),
)
def queue_list(
    state: Annotated[
        list[str] | None,
        typer.Option(
            "--state",
            metavar="STATE",
            help="Only tickets in STATE: queued, running, cancelling, paused, completed, "
            "failed, cancelled (repeatable).",
            show_default=False,
        ),
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", metavar="ID", help="Only the tickets of session ID.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, metavar="N", help="The N most recent tickets.")
    ] = 50,
    log: QueueLogOption = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="Print a JSON array of ticket statuses (id, session_id, state, …)."
        ),
    ] = False,
    debug: DebugOption = False,
) -> None:
    """List the most recent tickets, oldest first: id, state, session and the worker that took
    it (claimed more than once: taken over)."""

    async def go() -> int:
        from .queues import list_tickets

        return await list_tickets(
            states=tuple(state or ()),
            session_id=session,
            limit=limit,
            log_option=log,
            as_json=json_out,
        )

    run_async(go, debug=debug)


@queue_app.command(
    "cancel",
    short_help="Cancel a ticket (queued: never runs; running: its worker stops it).",
    epilog=examples('modelwire queue cancel "$ticket"', "modelwire queue cancel tk_0123… --json"),
)
def queue_cancel(
    ticket: Annotated[str, typer.Argument(metavar="TICKET", help="Ticket id.", show_default=False)],
    log: QueueLogOption = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the ticket's status as JSON.")
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Cancel TICKET. A queued ticket ends cancelled at once and never runs; a running one is
    marked cancelling, and its worker cancels the turn at its next poll (the turn ends aborted,
    the ticket cancelled; `modelwire queue wait TICKET` returns then). An unknown or finished
    ticket is an error (exit 2), and nothing changes."""

    async def go() -> int:
        from .queues import cancel_ticket

        return await cancel_ticket(ticket, log_option=log, as_json=json_out)

    run_async(go, debug=debug)


def _decide_command(approve: bool) -> None:
    name = "approve" if approve else "deny"
    verb = "Approve" if approve else "Deny"

    @queue_app.command(
        name,
        short_help=f"{verb} a tool call a paused ticket waits for.",
        epilog=examples(
            f"modelwire queue {name} tk_0123… call_abc"
            + ("" if approve else ' --reason "not this account"'),
            "modelwire queue list --state paused",
        ),
    )
    def decide(
        ticket: Annotated[
            str, typer.Argument(metavar="TICKET", help="Ticket id.", show_default=False)
        ],
        call_id: Annotated[
            str,
            typer.Argument(metavar="CALL_ID", help="The waiting tool call.", show_default=False),
        ],
        reason: Annotated[
            str | None,
            typer.Option(
                "--reason", metavar="TEXT", help="Why (the model is told a denial's reason)."
            ),
        ] = None,
        log: QueueLogOption = None,
        json_out: Annotated[
            bool, typer.Option("--json", help="Print the decision and the ticket as JSON.")
        ] = False,
        debug: DebugOption = False,
    ) -> None:
        async def go() -> int:
            from .queues import decide_ticket

            return await decide_ticket(
                ticket, call_id, approve, reason=reason, log_option=log, as_json=json_out
            )

        run_async(go, debug=debug)

    decide.__doc__ = (
        f"{verb} CALL_ID, a tool call the paused TICKET waits for (logged as tool/decision, by "
        "this user). Once every waiting call is decided the ticket is queued again and a worker "
        "resumes its turn. A call already decided the other way, or one the ticket does not "
        "wait for, is an error (exit 2), and nothing changes."
    )


_decide_command(True)
_decide_command(False)
