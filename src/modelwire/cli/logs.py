"""Opening the session log for a command, and `modelwire logs path`.

Commands that write (chat, demo, replay, resume, sessions rm) refuse a SQLite log whose directory
is read-only with one line (exit code 2) before anything runs. Commands that only read (sessions
list, show, usage, export) still work there: SQLite's WAL mode needs to create files beside the
database, so they read a snapshot copy from a temporary directory; a log file that does not exist
yet reads as empty and is not created.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec

from ..session import MemoryLog, SessionLog, open_log, redact_url, url_secrets
from ..wire.status import redact_secrets
from .config import LOG_ENV, default_log_path, resolve_log_url
from .errors import CliError, fail

__all__ = ["open_cli_log", "print_log_path", "shown_url", "sqlite_file"]


def shown_url(url: str) -> str:
    """`url` as printed: unchanged (copy-pasteable) unless it carries credentials to hide
    (a password, a query string or a fragment; see `redact_url`)."""
    return redact_url(url)


def sqlite_file(url: str) -> Path | None:
    """The database file of a (normalized) `sqlite:///` URL; None for other logs."""
    if url[:10].lower() != "sqlite:///":
        return None
    return Path(url[10:])


def _writable(db: Path) -> bool:
    """Whether SQLite can write `db`: the file (if present) and its directory (WAL files)."""
    directory = db.parent
    if db.exists() and not os.access(db, os.W_OK):
        return False
    return os.access(directory, os.W_OK | os.X_OK)


def _snapshot(db: Path, into: Path) -> Path:
    """Copy `db` (and its WAL, which holds committed events not yet checkpointed) into `into`."""
    target = into / "sessions.db"
    try:
        shutil.copyfile(db, target)
        wal = db.with_name(db.name + "-wal")
        if wal.exists():
            shutil.copyfile(wal, target.with_name(target.name + "-wal"))
    except OSError as err:
        fail(f"cannot read the session log {db}: {err.strerror or err}")
    return target


async def _open(url: str, shown: str) -> SessionLog:
    try:
        return await open_log(url)
    except Exception as err:  # ours, the OS's or a driver's (connection refused): bad input
        text = redact_secrets(str(err), url_secrets(url))
    # failed outside the handler: no `__context__` keeps a driver's text quoting the URL
    raise CliError(f"cannot open the session log {shown}: {text}")


@asynccontextmanager
async def open_cli_log(
    option: str | None, *, write: bool = True
) -> AsyncIterator[tuple[SessionLog, str]]:
    """Open the log named by `--log` (or its defaults); yields `(log, url)` and closes it after.

    `write=False` is for commands that only read (see the module docstring). An unreachable or
    unusable log is a `CliError` naming the URL (without its password).
    """
    url = resolve_log_url(option, create=write)
    db = sqlite_file(url)
    scratch: str | None = None
    opened = url
    log: SessionLog
    if db is not None and write and not _writable(db):
        fail(
            f"the session log {db} cannot be written: its directory {db.parent} is read-only "
            "(pass --log PATH somewhere writable, or --log memory: for a throwaway log)"
        )
    if db is not None and not write and not db.exists():
        log = MemoryLog()  # nothing logged there yet: read it as empty, create nothing
    else:
        if db is not None and not write and not _writable(db):
            scratch = tempfile.mkdtemp(prefix="modelwire-snapshot-")
            opened = f"sqlite:///{_snapshot(db, Path(scratch))}"
        log = await _open(opened, shown_url(url))
    try:
        yield log, url
    finally:
        try:
            await log.close()
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)


def _source(option: str | None) -> str:
    if option:
        return "--log"
    if os.environ.get(LOG_ENV):
        return f"${LOG_ENV}"
    return "default"


async def print_log_path(option: str | None, *, as_json: bool) -> int:
    """`modelwire logs path`: where the log is (the file for SQLite, else the URL); creates nothing."""
    url = resolve_log_url(option, create=False)
    db = sqlite_file(url)
    source = _source(option)
    if as_json:
        out = {
            "url": shown_url(url),
            "path": str(db) if db is not None else None,
            "exists": db.exists() if db is not None else None,
            "source": source,
            "default": str(default_log_path()),
        }
        sys.stdout.write(msgspec.json.encode(out).decode() + "\n")
        return 0
    sys.stdout.write(f"{db if db is not None else shown_url(url)}\n")
    if sys.stderr.isatty():
        where = {"--log": "from --log", "default": "the default, under the user data dir"}
        note = where.get(source, f"from {source}")
        missing = " (not created yet)" if db is not None and not db.exists() else ""
        sys.stderr.write(f"{note}{missing}\n")
    return 0
