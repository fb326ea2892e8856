"""The in-memory session log: process-local, nothing survives the process (tests, scratch runs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .log import Row, SessionInfo, SessionLog, StoredRow, stale_write

__all__ = ["MemoryLog"]


class _Session:
    __slots__ = ("by_type", "rows")

    def __init__(self) -> None:
        self.rows: list[StoredRow] = []
        self.by_type: dict[str, list[int]] = {}


class MemoryLog(SessionLog):
    """A `SessionLog` kept in process memory; `flush()` is a no-op barrier (nothing is durable)."""

    def __init__(self, *, clock: Callable[[], int] | None = None) -> None:
        super().__init__(clock=clock)
        self._sessions: dict[str, _Session] = {}

    def describe(self) -> str:
        """`memory:`."""
        return "memory:"

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
        if session is None:
            session = self._sessions[session_id] = _Session()
        # No await between reading the count and appending: atomic within the event loop.
        for offset, (name, at, raw) in enumerate(rows):
            seq = first + offset
            session.rows.append((seq, name, at, raw))
            session.by_type.setdefault(name, []).append(seq)
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
        seqs = session.by_type.get(type)
        return session.rows[seqs[-1]] if seqs else None

    async def _exists(self, session_id: str) -> bool:
        return session_id in self._sessions

    async def _list_sessions(self) -> list[SessionInfo]:
        return [
            SessionInfo(sid, len(s.rows), s.rows[0][2], s.rows[-1][2])
            for sid, s in self._sessions.items()
        ]

    async def _close(self) -> None:
        return None
