"""Reading a session for the inspector: in bounded batches, surviving events it cannot decode.

A log written by an agent with a plugin the inspector does not import holds event types this
process never registered; `SessionLog.read` refuses a range containing one (`INVALID_EVENT`). The
inspector must still show the rest, so a refused batch is bisected down to the single events that
fail, and each of those becomes an `Unreadable` placeholder (its seq and the reason) in place.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Final

import msgspec

from ..errors import ErrorCode, HarnessError
from ..session import Event, SessionLog

__all__ = ["BATCH", "UNREADABLE", "Unreadable", "read_batches", "read_range"]

BATCH: Final = 5_000
"""Events read per round trip (bounds memory and keeps each query short)."""

UNREADABLE: Final = "ui/unreadable"
"""The `type` of a placeholder event (never stored: the inspector is read-only)."""


class Unreadable(msgspec.Struct, frozen=True):
    """Placeholder payload of an event this process cannot decode."""

    problem: str


async def read_range(log: SessionLog, session_id: str, start: int, stop: int) -> list[Event]:
    """Events with `start <= seq < stop`; undecodable ones are replaced by placeholders."""
    try:
        return await log.read(session_id, start, stop)
    except HarnessError as err:
        if err.code != ErrorCode.INVALID_EVENT:
            raise
        if stop - start <= 1:
            return [Event(start, UNREADABLE, 0, Unreadable(str(err)))]
    middle = (start + stop) // 2
    return [
        *await read_range(log, session_id, start, middle),
        *await read_range(log, session_id, middle, stop),
    ]


async def read_batches(
    log: SessionLog, session_id: str, from_seq: int, *, batch: int = BATCH
) -> AsyncGenerator[list[Event], None]:
    """The events of `session_id` from `from_seq` to its current end, `batch` at a time.

    An unknown session raises `SESSION_NOT_FOUND` (from the log). Placeholders keep their seqs,
    so a batch shorter than asked is the end.
    """
    start = from_seq
    while True:
        events = await read_range(log, session_id, start, start + batch)
        events = [e for e in events if e.seq >= start]
        if not events:
            return
        yield events
        start = events[-1].seq + 1
        if len(events) < batch:
            return
