"""What a group-commit transaction holds before it is written: rows, and runs of pushed chunks.

`GroupCommitLog` keeps, in its open transaction, a list of pending entries: rows appended
through `append` (already encoded) and `PendingRun`s, the chunks one `GroupChunkWriter` pushed
in a row (kept as chunks: a push builds no event object). When the transaction is written (a commit, or a read that must see it), `seal` turns
each entry into one stored row: a run becomes one row of `count` events, encoded in one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from time import time_ns
from typing import TYPE_CHECKING, Final, TypeAlias

from ..events import AssistantChunk, encode_event_data
from ..vocab import StreamChunk
from .chunkrun import CHUNK_TYPE, TEXTS, ChunkWriter, PushedRun, check_chunk, encode_run
from .log import now_ms

if TYPE_CHECKING:
    from .groupcommit import GroupCommitLog
    from .tailcache import Tail

__all__ = [
    "MAX_PENDING_EVENTS",
    "GroupChunkWriter",
    "PendingRow",
    "PendingRun",
    "seal",
    "session_updates",
]

MAX_PENDING_EVENTS: Final = 1 << 16
"""Events an open transaction buffers at most (runs count their events here), whatever the
clock: a producer that never yields to the event loop still commits."""

PendingRow: TypeAlias = tuple[str, int, str, int, bytes, int]
"""A row to write: `(session id, first seq, event type, epoch-ms time, payload, event count)`;
`count > 1` only for a run of `assistant/chunk` events (payload: a `chunkrun.ChunkRun`)."""


class PendingRun:
    """Chunks of one attempt pushed back to back into the open transaction (seqs
    `seq .. end - 1`), kept as the chunks and their times: no event is built for a push. The
    tail cache holds the same object, so this instance's reads see the chunks at once."""

    __slots__ = ("attempt", "chunks", "end", "open", "seq", "session_id", "step", "times", "turn")

    def __init__(self, session_id: str, seq: int, turn: int, step: int, attempt: int) -> None:
        self.session_id, self.seq, self.end = session_id, seq, seq
        self.turn, self.step, self.attempt = turn, step, attempt
        self.chunks: list[StreamChunk] = []
        self.times: list[int] = []
        self.open = True  # False once written (or dropped): later pushes start a new run

    def snapshot(self, end: int | None = None) -> PushedRun:
        """The run's events before seq `end` (all when None) as a frozen row for a reader."""
        count = len(self.chunks) if end is None else min(end - self.seq, len(self.chunks))
        return PushedRun(
            self.seq, self.turn, self.step, self.attempt, self.times[:count], self.chunks[:count]
        )

    def row(self) -> PendingRow:
        """The stored row of this run (closing it)."""
        self.open = False
        chunks, times = self.chunks, self.times
        if len(chunks) == 1:  # a run of one is an ordinary row
            data = AssistantChunk(self.turn, self.step, self.attempt, chunks[0])
            _, raw = encode_event_data(self.session_id, data)
            return (self.session_id, self.seq, CHUNK_TYPE, times[0], raw, 1)
        raw = encode_run(self.turn, self.step, self.attempt, times, chunks)
        return (self.session_id, self.seq, CHUNK_TYPE, times[0], raw, len(chunks))


def seal(pending: Sequence[PendingRow | PendingRun]) -> list[PendingRow]:
    """The rows to write for `pending`, in order (every run closed)."""
    return [entry if isinstance(entry, tuple) else entry.row() for entry in pending]


def close_runs(pending: Sequence[PendingRow | PendingRun]) -> None:
    """Close the runs of pending entries that are dropped unwritten."""
    for entry in pending:
        if isinstance(entry, PendingRun):
            entry.open = False


def session_updates(rows: Sequence[PendingRow]) -> list[tuple[str, int, int, int]]:
    """One `(session id, event count, first time, last time)` per session in `rows`.

    The first time is only used when the batch creates the session (it then holds seq 0); the
    last time is that of the last row's first event (a run's events share a commit window).
    """
    first: dict[str, int] = {}
    last: dict[str, tuple[int, int]] = {}
    for session_id, seq, _, at, _, count in rows:
        first.setdefault(session_id, at)
        last[session_id] = (seq + count, at)
    return [(sid, end, first[sid], at) for sid, (end, at) in last.items()]


class GroupChunkWriter(ChunkWriter):
    """Pushes chunks into the open transaction while it holds the session's lock (no I/O)."""

    __slots__ = ("_clock", "_group", "_run", "_tail")

    def __init__(
        self, log: GroupCommitLog, session_id: str, turn: int, step: int, attempt: int
    ) -> None:
        super().__init__(log, session_id, turn, step, attempt)
        self._group = log
        self._run: PendingRun | None = None
        self._tail: Tail | None = None
        self._clock = None if log._clock is now_ms else log._clock  # None: `time_ns` inline

    def push(self, chunk: StreamChunk) -> int:
        log = self._group
        if log._closed:
            log._check_open()
        sid = self.session_id
        seq = log._next.get(sid)  # set only while the open transaction holds the session
        if (
            seq is None
            or log._broken is not None
            or log._sealing  # the open transaction is ending (a write or read may be running)
            or len(log._pending) + 1 >= log._commit_rows
            or log._pending_events + 1 >= MAX_PENDING_EVENTS
        ):
            return -1  # the log must do I/O first (`GroupCommitLog._fast_ok`, inlined)
        if not (
            type(chunk) in TEXTS
            and type(chunk.index) is int  # type: ignore[union-attr]
            and type(chunk.text) is str  # type: ignore[union-attr]
            and chunk.text.isascii()  # type: ignore[union-attr]
        ):
            check_chunk(sid, self.turn, self.step, self.attempt, chunk)
        clock = self._clock
        at = time_ns() // 1_000_000 if clock is None else clock()
        run = self._run
        if run is None or not run.open or run.end != seq:
            run = self._run = PendingRun(sid, seq, self.turn, self.step, self.attempt)
            log._pending.append(run)
        run.chunks.append(chunk)
        run.times.append(at)
        run.end = seq + 1
        cache = log._cache
        tail = self._tail
        if tail is None or not tail.live or tail.end != seq:
            tail = self._tail = cache.at(sid, seq)
        tail.push(run)
        cache.size += 1
        if cache.size > cache.limit:
            cache.shrink()
        log._next[sid] = seq + 1
        log._pending_events += 1
        log._txn_rows += 1
        return seq
