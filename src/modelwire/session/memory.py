"""The in-memory session log: process-local, nothing survives the process (tests, scratch runs).

Rows appended through `append` are kept encoded, as a durable backend stores them (a read decodes
them). Chunks pushed through a `ChunkWriter` are validated like them and kept as the bare chunk,
its time and its attempt (`turn, step, attempt`, shared by the attempt's chunks) in three lists
indexed by seq: a read builds each chunk's `Event` when it is asked for, so a push builds none.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from time import time_ns
from typing import TypeAlias

from ..events import AssistantChunk, Event
from ..vocab import StreamChunk
from .chunkrun import CHUNK_TYPE, TEXTS, ChunkWriter, check_chunk
from .lease import Decision, LeaseRow, check_deletable
from .log import Row, SessionInfo, SessionLog, StoredRow, now_ms, stale_write

__all__ = ["MemoryLog"]


Attempt: TypeAlias = tuple[int, int, int]
"""`(turn, step, attempt)` of pushed chunk events."""


class _Session:
    __slots__ = ("attempts", "facts", "last", "last_chunk", "rows", "times")

    def __init__(self) -> None:
        # One entry per event, at index seq: the stored row, or a pushed chunk whose attempt is
        # `attempts[seq]` (None for a stored row) and whose time is `times[seq]`.
        self.rows: list[StoredRow | StreamChunk] = []
        self.attempts: list[Attempt | None] = []
        self.times: list[int] = []
        self.facts: list[int] = []  # the seqs of the stored rows (every event but pushed chunks)
        self.last: dict[str, int] = {}  # event type -> the highest seq of that type
        self.last_chunk = -1  # ... of type `assistant/chunk` (-1: none), set per push

    def row(self, seq: int) -> StoredRow:
        """The stored form of event `seq` (a pushed chunk as its `Event`)."""
        row = self.rows[seq]
        attempt = self.attempts[seq]
        if attempt is None:
            return row  # type: ignore[return-value]  # only pushed chunks have an attempt
        turn, step, number = attempt
        data = AssistantChunk(turn, step, number, row)  # type: ignore[arg-type]
        return Event(seq, CHUNK_TYPE, self.times[seq], data)


class MemoryLog(SessionLog):
    """A `SessionLog` kept in process memory; `flush()` is a no-op barrier (nothing is durable)."""

    def __init__(self, *, clock: Callable[[], int] | None = None) -> None:
        super().__init__(clock=clock)
        self._sessions: dict[str, _Session] = {}
        self._lease_table: dict[str, LeaseRow] = {}

    def describe(self) -> str:
        """`memory:`."""
        return "memory:"

    def _chunk_writer(self, session_id: str, turn: int, step: int, attempt: int) -> ChunkWriter:
        return _MemoryChunkWriter(self, session_id, turn, step, attempt)

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = _Session()
        return session

    async def _store(
        self,
        session_id: str,
        rows: Sequence[Row],
        *,
        barrier: bool,
        expect_seq: int | None = None,
    ) -> int:
        session = self._sessions.get(session_id)
        first = 0 if session is None else len(session.rows)
        if expect_seq is not None and expect_seq != first:
            raise stale_write(session_id, expect_seq, first)
        if self._fences:
            at = rows[0][1]  # the append's time by this log's clock: "now"
            self._fence_check(session_id, self._lease_table.get(session_id), at)
        session = self._session(session_id)
        # No await between reading the count and appending: atomic within the event loop.
        for offset, (name, at, raw) in enumerate(rows):
            seq = first + offset
            session.rows.append((seq, name, at, raw))
            session.attempts.append(None)
            session.times.append(at)
            session.facts.append(seq)
            if name == CHUNK_TYPE:
                session.last_chunk = seq
            else:
                session.last[name] = seq
        return first

    async def _flush(self) -> None:
        return None

    async def _load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        session = self._sessions.get(session_id)
        if session is None:
            return []
        end = len(session.rows) if to_seq is None else min(to_seq, len(session.rows))
        return [session.row(seq) for seq in range(from_seq, end)]

    async def _load_facts(
        self, session_id: str, from_seq: int, to_seq: int | None
    ) -> list[StoredRow]:
        session = self._sessions.get(session_id)
        if session is None:
            return []
        facts = session.facts
        start = bisect_left(facts, from_seq)
        end = len(facts) if to_seq is None else bisect_left(facts, to_seq)
        return [session.row(seq) for seq in facts[start:end]]

    async def _load_latest(self, session_id: str, type: str) -> StoredRow | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        seq = session.last_chunk if type == CHUNK_TYPE else session.last.get(type, -1)
        return None if seq < 0 else session.row(seq)

    async def _exists(self, session_id: str) -> bool:
        return session_id in self._sessions

    async def _list_sessions(self) -> list[SessionInfo]:
        return [
            SessionInfo(sid, len(s.rows), s.times[0], s.times[-1])
            for sid, s in self._sessions.items()
            if s.rows
        ]

    async def _close(self) -> None:
        return None

    async def _delete(self, session_id: str) -> int:
        session = self._sessions.get(session_id)
        events = 0 if session is None else len(session.rows)
        check_deletable(session_id, self._lease_table.get(session_id), events, self._clock())
        del self._sessions[session_id]  # no await since the check: atomic within the loop
        return events

    async def _lease_txn(
        self, session_id: str, decide: Decision
    ) -> tuple[LeaseRow | None, LeaseRow | None]:
        before = self._lease_table.get(session_id)
        row = decide(before, self._clock())  # no await: atomic within the event loop
        if row is not None:
            self._lease_table[session_id] = row
        return before, row

    async def _lease_rows(self) -> list[LeaseRow]:
        return list(self._lease_table.values())


class _MemoryChunkWriter(ChunkWriter):
    """Pushes are always taken at once: the chunk is validated and kept as it is."""

    __slots__ = ("_attempt", "_clock", "_held", "_memory", "_session")

    def __init__(self, log: MemoryLog, session_id: str, turn: int, step: int, attempt: int) -> None:
        super().__init__(log, session_id, turn, step, attempt)
        self._memory = log
        self._clock = None if log._clock is now_ms else log._clock  # None: `time_ns` inline
        self._attempt: Attempt = (turn, step, attempt)
        self._session: _Session | None = None
        self._held: tuple[LeaseRow, int] | None = None  # a lease row and token found to hold

    def push(self, chunk: StreamChunk) -> int:
        log = self._memory
        if log._closed:
            log._check_open()
        sid = self.session_id
        clock = self._clock
        at = time_ns() // 1_000_000 if clock is None else clock()  # the event's time, and "now"
        if log._fences:  # the row and token last found to hold: checked by identity and expiry
            held = self._held
            if (
                held is None
                or held[0] is not log._lease_table.get(sid)
                or held[0].expires_ms <= at
                or log._fences.get(sid) != held[1]
            ):
                self._check_fence(log, sid, at)
        if not (
            type(chunk) in TEXTS
            and type(chunk.index) is int  # type: ignore[union-attr]
            and type(chunk.text) is str  # type: ignore[union-attr]
            and chunk.text.isascii()  # type: ignore[union-attr]
        ):
            check_chunk(sid, self.turn, self.step, self.attempt, chunk)
        session = self._session
        if session is None:  # a memory log never drops a session: this one is kept
            session = self._session = log._session(sid)
        rows = session.rows
        seq = len(rows)
        rows.append(chunk)
        session.attempts.append(self._attempt)
        session.times.append(at)
        session.last_chunk = seq
        return seq

    def _check_fence(self, log: MemoryLog, sid: str, at: int) -> None:
        """The full fence check of a push (a renewal or takeover stores a new lease row, so a
        row found to hold is then trusted until it expires)."""
        row = log._lease_table.get(sid)
        token = log._fences.get(sid)
        log._fence_check(sid, row, at)
        self._held = None if row is None or token is None else (row, token)
