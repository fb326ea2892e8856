"""`modelwire sessions rm ID…`: delete sessions from a SQLite log.

The session log is append-only by design (`SessionLog` has no delete), so this command deletes a
session's rows from the SQLite file directly, in one `BEGIN IMMEDIATE` transaction (the write lock
every writer takes), after checking the file's `application_id` is modelwire's. Other backends are
refused with one line until the log interface offers a delete.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..session.sqlite_file import APPLICATION_ID
from .errors import fail
from .logs import open_cli_log, shown_url, sqlite_file

__all__ = ["remove_sessions"]


def _delete(db: Path, session_ids: list[str]) -> None:
    conn = sqlite3.connect(db, isolation_level=None, timeout=30.0)
    try:
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        if app_id != APPLICATION_ID:
            fail(f"{db} is not a modelwire session log (application_id {app_id:#x})")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sid in session_ids:
                conn.execute("DELETE FROM modelwire_events WHERE session_id = ?", (sid,))
                conn.execute("DELETE FROM modelwire_sessions WHERE session_id = ?", (sid,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as err:
        fail(f"cannot delete from the session log {db}: {err}")
    finally:
        conn.close()


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
        db = sqlite_file(url)
        if db is None:
            fail(f"sessions rm works on SQLite logs only for now, not {shown_url(url)}")
        infos = {info.session_id: info.events for info in await log.sessions()}
    missing = [sid for sid in ids if sid not in infos]
    if missing:
        fail(f"no session {missing[0]!r} in {shown_url(url)} (see `modelwire sessions list`)")
    if not yes:
        if not sys.stdin.isatty():
            fail("sessions rm deletes for good: pass --yes when not on a terminal")
        if not _confirm(ids, infos):
            sys.stderr.write("nothing deleted\n")
            return 0
    await asyncio.to_thread(_delete, db, ids)
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"deleted {len(ids)} session(s) from {escape(str(db))}: {escape(', '.join(ids))}"
    )
    return 0
