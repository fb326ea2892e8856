"""The session-log interface: one async API over durable, append-only, per-session event lists.

`SessionLog` does everything backend-independent exactly once — argument checks, payload
validation, msgspec JSON encoding and decoding, timestamps, closed-state checks — and delegates
storage to a handful of small abstract primitives (`_store`, `_flush`, `_load`, `_load_latest`,
`_exists`, `_list_sessions`, `_close`). Backends (`memory.py`, `sqlite.py`, `postgres.py`)
implement only those primitives. The event structs and the registry live in `events.py` and are
re-exported here. A model stream's chunks go through `chunk_writer` instead of `append`, which a
backend may take without a wait and store as runs (`chunkrun.py`); readers see the same events.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Self, TypeAlias

import msgspec

from ..errors import ErrorCode, HarnessError
from .chunkrun import ChunkWriter, LoadedRow, StoredRun, expand
from .events import (
    AbortCause,
    AssistantChunk,
    AssistantMessage,
    EpochHeader,
    Event,
    LlmRetry,
    LlmRetryStarted,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolDecision,
    ToolResultRecord,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEnd,
    TurnEndReason,
    TurnErrored,
    TurnInterrupted,
    TurnMaxTokens,
    TurnPaused,
    TurnStart,
    UserMessage,
    decode_event_data,
    encode_event_data,
    event_type_of,
    event_types,
    register_event_type,
)
from .ids import check_session_id
from .leasing import Leasing

__all__ = [
    "AbortCause",
    "AssistantChunk",
    "AssistantMessage",
    "ChunkWriter",
    "EpochHeader",
    "Event",
    "LlmRetry",
    "LlmRetryStarted",
    "RequestContext",
    "RequestHeader",
    "Row",
    "SessionInfo",
    "SessionLog",
    "StepEnd",
    "StepStart",
    "StoredRow",
    "StoredRun",
    "ToolCallRecord",
    "ToolDecision",
    "ToolResultRecord",
    "TurnAborted",
    "TurnBlocked",
    "TurnCompleted",
    "TurnEnd",
    "TurnEndReason",
    "TurnErrored",
    "TurnInterrupted",
    "TurnMaxTokens",
    "TurnPaused",
    "TurnStart",
    "UserMessage",
    "decode_event_data",
    "encode_event_data",
    "event_type_of",
    "event_types",
    "register_event_type",
    "stale_write",
]

Row: TypeAlias = tuple[str, int, bytes]
"""A row to store: `(event type, epoch-ms time, JSON payload bytes)`; the seq is assigned by `_store`."""

StoredRow: TypeAlias = LoadedRow
"""A stored row as loaded: one event's `(seq, event type, epoch-ms time, JSON payload bytes)`, a
`StoredRun` of chunk events (`chunkrun.py`), or an `Event` the backend keeps decoded."""


class SessionInfo(msgspec.Struct, frozen=True):
    """One session in a log: its id, event count, and the times of its first and last events."""

    session_id: str
    events: int
    first_time: int
    last_time: int


def now_ms() -> int:
    """The default clock of a log: epoch milliseconds."""
    return time.time_ns() // 1_000_000


def stale_write(session_id: str, expected: int, actual: int) -> HarnessError:
    """The `STALE_WRITE` refusal of a conditional append (another writer moved the session on)."""
    return HarnessError(
        f"session {session_id!r} moved on since the decision was derived: expected to append at "
        f"seq {expected}, the session now has {actual} event(s) (another writer appended "
        "meanwhile); nothing was written",
        ErrorCode.STALE_WRITE,
    )


class SessionLog(Leasing, ABC):
    """Abstract durable session log; subclasses implement only the underscore primitives.

    Public API (all async): `append`, `append_many`, `flush`, `read`, `latest`, `sessions`,
    `exists`, `close`, and the session leases of `leasing.py` (`acquire_lease`, `renew_lease`,
    `release_lease`, `hold`, `leases`). Sessions are created by their first append. Appends may be buffered
    (group commit); `flush()` is the durable barrier. Usable as an async context manager.
    """

    def __init__(self, *, clock: Callable[[], int] | None = None) -> None:
        super().__init__()
        self._clock = clock or now_ms
        self._closed = False

    # ---- public API --------------------------------------------------------------------------

    async def append(
        self,
        session_id: str,
        data: msgspec.Struct,
        *,
        barrier: bool = False,
        expect_seq: int | None = None,
    ) -> Event:
        """Validate, encode and append one event; returns it with its assigned seq.

        With `barrier=True` the event (and everything appended before it) is durable on return.
        With `expect_seq` the append is conditional (see `append_many`).
        """
        return (
            await self.append_many(session_id, (data,), barrier=barrier, expect_seq=expect_seq)
        )[0]

    async def append_many(
        self,
        session_id: str,
        datas: Iterable[msgspec.Struct],
        *,
        barrier: bool = False,
        expect_seq: int | None = None,
    ) -> list[Event]:
        """Append several events atomically with contiguous seqs (all or none); returns them.

        `expect_seq` makes the append conditional on the log state a decision was derived from:
        the first event must get exactly that seq (the session's event count when it was read),
        checked atomically with the write. If another writer appended meanwhile nothing is
        written and `HarnessError` `STALE_WRITE` is raised.
        """
        sid = check_session_id(session_id)
        self._check_open()
        items = list(datas)
        if not items:
            return []
        now = self._clock()
        rows: list[Row] = []
        for data in items:
            name, raw = encode_event_data(sid, data)
            rows.append((name, now, raw))
        if expect_seq is not None and (type(expect_seq) is not int or expect_seq < 0):
            raise HarnessError(
                f"expect_seq must be a non-negative integer, got {expect_seq!r}",
                ErrorCode.INVALID_ARGS,
            )
        first = await self._store(sid, rows, barrier=barrier, expect_seq=expect_seq)
        return [
            Event(first + i, name, now, data)
            for i, ((name, _, _), data) in enumerate(zip(rows, items, strict=True))
        ]

    def chunk_writer(self, session_id: str, turn: int, step: int, attempt: int) -> ChunkWriter:
        """A writer of the stream chunks of attempt `attempt` of step `step` of turn `turn`: each
        becomes one `assistant/chunk` event, appended without a wait where the backend can
        (`ChunkWriter.push`), else through `append` (see `chunkrun.py`)."""
        sid = check_session_id(session_id)
        self._check_open()
        return self._chunk_writer(sid, turn, step, attempt)

    def _chunk_writer(self, session_id: str, turn: int, step: int, attempt: int) -> ChunkWriter:
        """The backend's writer (this base: through `append` only)."""
        return ChunkWriter(self, session_id, turn, step, attempt)

    async def flush(self) -> None:
        """Durable barrier: every event appended (on any session) before this call is durable on return."""
        self._check_open()
        await self._flush()

    async def read(
        self,
        session_id: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        *,
        chunks: bool = True,
    ) -> list[Event]:
        """Events of `session_id` with `from_seq <= seq < to_seq` (to the end when `to_seq` is None);
        `chunks=False` leaves the `assistant/chunk` events out without decoding them (a reader
        of the conversation: messages, tool results, turn ends).

        An unknown session raises `SESSION_NOT_FOUND`; a stored payload that no longer matches its
        registered type (or an unregistered type) raises `INVALID_EVENT` naming session and seq.
        """
        sid = check_session_id(session_id)
        self._check_open()
        if from_seq < 0 or (to_seq is not None and to_seq < from_seq):
            raise HarnessError(
                f"invalid seq range [{from_seq}, {to_seq}) for session {sid!r}",
                ErrorCode.INVALID_ARGS,
            )
        if chunks:
            rows = await self._load(sid, from_seq, to_seq)
        else:
            rows = await self._load_facts(sid, from_seq, to_seq)
        if not rows and not await self._exists(sid):
            raise HarnessError(f"session {sid!r} does not exist", ErrorCode.SESSION_NOT_FOUND)
        return expand(sid, rows, from_seq, to_seq, chunks=chunks)

    async def latest(self, session_id: str, type: str) -> Event | None:
        """The event of type `type` with the highest seq, or None (also for an unknown session)."""
        sid = check_session_id(session_id)
        self._check_open()
        row = await self._load_latest(sid, type)
        if row is None:
            return None
        events = expand(sid, (row,))
        return events[-1] if events else None

    async def sessions(self) -> list[SessionInfo]:
        """Every session in the log, ordered by session id."""
        self._check_open()
        return sorted(await self._list_sessions(), key=lambda info: info.session_id)

    async def exists(self, session_id: str) -> bool:
        """True when the session has at least one event."""
        sid = check_session_id(session_id)
        self._check_open()
        return await self._exists(sid)

    async def delete(self, session_id: str) -> int:
        """Delete every event of `session_id`, for good; returns how many there were. What this
        instance buffered is made durable first. An unknown session is `SESSION_NOT_FOUND`; one
        whose lease a live writer holds is `TURN_IN_PROGRESS` (nothing deleted). The session's
        lease row stays, so its fencing tokens keep growing if the id is used again."""
        sid = check_session_id(session_id)
        self._check_open()
        return await self._delete(sid)

    async def _delete(self, session_id: str) -> int:
        raise HarnessError(
            f"session log {self.describe()} cannot delete sessions", ErrorCode.INVALID_ARGS
        )

    async def close(self) -> None:
        """Flush what is buffered and release resources; idempotent. Later calls raise `LOG_UNAVAILABLE`."""
        if self._closed:
            return
        self._closed = True
        await self._close()

    @property
    def closed(self) -> bool:
        """True once `close()` was called."""
        return self._closed

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ---- helpers -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise HarnessError(
                f"session log {self.describe()} is closed", ErrorCode.LOG_UNAVAILABLE
            )

    def describe(self) -> str:
        """A short, credential-free description of the backend for error messages."""
        return type(self).__name__

    # ---- storage primitives (the backend contract) -------------------------------------------

    @abstractmethod
    async def _store(
        self,
        session_id: str,
        rows: Sequence[Row],
        *,
        barrier: bool,
        expect_seq: int | None = None,
    ) -> int:
        """Store `rows` (non-empty) at the end of `session_id`; return the seq given to `rows[0]`.

        With `expect_seq` set, store nothing and raise `stale_write(...)` unless `rows[0]` would
        get exactly that seq (checked under the same lock/transaction as the write).

        Contract:
        - Seqs are contiguous from 0 per session: `rows[i]` gets `first_seq + i`, and `first_seq`
          is the session's current event count (0 for a new session, which this call creates).
        - Atomic: all rows are stored or none is (an exception leaves the session unchanged), and
          atomic with respect to concurrent `_store` calls on the same session — from this
          instance (several asyncio tasks; the base class does not lock) and, for shared
          backends, from other instances and processes: seqs never collide and never skip. A
          conflict that cannot be resolved raises `HarnessError` `SEQ_CONFLICT`.
        - Visibility: once `_store` returns, the rows are returned by `_load`/`_load_latest`/
          `_exists`/`_list_sessions` of this instance, even if not yet durable.
        - Durability: with `barrier=False` the rows may be buffered (group commit) until the next
          `_flush` (or an earlier backend-chosen commit); with `barrier=True` they, and every row
          stored earlier by this instance, must be durable before returning.
        - Cancellation: if the awaiting task is cancelled, the store either has no effect or
          completes, and every later call on this instance observes that outcome (the agent loop
          asks `_load_latest` whether an interrupted chunk append landed, to cite it).
        - Fencing: when the session is fenced (`self._fences`, `leasing.py`), the stored lease is
          checked under the same lock/transaction as the write (`_fence_check`): a lease taken
          over or expired raises `LEASE_LOST` and stores nothing.
        - `rows` are already validated and encoded: store the type, time and bytes verbatim.
        - Storage failures raise `HarnessError` `LOG_UNAVAILABLE` (naming the backend/path, never
          credentials); never a partial session.
        """

    @abstractmethod
    async def _flush(self) -> None:
        """Make every row stored by this instance before the call durable (fsync/commit), or raise.

        A failure raises `HarnessError` `LOG_UNAVAILABLE` and must not discard buffered rows
        silently: a later successful `_flush` still persists them, or the backend is broken and
        keeps raising. With nothing buffered it returns promptly.
        """

    @abstractmethod
    async def _load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        """Rows of `session_id` holding the events `from_seq <= seq < to_seq` (to the end if
        None), ascending; a run (`StoredRun`) may start before `from_seq` or end past `to_seq`
        (the base class clips it). Includes rows buffered but not yet durable. An unknown session returns `[]` (the base
        class then asks `_exists` to tell "unknown" from "empty range").
        """

    async def _load_facts(
        self, session_id: str, from_seq: int, to_seq: int | None
    ) -> list[StoredRow]:
        """`_load`, where the `assistant/chunk` events may be left out (the caller drops them):
        a backend that can skip them cheaply overrides this."""
        return await self._load(session_id, from_seq, to_seq)

    @abstractmethod
    async def _load_latest(self, session_id: str, type: str) -> StoredRow | None:
        """The row of `session_id` holding the event of type `type` with the highest seq (a run's
        last event), or None."""

    @abstractmethod
    async def _exists(self, session_id: str) -> bool:
        """True when `session_id` has at least one stored row (buffered rows count)."""

    @abstractmethod
    async def _list_sessions(self) -> list[SessionInfo]:
        """One `SessionInfo` per session with at least one row (any order; the base sorts)."""

    @abstractmethod
    async def _close(self) -> None:
        """Flush buffered rows and release connections/files; called at most once."""
