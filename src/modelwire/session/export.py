"""Export a session of a log to the JSONL session file and import one back into a log.

The file format and its strict, bounded loader live with the replay adapter that reads it
(`modelwire.adapters.replay.sessionfile`); they are re-exported here.
"""

from __future__ import annotations

import asyncio
import os

from ..adapters.replay.sessionfile import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    MAX_NESTING_DEPTH,
    SessionFile,
    SessionFileHeader,
    load_session_file,
    write_session_file,
)
from ..errors import ErrorCode, HarnessError
from .events import encode_event_data
from .log import Row, SessionLog

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "MAX_NESTING_DEPTH",
    "SessionFile",
    "SessionFileHeader",
    "export_session",
    "import_session",
    "load_session_file",
]


async def export_session(log: SessionLog, session_id: str, path: str | os.PathLike[str]) -> int:
    """Write every event of `session_id` to `path` as JSONL (header line first); returns the count.

    The file is written to a temporary sibling, fsynced and renamed, so `path` is either the old
    file or the complete export. An unknown session raises `SESSION_NOT_FOUND`.
    """
    events = await log.read(session_id)
    return await asyncio.to_thread(write_session_file, path, session_id, events)


async def import_session(
    log: SessionLog, path: str | os.PathLike[str], session_id: str | None = None
) -> str:
    """Load `path` (see `load_session_file`) into a new session of `log`; returns its id.

    The session id is `session_id`, else the one recorded in the header. Events keep their seqs
    and times and are stored atomically with a durable barrier. Importing into a session that
    already has events raises `INVALID_ARGS` (nothing existing is touched).
    """
    loaded = await asyncio.to_thread(load_session_file, path)
    target = session_id if session_id is not None else (loaded.header and loaded.header.session_id)
    if not target:
        raise HarnessError(
            f"cannot import {loaded.path}: the file records no session id; pass session_id=",
            ErrorCode.INVALID_ARGS,
        )
    if await log.exists(target):
        raise HarnessError(
            f"cannot import {loaded.path} into session {target!r}: the session already has "
            "events (import only creates new sessions)",
            ErrorCode.INVALID_ARGS,
        )
    rows: list[Row] = []
    for event in loaded.events:
        name, raw = encode_event_data(target, event.data, where=f"import seq {event.seq}")
        rows.append((name, event.time, raw))
    log._check_open()
    first = await log._store(target, rows, barrier=True)
    if first != 0:
        raise HarnessError(
            f"session {target!r} was created concurrently while importing {loaded.path}; the "
            f"imported events were appended from seq {first}",
            ErrorCode.SEQ_CONFLICT,
        )
    return target
