"""The `modelwire sessions …` commands (typer); the work is in `sessions.py`, `transcript.py`,
`remove.py`, `resume.py` and `decide.py`."""

from __future__ import annotations

from typing import Annotated

import typer

from .errors import run_async
from .options import ConfigOption, DebugOption, JsonOption, LogOption, examples

__all__ = ["sessions_app"]

sessions_app = typer.Typer(
    help="List, show, export, resume or remove the sessions stored in a session log.",
    short_help="List, show, export, resume or remove sessions.",
    no_args_is_help=True,
    add_completion=False,
)

IdArgument = Annotated[str, typer.Argument(metavar="ID", help="Session id.", show_default=False)]


@sessions_app.command(
    "list",
    short_help="List sessions, newest first.",
    epilog=examples(
        "modelwire sessions list",
        "modelwire sessions list --search invoice --limit 5",
        "modelwire sessions list --json | jq -r '.[].session_id'",
    ),
)
def sessions_list(
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, metavar="N", help="Show at most N sessions.")
    ] = 20,
    search: Annotated[
        str | None,
        typer.Option(
            "--search",
            metavar="TEXT",
            help="Only sessions whose id, route/model or messages contain TEXT (any case).",
        ),
    ] = None,
    log: LogOption = None,
    json_out: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """List sessions, newest first: id, route/model, started, turns, tokens, cost, and the first
    message as a one-line preview. Cost is in USD at the prices logged with each call; "—"
    when a price is unknown."""

    async def go() -> int:
        from .sessions import list_sessions

        return await list_sessions(log_option=log, as_json=json_out, limit=limit, search=search)

    run_async(go, debug=debug)


@sessions_app.command(
    "show",
    short_help="Print a session as a readable transcript.",
    epilog=examples(
        "modelwire sessions show chat-20250101-120000-a1b2c3",
        "modelwire sessions show ID --full          # long messages unfolded",
        "modelwire sessions show ID --events        # every durable event, one per line",
        "modelwire sessions show ID --json",
    ),
)
def sessions_show(
    session_id: IdArgument,
    full: Annotated[bool, typer.Option("--full", help="Do not fold long messages.")] = False,
    events: Annotated[
        bool, typer.Option("--events", help="List the durable events instead of a transcript.")
    ] = False,
    log: LogOption = None,
    json_out: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Print session ID as a transcript: each turn's messages, reasoning, tool calls, retries and
    how it ended. Long messages are folded to a few lines (--full shows them whole)."""

    async def go() -> int:
        from .transcript import show_session

        return await show_session(
            session_id, log_option=log, as_json=json_out, full=full, events=events
        )

    run_async(go, debug=debug)


@sessions_app.command(
    "usage",
    short_help="Token usage of a session per call.",
    epilog=examples("modelwire sessions usage ID", "modelwire sessions usage ID --json"),
)
def sessions_usage(
    session_id: IdArgument,
    log: LogOption = None,
    json_out: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Token usage and cost (USD) of session ID per provider call (turn.step.attempt) and in
    total; a cost whose price is unknown shows "—" (null in JSON)."""

    async def go() -> int:
        from .sessions import show_usage

        return await show_usage(session_id, log_option=log, as_json=json_out)

    run_async(go, debug=debug)


@sessions_app.command(
    "export",
    short_help="Write a session to a file (for replay).",
    epilog=examples("modelwire sessions export ID session.jsonl", "modelwire replay session.jsonl"),
)
def sessions_export(
    session_id: IdArgument,
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="Where to write the export.", show_default=False)
    ],
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Write session ID to FILE as JSON lines, replayable offline with `modelwire replay FILE`."""

    async def go() -> int:
        from .sessions import export_to_file

        return await export_to_file(session_id, file, log_option=log)

    run_async(go, debug=debug)


@sessions_app.command(
    "resume",
    short_help="Continue a turn a killed process left open.",
    epilog=examples("modelwire sessions resume ID"),
)
def sessions_resume(
    session_id: IdArgument,
    config: ConfigOption = None,
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Continue the turn a killed process left open in session ID: same turn, same retry count,
    tool calls never run twice. A session whose last turn ended says how it ended instead."""

    async def go() -> int:
        from .resume import resume_session

        return await resume_session(session_id, config_path=config, log_option=log)

    run_async(go, debug=debug)


@sessions_app.command(
    "decide",
    short_help="Approve or deny a tool call a paused turn waits for.",
    epilog=examples(
        "modelwire sessions decide ID call_abc --approve",
        'modelwire sessions decide ID call_abc --deny --reason "not this account"',
    ),
)
def sessions_decide(
    session_id: IdArgument,
    call_id: Annotated[
        str, typer.Argument(metavar="CALL_ID", help="The waiting tool call.", show_default=False)
    ],
    approve: Annotated[
        bool | None,
        typer.Option(
            "--approve/--deny",
            help="Run the call, or answer it denied (required).",
            show_default=False,
        ),
    ] = None,
    reason: Annotated[
        str | None,
        typer.Option("--reason", metavar="TEXT", help="Why (the model is told a denial's reason)."),
    ] = None,
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Approve or deny CALL_ID, a tool call the paused turn of session ID waits for (logged as
    tool/decision, by this user). A call already decided the other way, or one the session does
    not wait for, is an error (exit 2) and nothing changes. Once every call is decided,
    `modelwire chat --session ID` (with the same --agent) continues the turn."""

    async def go() -> int:
        from .decide import decide_call
        from .errors import fail

        if approve is None:
            fail("say --approve or --deny")
        return await decide_call(session_id, call_id, approve, reason=reason, log_option=log)

    run_async(go, debug=debug)


@sessions_app.command(
    "rm",
    short_help="Delete sessions from a SQLite log.",
    epilog=examples("modelwire sessions rm ID", "modelwire sessions rm ID1 ID2 --yes"),
)
def sessions_rm(
    session_ids: Annotated[
        list[str], typer.Argument(metavar="ID", help="Session ids.", show_default=False)
    ],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask (required when not on a terminal).")
    ] = False,
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Delete every event of the sessions ID… from the log, after a confirmation on a terminal
    (pass --yes elsewhere). SQLite logs only for now."""

    async def go() -> int:
        from .remove import remove_sessions

        return await remove_sessions(session_ids, log_option=log, yes=yes)

    run_async(go, debug=debug)
