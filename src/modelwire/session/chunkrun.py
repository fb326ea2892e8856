"""Chunk runs: one attempt's stream chunks appended without a wait and stored as one row.

The agent appends every stream chunk of an attempt as an `assistant/chunk` event. Going through
`SessionLog.append` for each would build an event object only to encode it, encode and decode
it once per chunk, check the session id and await the log per chunk. A `ChunkWriter`
(`SessionLog.chunk_writer`) takes the chunks of one attempt instead: `push(chunk)` validates the
chunk, hands out its seq and buffers it synchronously where the backend can (memory always; the
group-commit backends while their open transaction holds the session's lock), and answers -1
where it cannot, the caller then awaiting `append(chunk)` (the ordinary path) once.

Durable backends store the chunks buffered between two writes of a transaction as one row: a
*run* of `count` events with seqs `seq .. seq + count - 1`, whose payload is one `ChunkRun`
(turn, step and attempt once, the time offsets, the chunks), encoded in one call. The reading
side never sees runs: `expand` turns stored rows back into one `Event` per chunk with its own
seq and time, exactly as if each had been appended alone.

Validation is the same rule as `append`'s (the payload must decode as its registered type): the
hot chunk types (text, reasoning and tool-argument deltas) are checked field by field, which is
exactly what their decoder checks (an `int`, a `str` that UTF-8 can encode); anything else goes
through the full encode-and-decode check.

`Event` and `AssistantChunk` are `gc=False` structs (as the stream chunks already were): an event
refers only to its frozen payload and a chunk event only to numbers and its chunk, never back,
so neither can be part of a reference cycle, and a log holding many costs the cyclic GC nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final, TypeAlias

import msgspec

from ..errors import ErrorCode, HarnessError
from ..events import AssistantChunk, Event, decode_event_data, encode_event_data
from ..vocab import ReasoningDelta, StreamChunk, TextDelta, ToolCallDelta

if TYPE_CHECKING:
    from .log import SessionLog

__all__ = [
    "CHUNK_TYPE",
    "ChunkRun",
    "ChunkWriter",
    "LoadedRow",
    "PushedRun",
    "StoredRun",
    "check_chunk",
    "contiguous",
    "decode_run",
    "encode_run",
    "expand",
    "row_span",
    "row_time",
]

CHUNK_TYPE: Final = "assistant/chunk"


Group: TypeAlias = tuple[int, int, list[str]]
"""Consecutive text (kind 0) or reasoning (kind 1) deltas of one block: `(kind, index, texts)`."""
_KINDS: Final = (TextDelta, ReasoningDelta)


class ChunkRun(msgspec.Struct, frozen=True, array_like=True):
    """The stored payload of a run of chunk events of one attempt.

    `times` holds each event's time minus the row's time (ms), or is empty when every event has
    the row's time. `parts` are the chunks in order: a `Group` stands for as many text or
    reasoning deltas as it has texts (a fifth of the bytes of one object per delta), any other
    chunk is stored as itself.
    """

    turn: int
    step: int
    attempt: int
    times: list[int]
    parts: list[Group | StreamChunk]


class StoredRun(msgspec.Struct, frozen=True):
    """A loaded run row: `count` `assistant/chunk` events from `seq`, the first at `time`."""

    seq: int
    count: int
    time: int
    data: bytes


class PushedRun(msgspec.Struct, frozen=True):
    """Chunk events this log instance pushed and still holds as chunks (a snapshot of a
    `pending.PendingRun`): seqs `seq .. seq + len(chunks) - 1`, `times[i]` the time of
    `chunks[i]`. Built into events only by a read that wants the chunks."""

    seq: int
    turn: int
    step: int
    attempt: int
    times: list[int]
    chunks: list[StreamChunk]

    def events(self, from_seq: int, to_seq: int | None) -> list[Event]:
        """The events of this run with `from_seq <= seq < to_seq`."""
        seq, turn, step, attempt = self.seq, self.turn, self.step, self.attempt
        lo = max(from_seq - seq, 0)
        hi = len(self.chunks) if to_seq is None else min(to_seq - seq, len(self.chunks))
        times, chunks = self.times, self.chunks
        return [
            Event(seq + i, CHUNK_TYPE, times[i], AssistantChunk(turn, step, attempt, chunks[i]))
            for i in range(lo, hi)
        ]


LoadedRow: TypeAlias = tuple[int, str, int, bytes] | StoredRun | Event | PushedRun
"""What a backend's loader returns per row: one event's `(seq, type, time, payload)`, a run of
chunk events (stored, or still held as pushed), or an event the backend keeps decoded."""

_ENCODER = msgspec.json.Encoder()
_RUN_DECODER = msgspec.json.Decoder(ChunkRun)


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _text_ok(text: object) -> bool:
    return type(text) is str and (text.isascii() or _utf8(text))


def _chunk_ok(chunk: object) -> bool:
    """True when `chunk` is a text, reasoning or tool-argument delta with well-typed fields."""
    kind = type(chunk)
    if kind is TextDelta or kind is ReasoningDelta:
        return type(chunk.index) is int and _text_ok(chunk.text)  # type: ignore[attr-defined]
    if kind is ToolCallDelta:
        assert isinstance(chunk, ToolCallDelta)
        return (
            type(chunk.index) is int
            and _text_ok(chunk.arguments_delta)
            and (chunk.id is None or _text_ok(chunk.id))
            and (chunk.name is None or _text_ok(chunk.name))
        )
    return False


def check_chunk(session_id: str, turn: int, step: int, attempt: int, chunk: StreamChunk) -> None:
    """Refuse (`INVALID_EVENT`, as `append` does) a chunk event that would not decode back.

    Writers inline the commonest case first (a text or reasoning delta of ASCII text, `TEXTS`)
    and call this for the rest."""
    if not _chunk_ok(chunk):
        encode_event_data(session_id, AssistantChunk(turn, step, attempt, chunk))


TEXTS: Final = (TextDelta, ReasoningDelta)
"""The chunk types a writer checks inline: `type(c) in TEXTS and type(c.index) is int and
type(c.text) is str and c.text.isascii()` is exactly what their decoder accepts, ASCII-only."""


def encode_run(
    turn: int, step: int, attempt: int, times: Sequence[int], chunks: list[StreamChunk]
) -> bytes:
    """The payload of a run row whose time is `times[0]`."""
    first = times[0]
    offsets = [] if times[-1] == first else [t - first for t in times]
    parts: list[Group | StreamChunk] = []
    kind, index, texts = -1, -1, []
    for c in chunks:
        t = type(c)
        k = 0 if t is TextDelta else 1 if t is ReasoningDelta else -1
        if k < 0:
            parts.append(c)
            kind = -1
        elif k == kind and c.index == index:  # type: ignore[union-attr]
            texts.append(c.text)  # type: ignore[union-attr]
        else:
            kind, index, texts = k, c.index, [c.text]  # type: ignore[union-attr]
            parts.append((k, index, texts))
    return _ENCODER.encode(ChunkRun(turn, step, attempt, offsets, parts))


def decode_run(session_id: str, run: StoredRun) -> list[Event]:
    """One event per chunk of a stored run; a payload that does not decode is `INVALID_EVENT`."""
    try:
        body = _RUN_DECODER.decode(run.data)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise HarnessError(
            f"invalid event in session {session_id!r} (seqs {run.seq}..{run.seq + run.count - 1},"
            f" type {CHUNK_TYPE!r}): {exc}",
            ErrorCode.INVALID_EVENT,
            cause=exc,
        ) from exc
    chunks: list[StreamChunk] = []
    for part in body.parts:
        if type(part) is tuple:
            kind, index, texts = part
            if not 0 <= kind <= 1:
                raise HarnessError(
                    f"invalid event in session {session_id!r} (seq {run.seq}): unknown chunk "
                    f"group kind {kind}",
                    ErrorCode.INVALID_EVENT,
                )
            made = _KINDS[kind]
            chunks.extend([made(index, text) for text in texts])
        else:
            chunks.append(part)  # type: ignore[arg-type]
    times = body.times
    if len(chunks) != run.count or (times and len(times) != run.count):
        raise HarnessError(
            f"invalid event in session {session_id!r} (seq {run.seq}): a run of {run.count} "
            f"chunk events holds {len(chunks)} chunk(s)",
            ErrorCode.INVALID_EVENT,
        )
    turn, step, attempt, at, seq = body.turn, body.step, body.attempt, run.time, run.seq
    if not times:
        return [
            Event(seq + i, CHUNK_TYPE, at, AssistantChunk(turn, step, attempt, c))
            for i, c in enumerate(chunks)
        ]
    return [
        Event(seq + i, CHUNK_TYPE, at + dt, AssistantChunk(turn, step, attempt, c))
        for i, (dt, c) in enumerate(zip(times, chunks, strict=True))
    ]


def row_span(row: LoadedRow) -> tuple[int, int]:
    """`(first seq, event count)` of a loaded row."""
    if isinstance(row, StoredRun):
        return row.seq, row.count
    if isinstance(row, Event):
        return row.seq, 1
    if isinstance(row, PushedRun):
        return row.seq, len(row.chunks)
    return row[0], 1


def row_time(row: LoadedRow) -> int:
    """The epoch-ms time of a loaded row's first event."""
    if isinstance(row, (StoredRun, Event)):
        return row.time
    if isinstance(row, PushedRun):
        return row.times[0]
    return row[2]


def contiguous(
    rows: list[LoadedRow], from_seq: int, where: str, session_id: str
) -> list[LoadedRow]:
    """`rows` (ascending) from the one holding `from_seq`, checked gap-free; a row before
    `from_seq` (what a query for the row holding it returns past a session's end) is dropped.
    A gap is `LOG_CORRUPT` naming the session and the missing seq."""
    if rows and sum(row_span(rows[0])) <= from_seq:
        rows = rows[1:]
    expected = from_seq
    for row in rows:
        first, count = row_span(row)
        if first > expected or first + count <= expected:
            raise HarnessError(
                f"session log {where}: session {session_id!r} is missing seq {expected} (next "
                f"stored seq is {first})",
                ErrorCode.LOG_CORRUPT,
            )
        expected = first + count
    return rows


def expand(
    session_id: str,
    rows: Iterable[LoadedRow],
    from_seq: int = 0,
    to_seq: int | None = None,
    *,
    chunks: bool = True,
) -> list[Event]:
    """The events of `rows` with `from_seq <= seq < to_seq`, one per stored event, in order;
    without the `assistant/chunk` events (never decoded) when `chunks` is False."""
    if not chunks:
        return _expand_facts(session_id, rows)
    out: list[Event] = []
    for row in rows:
        if isinstance(row, Event):  # the memory log's (checked first: the common case there)
            out.append(row)
        elif isinstance(row, PushedRun):
            out.extend(row.events(from_seq, to_seq))
        elif isinstance(row, StoredRun):
            events = decode_run(session_id, row)
            end = row.seq + row.count if to_seq is None else to_seq
            if row.seq < from_seq or row.seq + row.count > end:
                events = [e for e in events if from_seq <= e.seq < end]
            out.extend(events)
        else:
            seq, name, at, raw = row
            out.append(Event(seq, name, at, decode_event_data(session_id, seq, name, raw)))
    return out


def _expand_facts(session_id: str, rows: Iterable[LoadedRow]) -> list[Event]:
    out: list[Event] = []
    for row in rows:
        if isinstance(row, Event):
            if row.type != CHUNK_TYPE:
                out.append(row)
        elif not isinstance(row, (StoredRun, PushedRun)) and row[1] != CHUNK_TYPE:
            seq, name, at, raw = row
            out.append(Event(seq, name, at, decode_event_data(session_id, seq, name, raw)))
    return out


class ChunkWriter:
    """Appends the stream chunks of one attempt as `assistant/chunk` events of one session.

    This base works on any `SessionLog` through `append` (`push` always answers -1); backends
    that can buffer without a wait return their own writer from `SessionLog.chunk_writer`.
    """

    __slots__ = ("attempt", "log", "session_id", "step", "turn")

    def __init__(
        self, log: SessionLog, session_id: str, turn: int, step: int, attempt: int
    ) -> None:
        self.log = log
        self.session_id = session_id
        self.turn, self.step, self.attempt = turn, step, attempt

    def push(self, chunk: StreamChunk) -> int:
        """Append `chunk` without waiting if the log can: its seq (visible to reads at once,
        durable at the next flush); -1 when the log must do I/O first (then `await append`).
        A chunk that would not decode back raises `INVALID_EVENT`; a closed log raises."""
        return -1

    def data(self, chunk: StreamChunk) -> AssistantChunk:
        """The event payload of `chunk`."""
        return AssistantChunk(self.turn, self.step, self.attempt, chunk)

    async def append(self, chunk: StreamChunk) -> Event:
        """Append `chunk` through `SessionLog.append` (may wait for the log)."""
        return await self.log.append(self.session_id, self.data(chunk))
