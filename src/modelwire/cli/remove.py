"""`modelwire sessions rm ID…`: delete sessions from the session log, on every backend.

The log deletes a session itself (`SessionLog.delete`): in one transaction under the session's
append lock, refusing a session a live writer holds (`TURN_IN_PROGRESS`). Every id must exist
before anything is deleted; off a terminal `--yes` is required.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape

from .errors import fail
from .logs import open_cli_log, shown_url

__all__ = ["remove_sessions"]


def _confirm(session_ids: list[str], counts: dict[str, int]) -> bool:
    listed = ", ".join(f"{sid} ({counts[sid]} events)" for sid in session_ids)
    sys.stderr.write(f"delete {listed}? This cannot be undone. [y/N] ")
    sys.stderr.flush()
    try:
        answer = input()
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


async def remove_sessions(session_ids: list[str], *, log_option: str | None, yes: bool) -> int:
    """Delete `session_ids` (all must exist) after a confirmation; returns the exit code."""
    ids = list(dict.fromkeys(session_ids))
    async with open_cli_log(log_option) as (log, url):
        infos = {info.session_id: info.events for info in await log.sessions()}
        missing = [sid for sid in ids if sid not in infos]
        if missing:
            fail(
                f"no session {missing[0]!r} in {shown_url(url)} (see `modelwire sessions list`)",
                code="SESSION_NOT_FOUND",
            )
        if not yes:
            if not sys.stdin.isatty():
                fail("sessions rm deletes for good: pass --yes when not on a terminal")
            if not _confirm(ids, infos):
                sys.stderr.write("nothing deleted\n")
                return 0
        for sid in ids:
            await log.delete(sid)
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"deleted {len(ids)} session(s) from {escape(shown_url(url))}: {escape(', '.join(ids))}"
    )
    return 0
