"""The in-memory session log: process-local, nothing survives the process (tests, scratch runs).

Rows appended through `append` are kept encoded, as a durable backend stores them (a read decodes
them); chunks pushed through a `ChunkWriter` are validated like them and kept as their events.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import time_ns

from ..events import AssistantChunk, Event
from ..vocab import StreamChunk
from .chunkrun import CHUNK_TYPE, TEXTS, ChunkWriter, check_chunk, row_time
from .lease import Decision, LeaseRow
from .log import Row, SessionInfo, SessionLog, StoredRow, now_ms, stale_write

__all__ = ["MemoryLog"]


class _Session:
    __slots__ = ("last", "rows")

    def __init__(self) -> None:
        self.rows: list[StoredRow] = []  # one per event, at index seq
        self.last: dict[str, int] = {}  # event type -> the highest seq of that type


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
            session.last[name] = seq
        return first

    async def _flush(self) -> None:
        return None

    async def _load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        session = self._sessions.get(session_id)
        if session is None:
            return []
        return session.rows[from_seq:to_seq]

    async def _load_latest(self, session_id: str, type: str) -> StoredRow | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        seq = session.last.get(type)
        return None if seq is None else session.rows[seq]

    async def _exists(self, session_id: str) -> bool:
        return session_id in self._sessions

    async def _list_sessions(self) -> list[SessionInfo]:
        return [
            SessionInfo(sid, len(s.rows), row_time(s.rows[0]), row_time(s.rows[-1]))
            for sid, s in self._sessions.items()
            if s.rows
        ]

    async def _close(self) -> None:
        return None

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
    """Pushes are always taken at once: the chunk event is validated and kept decoded."""

    __slots__ = ("_clock", "_memory")

    def __init__(self, log: MemoryLog, session_id: str, turn: int, step: int, attempt: int) -> None:
        super().__init__(log, session_id, turn, step, attempt)
        self._memory = log
        self._clock = None if log._clock is now_ms else log._clock  # None: `time_ns` inline

    def push(self, chunk: StreamChunk) -> int:
        log = self._memory
        if log._closed:
            log._check_open()
        sid = self.session_id
        clock = self._clock
        at = time_ns() // 1_000_000 if clock is None else clock()  # the event's time, and "now"
        if log._fences:
            log._fence_check(sid, log._lease_table.get(sid), at)
        if not (
            type(chunk) in TEXTS
            and type(chunk.index) is int  # type: ignore[union-attr]
            and type(chunk.text) is str  # type: ignore[union-attr]
            and chunk.text.isascii()  # type: ignore[union-attr]
        ):
            check_chunk(sid, self.turn, self.step, self.attempt, chunk)
        session = log._sessions.get(sid) or log._session(sid)
        rows = session.rows
        seq = len(rows)
        data = AssistantChunk(self.turn, self.step, self.attempt, chunk)
        rows.append(Event(seq, CHUNK_TYPE, at, data))
        session.last[CHUNK_TYPE] = seq
        return seq
