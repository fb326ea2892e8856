"""`modelwire sessions list | show | usage | export`: inspecting a session log."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import msgspec
from rich.console import Console

from ..errors import HarnessError
from ..session import Event, SessionLog
from .errors import fail
from .logs import open_cli_log
from .render import event_line, usage_table

__all__ = ["export_to_file", "list_sessions", "read_session", "show_session", "show_usage"]


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _print_json(value: object) -> None:
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")


async def read_session(log: SessionLog, session_id: str, url: str) -> list[Event]:
    """Every event of `session_id`; an unknown session is a one-line `CliError` naming the log."""
    try:
        return await log.read(session_id)
    except HarnessError as err:
        if err.code == "SESSION_NOT_FOUND":
            fail(f"no session {session_id!r} in {_shown(url)} (see `modelwire sessions list`)")
        raise


async def list_sessions(*, log_option: str | None, as_json: bool) -> int:
    """Print every session of the log (newest last): id, events, first and last event time."""
    async with open_cli_log(log_option) as (log, url):
        infos = await log.sessions()
    infos.sort(key=lambda info: (info.last_time, info.session_id))
    if as_json:
        _print_json([msgspec.to_builtins(info) for info in infos])
        return 0
    console = Console(highlight=False, soft_wrap=True)
    if not infos:
        console.print(f"no sessions in {_shown(url)}")
        return 0
    for info in infos:
        console.print(
            f"{info.session_id}  {info.events:>6} events  "
            f"{_time(info.first_time)} → {_time(info.last_time)} UTC"
        )
    return 0


def _shown(url: str) -> str:
    from .logs import shown_url

    return shown_url(url)


def event_json(event: Event) -> dict[str, object]:
    """One event as JSON-ready builtins: `{seq, type, time, data}` with snake_case keys."""
    return {
        "seq": event.seq,
        "type": event.type,
        "time": event.time,
        "data": msgspec.to_builtins(event.data),
    }


async def show_session(session_id: str, *, log_option: str | None, as_json: bool) -> int:
    """Print a session's events; raw `assistant/chunk` events are summarized per attempt."""
    async with open_cli_log(log_option) as (log, url):
        events = await read_session(log, session_id, url)
    if as_json:
        _print_json([event_json(e) for e in events])
        return 0
    from ..session import AssistantChunk
    from ..vocab import Error, Finish

    console = Console(highlight=False, soft_wrap=True)
    console.print(f"[bold]session {session_id}[/] — {len(events)} events in {_shown(url)}")
    pending: list[tuple[int, AssistantChunk]] = []

    def flush_chunks() -> None:
        if not pending:
            return
        (first, data), (last, tail) = pending[0], pending[-1]
        ending: str = tail.chunk.type
        if isinstance(tail.chunk, Finish):
            reason = tail.chunk.reason
            code = f" {reason.failure.code}" if isinstance(reason, Error) else ""
            ending = f"finish {reason.kind}{code}"
        count = f"{len(pending)} chunk" + ("s" if len(pending) != 1 else "")
        console.print(
            f"[dim]{first:>5}  assistant/chunk    {data.turn}.{data.step} attempt "
            f"{data.attempt}: {count} (seq {first}–{last}), ending in {ending}[/]"
        )
        pending.clear()

    for event in events:
        if isinstance(event.data, AssistantChunk):
            if pending and pending[0][1].attempt != event.data.attempt:
                flush_chunks()
            pending.append((event.seq, event.data))
            continue
        flush_chunks()
        console.print(event_line(event))
    flush_chunks()
    return 0


async def show_usage(session_id: str, *, log_option: str | None, as_json: bool) -> int:
    """Token usage per provider call (turn, step, attempt) and in total, from `TokenMeter`."""
    from ..meter import TokenMeter

    async with open_cli_log(log_option) as (log, url):
        events = await read_session(log, session_id, url)
    report = TokenMeter.project(events)
    calls = sorted(report.calls.items())
    if as_json:
        _print_json(
            {
                "session_id": session_id,
                "total": msgspec.to_builtins(report.total),
                "calls": [
                    {"turn": t, "step": s, "attempt": a, "usage": msgspec.to_builtins(u)}
                    for (t, s, a), u in calls
                ],
            }
        )
        return 0
    rows = [(f"{t}.{s}.{a}", usage) for (t, s, a), usage in calls]
    Console(soft_wrap=True).print(
        usage_table(f"token usage of session {session_id} per call", rows, report.total)
    )
    return 0


def _export_target(file: str) -> Path:
    target = Path(file).expanduser()
    if target.is_dir():
        fail(f"export target {target} is a directory")
    if not target.parent.is_dir():
        fail(f"export target directory {target.parent} does not exist")
    return target


async def export_to_file(session_id: str, file: str, *, log_option: str | None) -> int:
    """Write the session (`export_session`) to FILE; refuses a directory or a missing parent."""
    from ..session.export import export_session

    target = _export_target(file)
    async with open_cli_log(log_option) as (log, url):
        try:
            count = await export_session(log, session_id, target)
        except HarnessError as err:
            if err.code == "SESSION_NOT_FOUND":
                fail(f"no session {session_id!r} in {_shown(url)} (see `modelwire sessions list`)")
            raise
    Console(highlight=False, soft_wrap=True).print(
        f"exported {count} events of session {session_id} to {target}"
    )
    return 0
