"""The backend contract of group commit: the transaction hooks and queries a durable backend
(SQLite, PostgreSQL) implements for `GroupCommitLog` (`groupcommit.py`), which calls them one at
a time, never concurrently, and owns everything else."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from ..errors import HarnessError
from .log import SessionInfo, SessionLog, StoredRow
from .pending import PendingRow

__all__ = ["GroupCommitHooks"]


class GroupCommitHooks(SessionLog):
    """The hooks of a group-commit backend (see the module docstring)."""

    @abstractmethod
    async def _tx_open(self, session_ids: Sequence[str]) -> dict[str, int]:
        """Begin a write transaction, take the lock of `session_ids[0]` (waiting for it), try
        those of the others without waiting, and return the next seq (the end of the last stored
        row; 0 for a new session) of every session it locked, read under its lock."""

    @abstractmethod
    async def _tx_extend(self, session_id: str) -> int | None:
        """Try to lock one more session in the open transaction without waiting: its next seq,
        or None when another writer holds it."""

    @abstractmethod
    async def _tx_write(self, rows: Sequence[PendingRow]) -> None:
        """Insert `rows` (and maintain the sessions table) inside the open transaction; a row of
        `count > 1` is a run (stored with its count)."""

    @abstractmethod
    async def _tx_finish(self, rows: Sequence[PendingRow], *, durable: bool) -> None:
        """Write `rows` (possibly none) as `_tx_write` does, then commit; `durable=False` may
        leave the commit in OS or server buffers."""

    @abstractmethod
    async def _tx_rollback(self) -> None:
        """Roll the open transaction back; must not raise."""

    @abstractmethod
    async def _tx_sync(self) -> None:
        """Make every earlier relaxed commit of this instance durable (no transaction is open)."""

    @abstractmethod
    async def _q_load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        """Query the rows holding a seq range of a session (from the one holding `from_seq`)."""

    @abstractmethod
    async def _q_latest(self, session_id: str, type: str) -> StoredRow | None:
        """Query the highest-seq row of a type."""

    @abstractmethod
    async def _q_exists(self, session_id: str) -> bool:
        """Query whether a session has rows."""

    @abstractmethod
    async def _q_sessions(self) -> list[SessionInfo]:
        """Query the sessions table."""

    @abstractmethod
    async def _release(self) -> None:
        """Close connections and threads; must not raise."""

    @abstractmethod
    def _storage_error(self, exc: BaseException, action: str) -> HarnessError:
        """Translate a driver exception raised while doing `action` into a `HarnessError`."""
