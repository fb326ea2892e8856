"""The events a durable log instance appended last, per session, kept for its own reads.

An agent reads back what it just appended (the turn's events when the turn ends, the new events
when the next step starts). A `TailCache` keeps, per session, the contiguous range of seqs this
instance appended most recently (`Tail`): pushed chunks as the `PendingRun` that holds them (one
entry for the run's many events; a read gets a frozen `PushedRun` snapshot of it), appended rows
as their encoded tuples (decoded on read, as from storage). Only acknowledged appends enter it, and
the log is append-only: a cached seq holds forever what storage holds, so a read of a cached
range needs no query and no decode. Events past the tail (another writer's) still come from
storage. Bounded: past `limit` events the sessions whose tails started longest ago are dropped.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final, TypeAlias

from .chunkrun import CHUNK_TYPE, LoadedRow
from .pending import PendingRun

__all__ = ["DEFAULT_LIMIT", "Entry", "Tail", "TailCache"]

DEFAULT_LIMIT: Final = 1 << 16

Entry: TypeAlias = LoadedRow | PendingRun
"""One entry of a tail: a loaded row, or the run of chunks a writer is pushing into."""


def _frozen(entry: Entry, end: int) -> LoadedRow:
    return entry.snapshot(end) if isinstance(entry, PendingRun) else entry


class Tail:
    """Events `start .. end - 1` of one session, in seq order: `rows[i]` holds the events from
    seq `starts[i]` (one, or a pushed run's many)."""

    __slots__ = ("end", "live", "rows", "start", "starts")

    def __init__(self, start: int) -> None:
        self.start = self.end = start  # `end`: the seq after the last cached one
        self.rows: list[Entry] = []
        self.starts: list[int] = []
        self.live = True  # False once the cache dropped it (a writer holding it takes a new one)

    def push(self, run: PendingRun) -> None:
        """Seq `end` was pushed into `run` (the tail ends where `run` does)."""
        if not self.rows or self.rows[-1] is not run:
            self.rows.append(run)
            self.starts.append(self.end)
        self.end += 1


class TailCache:
    """Per-session `Tail`s, at most about `limit` events in all (see the module docstring)."""

    __slots__ = ("_tails", "limit", "size")

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._tails: OrderedDict[str, Tail] = OrderedDict()
        self.limit = limit
        self.size = 0

    def at(self, session_id: str, seq: int) -> Tail:
        """The tail of `session_id` to extend with seq `seq` (a fresh one if it does not end
        there: the old range is dropped, so each session's cache stays contiguous)."""
        tail = self._tails.get(session_id)
        if tail is None or tail.end != seq:
            if tail is not None:
                self.size -= tail.end - tail.start
                tail.live = False
            tail = self._tails[session_id] = Tail(seq)
        self._tails.move_to_end(session_id)
        return tail

    def add(self, session_id: str, first: int, rows: Sequence[tuple[str, int, bytes]]) -> None:
        """Cache acknowledged appended `rows` (`(type, time, payload)`, one per event) of
        `session_id` from seq `first`, as storage returns them."""
        tail = self._tails.get(session_id)
        if tail is None or tail.end != first:
            tail = self.at(session_id, first)
        if len(rows) == 1:
            name, at, raw = rows[0]
            tail.rows.append((first, name, at, raw))
            tail.starts.append(first)
        else:
            tail.rows.extend([(first + i, n, at, raw) for i, (n, at, raw) in enumerate(rows)])
            tail.starts.extend(range(first, first + len(rows)))
        tail.end += len(rows)
        self.size += len(rows)
        if self.size > self.limit:
            self.shrink()

    def shrink(self) -> None:
        """Drop the oldest tails (then the front entries of the last one) down to the limit."""
        while self.size > self.limit and len(self._tails) > 1:
            _, tail = self._tails.popitem(last=False)
            self.size -= tail.end - tail.start
            tail.live = False
        if self.size > self.limit and self._tails:
            tail = next(iter(self._tails.values()))
            # Keep the last half of the limit; a pushed run across that line stays as an entry
            # but the tail starts inside it (reads clip the run to the tail).
            keep = tail.end - self.limit // 2
            cut = bisect_right(tail.starts, keep) - 1
            del tail.rows[:cut]
            del tail.starts[:cut]
            tail.starts[0] = keep
            self.size -= keep - tail.start
            tail.start = keep

    def read(
        self, session_id: str, from_seq: int, to_seq: int | None
    ) -> tuple[list[LoadedRow], int] | None:
        """The cached rows holding `from_seq <= seq < to_seq` (the first may start before
        `from_seq`: readers clip) and the seq where they stop (storage has the rest, if any), or
        None when the cache does not hold `from_seq`."""
        tail = self._tails.get(session_id)
        if tail is None or not tail.start <= from_seq <= tail.end:
            return None
        end = tail.end if to_seq is None else min(to_seq, tail.end)
        if end <= from_seq:
            return [], from_seq
        starts = tail.starts
        lo = bisect_right(starts, from_seq) - 1
        hi = bisect_left(starts, end)
        return [_frozen(entry, end) for entry in tail.rows[lo:hi]], end

    def holds(self, session_id: str) -> bool:
        """True when this instance appended to `session_id` (so it exists, for good)."""
        tail = self._tails.get(session_id)
        return tail is not None and tail.end > tail.start

    def latest(self, session_id: str, type: str, end: int | None) -> tuple[LoadedRow | None] | None:
        """The cached row of the newest event of `type`, given that storage ends at `end` (None:
        unknown): `(row,)`, `(None,)` when the session has no such event, or None when only
        storage can tell."""
        tail = self._tails.get(session_id)
        if tail is None or end is None or tail.end != end:
            return None
        for entry in reversed(tail.rows):
            name = entry[1] if isinstance(entry, tuple) else CHUNK_TYPE
            if name == type:
                return (_frozen(entry, tail.end),)
        return (None,) if tail.start == 0 else None

    def clear(self) -> None:
        """Forget everything (after a failed transaction)."""
        for tail in self._tails.values():
            tail.live = False
        self._tails.clear()
        self.size = 0
