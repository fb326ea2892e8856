"""The session export file: the JSONL format `modelwire sessions export` writes and the replay
adapter reads (record once against a live provider, replay forever).

File format (UTF-8, one JSON object per line, `\\n`-terminated)::

    {"format":"modelwire-session","version":1,"session_id":"s1","created_at":1700000000000,"seed_length":0,"events":42}
    {"seq":0,"type":"turn/start","time":1700000000000,"data":{"turn":1}}
    {"seq":1,"type":"step/start","time":1700000000001,"data":{"turn":1,"step":1}}
    ...

The header line is written by `write_session_file` and optional on reading (a file may start with its
first event). Loading is strict: every line must be a JSON event, seqs must run 0, 1, 2, ... with
none missing, every type must be registered and its `data` must match the type's struct, and the
header's event count must match. Any violation — including a truncated last line — raises
`HarnessError` `INVALID_REPLAY_FILE` naming the file and the line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, Final

import msgspec

from ...errors import ErrorCode, HarnessError
from ...events import Event, decode_event_data
from ...vocab.json import MAX_JSON_DEPTH, json_nesting_exceeds

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "MAX_NESTING_DEPTH",
    "SessionFile",
    "SessionFileHeader",
    "encode_session_file",
    "load_session_file",
    "write_session_file",
]

EXPORT_FORMAT: Final = "modelwire-session"
"""The `format` value of an export's header line."""

EXPORT_VERSION: Final = 1
"""The `version` of the export format this module writes and reads."""

MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""The longest line `load_session_file` reads (64 MiB): one event, far above any recorded one (an
SSE event is capped at 16 MiB, and a whole message fits a model's context, a few MiB at most)."""

MAX_FILE_BYTES: Final = 1024 * 1024 * 1024
"""The largest export `load_session_file` reads (1 GiB); every event of it is held in memory."""

MAX_NESTING_DEPTH: Final = MAX_JSON_DEPTH
"""The deepest JSON nesting of one line (`vocab.json.MAX_JSON_DEPTH`, 256 levels); deeper lines are
refused before the recursive decoder could exhaust the stack."""


class SessionFileHeader(msgspec.Struct, frozen=True, kw_only=True):
    """The first line of an export: the recorded session id, its first event time and event count.

    `seed_length` is the number of leading events inherited from a parent session (0 here); a
    replay derives calls only from events at or after it.
    """

    format: str
    version: int
    session_id: str
    created_at: int
    events: int
    seed_length: int = 0


class SessionFile(msgspec.Struct, frozen=True):
    """A loaded export: its path, its header (None when the file has none) and its events.

    `lines[i]` is the 1-based file line of `events[i]` (for errors found after loading).
    """

    path: str
    header: SessionFileHeader | None
    events: tuple[Event, ...]
    lines: tuple[int, ...] = ()


class _EventLine(msgspec.Struct, frozen=True):
    seq: int
    type: str
    time: int
    data: msgspec.Raw


_HEADER_DECODER: Final = msgspec.json.Decoder(SessionFileHeader)
_LINE_DECODER: Final = msgspec.json.Decoder(_EventLine)
_ENCODER: Final = msgspec.json.Encoder()


_MAX_DETAIL: Final = 300
"""Error details are cut to this many characters: a message never carries the file's content."""


def _bad(path: str, line: int | None, detail: str) -> HarnessError:
    where = f"{path}: line {line}" if line is not None else path
    if len(detail) > _MAX_DETAIL:
        detail = f"{detail[:_MAX_DETAIL]}…"
    return HarnessError(f"invalid session file {where}: {detail}", ErrorCode.INVALID_REPLAY_FILE)


def load_session_file(
    path: str | os.PathLike[str],
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_depth: int = MAX_NESTING_DEPTH,
) -> SessionFile:
    """Read and validate an export written by `export_session` (blocking file I/O).

    A missing file, a malformed or truncated line, a missing or out-of-order seq, an unknown event
    type, a payload that does not match its type, or a header count that disagrees raises
    `INVALID_REPLAY_FILE` naming the file and line; so does a file or line over its size cap or a
    line nested deeper than `max_depth` (checked before the line reaches the JSON decoder). The
    file is read line by line, never more than one line of `max_line_bytes` at a time; an error
    never quotes the file's content.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > max_file_bytes:
                raise _bad(name, None, f"is {size} bytes, over the {max_file_bytes}-byte limit")
            return _load(name, fh, max_line_bytes, max_file_bytes, max_depth)
    except OSError as exc:
        raise _bad(name, None, f"cannot read the file ({exc.strerror or exc})") from exc
    except MemoryError:
        raise _bad(name, None, "the file is too large to load (out of memory)") from None


def _load(name: str, fh: BinaryIO, max_line: int, max_file: int, max_depth: int) -> SessionFile:
    header: SessionFileHeader | None = None
    events: list[Event] = []
    numbers: list[int] = []
    session_label = "<import>"
    number = 0
    total = 0
    readline = fh.readline
    while line := readline(max_line + 1):
        number += 1
        total += len(line)
        if total > max_file:
            raise _bad(name, number, f"the file grows past the {max_file}-byte limit")
        truncated = not line.endswith(b"\n")  # only the last line can lack its newline
        if truncated and len(line) > max_line:
            raise _bad(name, number, f"the line is longer than the {max_line}-byte limit")
        if line.isspace():
            continue
        if json_nesting_exceeds(line, max_depth):
            raise _bad(name, number, f"the line nests JSON deeper than {max_depth} levels")
        try:
            if header is None and not events and _is_header(line):
                header = _parse_header(name, number, line, truncated)
                session_label = header.session_id or session_label
                continue
            event = _parse_event(name, number, line, truncated, session_label, len(events))
        except (RecursionError, MemoryError):
            # Backstops (nesting is checked above, line size is capped): classified, never raw.
            raise _bad(
                name, number, "the line is too large or too deeply nested to decode"
            ) from None
        events.append(event)
        numbers.append(number)
    if not events:
        raise _bad(name, None, "contains no events")
    if header is not None and header.events != len(events):
        raise _bad(
            name,
            number,
            f"the header records {header.events} event(s) but the file holds {len(events)} "
            "(truncated file?)",
        )
    return SessionFile(name, header, tuple(events), tuple(numbers))


def _parse_event(
    path: str, number: int, line: bytes, truncated: bool, session_label: str, expected: int
) -> Event:
    try:
        entry = _LINE_DECODER.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        if truncated:
            raise _bad(path, number, f"truncated last line ({exc})") from exc
        raise _bad(path, number, f"malformed event line ({exc})") from exc
    if entry.seq != expected:
        detail = (
            f"missing seq {expected} (found seq {entry.seq})"
            if entry.seq > expected
            else f"seq {entry.seq} repeats or goes backwards (expected {expected})"
        )
        raise _bad(path, number, detail)
    try:
        data = decode_event_data(session_label, entry.seq, entry.type, bytes(entry.data))
    except HarnessError as exc:
        detail = exc.message
        if truncated:
            detail = f"truncated last line ({detail})"
        raise _bad(path, number, detail) from exc
    return Event(entry.seq, entry.type, entry.time, data)


def _is_header(line: bytes) -> bool:
    """True for a JSON object with a `format` key and no `seq` (the export's first line)."""
    try:
        value = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return False
    return isinstance(value, dict) and "format" in value and "seq" not in value


def _parse_header(path: str, number: int, line: bytes, truncated: bool) -> SessionFileHeader:
    try:
        header = _HEADER_DECODER.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        kind = "truncated last line" if truncated else "malformed header line"
        raise _bad(path, number, f"{kind} ({exc})") from exc
    if header.format != EXPORT_FORMAT or header.version != EXPORT_VERSION:
        raise _bad(
            path,
            number,
            f"unsupported format {header.format!r} version {header.version} "
            f"(expected {EXPORT_FORMAT!r} version {EXPORT_VERSION})",
        )
    return header


def encode_session_file(session_id: str, events: Sequence[Event]) -> bytes:
    """The export of `events` (one session, in seq order): the header line, then one line each."""
    header = SessionFileHeader(
        format=EXPORT_FORMAT,
        version=EXPORT_VERSION,
        session_id=session_id,
        created_at=events[0].time if events else 0,
        events=len(events),
    )
    parts = [_ENCODER.encode(header)]
    for event in events:
        raw = msgspec.Raw(_ENCODER.encode(event.data))
        parts.append(_ENCODER.encode(_EventLine(event.seq, event.type, event.time, raw)))
    parts.append(b"")
    return b"\n".join(parts)


def write_session_file(
    path: str | os.PathLike[str], session_id: str, events: Sequence[Event]
) -> int:
    """Write the export of `events` to `path` atomically (a temporary sibling, fsynced, then
    renamed: `path` is either the old file or the complete export); returns the event count."""
    _write_atomically(os.fspath(path), encode_session_file(session_id, events))
    return len(events)


def _write_atomically(path: str, blob: bytes) -> None:
    target = Path(path)
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with temp.open("wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, target)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise HarnessError(
            f"cannot write session export {path}: {exc.strerror or exc}", ErrorCode.INVALID_ARGS
        ) from exc
