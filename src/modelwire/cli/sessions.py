"""`modelwire sessions list | usage | export`: inspecting a session log (read-only).

`show` is in `transcript.py`, `rm` in `remove.py`, `resume` in `resume.py`.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import msgspec
from rich.markup import escape
from rich.table import Table

from ..errors import HarnessError
from ..meter.cost import cost_text
from ..session import Event, SessionLog
from .errors import fail
from .logs import open_cli_log, shown_url
from .render import print_table, usage_table
from .summaries import SessionSummary, matches, one_line, summarize
from .terminal import TerminalConsole

__all__ = [
    "event_json",
    "export_to_file",
    "list_sessions",
    "local_time",
    "print_json",
    "read_session",
    "show_usage",
]


def local_time(ms: int) -> str:
    """An epoch-ms time as local `YYYY-MM-DD HH:MM`."""
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M")


def print_json(value: object) -> None:
    """One JSON document on stdout."""
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")


async def read_session(log: SessionLog, session_id: str, url: str) -> list[Event]:
    """Every event of `session_id`; an unknown session is a one-line `CliError` naming the log."""
    try:
        return await log.read(session_id)
    except HarnessError as err:
        if err.code == "SESSION_NOT_FOUND":
            fail(f"no session {session_id!r} in {shown_url(url)} (see `modelwire sessions list`)")
        raise


def _summary_json(s: SessionSummary) -> dict[str, object]:
    return {
        **msgspec.to_builtins(s.info),
        "route": s.route,
        "model": s.model,
        "turns": s.turns,
        "tokens": s.tokens,
        "cost": _json_cost(s.cost),
        "preview": s.preview,
    }


async def list_sessions(
    *, log_option: str | None, as_json: bool, limit: int = 20, search: str | None = None
) -> int:
    """Print the newest `limit` sessions (matching `search`) as a table, or JSON."""
    summaries: list[SessionSummary] = []
    async with open_cli_log(log_option, write=False) as (log, url):
        infos = sorted(
            await log.sessions(), key=lambda i: (i.last_time, i.session_id), reverse=True
        )
        total = len(infos)
        for info in infos:
            if len(summaries) >= limit:
                break
            summary = summarize(info, await log.read(info.session_id))
            if search is None or matches(summary, search):
                summaries.append(summary)
    if as_json:
        print_json([_summary_json(s) for s in summaries])
        return 0
    # off a terminal nothing is cut to 80 columns (a pipe has no width); COLUMNS still rules
    wide = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 200
    console = TerminalConsole(highlight=False, width=wide)
    if not summaries:
        what = f" matching {search!r}" if search is not None else ""
        console.print(f"no sessions{escape(what)} in {escape(shown_url(url))}")
        return 0
    cells = [
        [
            s.info.session_id,
            f"{s.route}/{s.model}" if s.route else "–",
            local_time(s.info.first_time),
            str(s.turns),
            f"{s.tokens:,}",
            f"${cost_text(s.cost)}" if s.cost is not None else "—",
        ]
        for s in summaries
    ]
    names = ("ID", "MODEL", "STARTED", "TURNS", "TOKENS", "COST")
    widths = [max(len(name), *(len(row[n]) for row in cells)) for n, name in enumerate(names)]
    # ids, times and numbers are never cut; route/model is, on a narrow terminal, and the
    # preview gets what is left of the line (at least a few characters)
    spare = console.width - sum(widths) - 2 * len(names)
    if spare < 12:
        widths[1] = max(12, widths[1] - (12 - spare))
        spare = 12
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for n, name in enumerate(names):
        right = name in ("TURNS", "TOKENS", "COST")
        table.add_column(
            name,
            no_wrap=True,
            justify="right" if right else "left",
            min_width=widths[n],
            max_width=widths[n],
            overflow="ellipsis",
        )
    table.add_column("PREVIEW", no_wrap=True, overflow="ellipsis", max_width=spare)
    for row, s in zip(cells, summaries, strict=True):
        table.add_row(*(escape(cell) for cell in row), escape(one_line(s.preview, spare)))
    print_table(console, table)
    shown = len(summaries)
    if search is None and shown < total:
        console.print(f"[dim]{shown} of {total} sessions (--limit N shows more)[/]")
    return 0


def event_json(event: Event) -> dict[str, object]:
    """One event as JSON-ready builtins: `{seq, type, time, data}` with snake_case keys."""
    return {
        "seq": event.seq,
        "type": event.type,
        "time": event.time,
        "data": msgspec.to_builtins(event.data),
    }


async def show_usage(session_id: str, *, log_option: str | None, as_json: bool) -> int:
    """Token usage and cost (USD, at the prices logged with each call) per provider call
    (turn, step, attempt) and in total, from `TokenMeter`; an unknown cost is "—" (JSON null)."""
    from ..meter import TokenMeter

    async with open_cli_log(log_option, write=False) as (log, url):
        events = await read_session(log, session_id, url)
    report = TokenMeter.project(events)
    calls = sorted(report.calls.items())
    if as_json:
        print_json(
            {
                "session_id": session_id,
                "total": msgspec.to_builtins(report.total),
                "cost": _json_cost(report.cost),
                "calls": [
                    {
                        "turn": t,
                        "step": s,
                        "attempt": a,
                        "usage": msgspec.to_builtins(u),
                        "cost": _json_cost(report.call_cost(t, s, a)),
                    }
                    for (t, s, a), u in calls
                ],
            }
        )
        return 0
    rows = [(f"{t}.{s}.{a}", usage) for (t, s, a), usage in calls]
    costs = [report.call_cost(*key) for key, _ in calls]
    console = TerminalConsole(soft_wrap=True)
    title = f"token usage of session {session_id} per call"
    table = usage_table(title, rows, report.total, costs=costs, total_cost=report.cost)
    console.print(table)
    console.print(f"cost: ${cost_text(report.cost)}" if report.cost is not None else "cost: —")
    return 0


def _json_cost(cost: Decimal | None) -> str | None:
    """A cost for JSON: an exact decimal string (never a float), or null when unknown."""
    return None if cost is None else cost_text(cost)


def _export_target(file: str) -> Path:
    import os

    target = Path(file).expanduser()
    if target.is_dir():
        fail(f"export target {target} is a directory")
    if not target.parent.is_dir():
        fail(f"export target directory {target.parent} does not exist")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        fail(f"cannot write the export {target}: its directory {target.parent} is read-only")
    return target


async def export_to_file(session_id: str, file: str, *, log_option: str | None) -> int:
    """Write the session (`export_session`) to FILE; refuses a directory, a missing or read-only
    parent, and names FILE (never the temporary file beside it) when writing fails."""
    from ..session.export import export_session

    target = _export_target(file)
    async with open_cli_log(log_option, write=False) as (log, url):
        await read_session(log, session_id, url)  # the one-line unknown-session error
        try:
            count = await export_session(log, session_id, target)
        except (OSError, HarnessError) as err:
            if isinstance(err, HarnessError) and err.code == "SESSION_NOT_FOUND":
                raise
            reason = getattr(err, "strerror", None) or _reason(err)
            fail(f"cannot write the export {target}: {reason}")
    TerminalConsole(highlight=False, soft_wrap=True).print(
        f"exported {count} events of session {escape(session_id)} to {escape(str(target))}"
    )
    return 0


def _reason(err: BaseException) -> str:
    """The cause of a failed export without the temporary file's path."""
    cause = err.__cause__ if isinstance(err.__cause__, OSError) else None
    if cause is not None and cause.strerror:
        return cause.strerror
    return type(err).__name__
