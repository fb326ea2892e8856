"""Incremental Server-Sent Events framing: response-body bytes in, dispatched events out.

The decoder follows the WHATWG event-stream rules that matter to model APIs: UTF-8 decoded with
invalid bytes replaced by U+FFFD (a code point may be split across reads), one leading BOM
stripped, lines ending in CRLF, LF or a lone CR (a CR at the end of a read is held until the next
read decides), comments ignored, multi-line ``data`` joined with ``\\n``, an event dispatched on a
blank line only when it has at least one ``data`` line. It never buffers more than one unfinished
line plus the pending event; the common LF-only read costs one ``bytes.split`` on the blank lines,
each one-line ``data: `` event one slice and one decode, and each ``event: <name>`` + ``data: ``
event (Responses, Anthropic) two slices, one decode and a lookup of its (cached) name.
A line, or a pending event's data, larger than `MAX_EVENT_BYTES` (or the decoder's own
`max_event_bytes`) fails with `LlmError` ``MALFORMED_RESPONSE``: every ``data`` line counts, with
or without a colon, each adding its bytes plus the joining newline, so a body that never frames an
event is not held in memory. The pending data of a multi-line event is accumulated in one
`bytearray` (its memory is its counted size, not one object per line); an unfinished line spread
over many reads is kept as a list of parts and joined once, so buffering it costs linear time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import msgspec

from ..errors import ErrorCode, LlmError

__all__ = ["MAX_EVENT_BYTES", "SseDecoder", "SseEvent"]

_BOM: Final = b"\xef\xbb\xbf"
MAX_EVENT_BYTES: Final = 16 * 1024 * 1024
"""The default cap on one line and on a pending event's data (16 MiB): far above any model event."""


def _too_large(limit: int) -> LlmError:
    return LlmError(
        f"SSE event exceeds {limit} bytes without being dispatched",
        ErrorCode.MALFORMED_RESPONSE,
    )


class SseEvent(msgspec.Struct, frozen=True, gc=False):
    """One dispatched event: its ``event`` type (None when unnamed), ``data`` and last event ``id``."""

    event: str | None
    data: str
    id: str | None = None


def _text(raw: bytes | bytearray) -> str:
    return raw.decode("utf-8", "replace")


_NAMES: dict[bytes, str] = {}
"""Event names seen, decoded once (a protocol has a few dozen; bounded below)."""


def _name(raw: bytes) -> str | None:
    name = _NAMES.get(raw)
    if name is None:
        if not raw:
            return None
        if len(_NAMES) >= 512:
            _NAMES.clear()
        name = _NAMES[raw] = _text(raw)
    return name


class SseDecoder:
    """Turns response-body bytes, fed in reads of any size, into `SseEvent`s in arrival order.

    `on_comment`, when given, receives each comment's text (the rest of a ``:`` line minus one
    optional leading space), e.g. to observe ``: keep-alive`` pulses; comments are never events.
    `max_event_bytes` caps one line and one pending event's data (default `MAX_EVENT_BYTES`).
    """

    __slots__ = ("_bom", "_data", "_event", "_held", "_id", "_limit", "_on_comment", "_parts")

    def __init__(
        self,
        *,
        on_comment: Callable[[str], None] | None = None,
        max_event_bytes: int = MAX_EVENT_BYTES,
    ) -> None:
        if type(max_event_bytes) is not int or max_event_bytes < 1:
            raise ValueError("max_event_bytes must be a positive integer")
        self._parts: list[bytes] = []  # the unfinished line, as the reads that brought it
        self._held = 0
        self._bom = True  # a leading BOM may still arrive
        # The pending event's data: the first line as is (the common one-line event costs no
        # copy), a bytearray once a second line joins it.
        self._data: bytes | bytearray | None = None
        self._event: bytes | None = None
        self._id: str | None = None
        self._on_comment = on_comment
        self._limit = max_event_bytes

    @property
    def buffered_bytes(self) -> int:
        """Bytes held between reads: the unfinished line plus the pending event's data."""
        data = self._data
        return self._held + (0 if data is None else len(data))

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Consume one read of body bytes and return the events it completed (possibly none)."""
        parts = self._parts
        if (
            not self._bom
            and b"\n" not in chunk
            and b"\r" not in chunk
            and not (parts and parts[-1].endswith(b"\r"))
        ):
            self._hold(chunk)  # still inside one line: no re-concatenation per read
            return []
        buf = (
            (parts[0] + chunk if len(parts) == 1 else b"".join((*parts, chunk))) if parts else chunk
        )
        parts.clear()
        self._held = 0
        if self._bom:
            if len(buf) < 3 and _BOM.startswith(buf):
                self._hold(buf)
                return []
            self._bom = False
            if buf.startswith(_BOM):
                buf = buf[3:]
        if b"\r" in buf:
            held = buf.endswith(b"\r")
            if held:
                buf = buf[:-1]
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if held:
                buf += b"\r"
        if len(buf) > self._limit:
            return self._measured(buf)
        # Cut on the blank lines first: each block before one is an event's lines followed by
        # its dispatch, and the common block (one `data: ` line, nothing pending) becomes its
        # event without being split into lines.
        blocks = buf.split(b"\n\n")
        rest = blocks.pop()
        out: list[SseEvent] = []
        for block in blocks:
            if self._data is None and self._event is None:
                if block[:6] == b"data: ":
                    if block.find(b"\n") < 0:
                        out.append(SseEvent(None, block[6:].decode("utf-8", "replace"), self._id))
                        continue
                elif block[:7] == b"event: ":  # `event: <name>` then one `data: ` line
                    nl = block.find(b"\n")
                    if (
                        nl > 0
                        and block.startswith(b"data: ", nl + 1)
                        and block.find(b"\n", nl + 1) < 0
                    ):
                        data = block[nl + 7 :].decode("utf-8", "replace")
                        out.append(SseEvent(_name(block[7:nl]), data, self._id))
                        continue
            if block or self._data is not None:  # (an empty block: two blank lines)
                lines = block.split(b"\n")
                lines.append(b"")
                out += self._lines(lines)
        if rest:
            lines = rest.split(b"\n")
            tail = lines.pop()
            if tail:
                self._hold(tail)
            if lines:
                out += self._lines(lines)
        return out

    def _measured(self, buf: bytes) -> list[SseEvent]:
        """`feed`'s line path for a read longer than the cap: it may hold a complete line longer
        than the cap (lines are measured only then)."""
        lines = buf.split(b"\n")
        tail = lines.pop()
        if lines and max(map(len, lines)) > self._limit:
            self._reset()
            raise _too_large(self._limit)
        if tail:
            self._hold(tail)
        if not lines:
            return []
        return self._lines(lines)

    def feed_pieces(self, pieces: list[bytes]) -> list[SseEvent]:
        """`feed` of the pieces of one read in order (a chunked body's HTTP chunks): a piece that
        is one whole ``data: `` event (`data: ...\\n\\n`, no other line break), or one
        ``event: <name>`` line and one ``data: `` line, arriving with nothing pending becomes its
        event without any line splitting; the others are fed."""
        out: list[SseEvent] = []
        idle = self._idle()  # nothing pending: only a piece that is not one event changes it
        limit = self._limit
        names = _NAMES
        for piece in pieces:
            if idle and piece[-2:] == b"\n\n" and piece.find(b"\r") < 0 and len(piece) <= limit:
                if piece[:6] == b"data: ":
                    if piece.find(b"\n", 6, -2) < 0:
                        out.append(SseEvent(None, piece[6:-2].decode("utf-8", "replace"), self._id))
                        continue
                elif piece[:7] == b"event: ":  # `event: <name>` then one `data: ` line
                    nl = piece.find(b"\n", 7)
                    if piece.startswith(b"data: ", nl + 1) and piece.find(b"\n", nl + 1, -2) < 0:
                        raw = piece[7:nl]
                        name = names.get(raw) or _name(raw)  # known names cost no call
                        data = piece[nl + 7 : -2].decode("utf-8", "replace")
                        out.append(SseEvent(name, data, self._id))
                        continue
            out += self.feed(piece)
            idle = self._idle()
        return out

    def _idle(self) -> bool:
        """Nothing pending: no unfinished line, event data or event name, the BOM settled."""
        return self._data is None and self._event is None and not self._parts and not self._bom

    def _hold(self, data: bytes) -> None:
        if data:
            self._parts.append(data)
            self._held += len(data)
            if self._held > self._limit:
                self._reset()
                raise _too_large(self._limit)

    def _reset(self) -> None:
        """Drop everything buffered (after a cap was exceeded)."""
        self._parts.clear()
        self._held = 0
        self._data = None
        self._event = None

    def close(self) -> list[SseEvent]:
        """Signal end of input: a held CR still ends its line; an unterminated event is dropped."""
        buf = b"".join(self._parts)
        self._parts.clear()
        self._held = 0
        self._bom = False
        out: list[SseEvent] = []
        if buf.endswith(b"\r"):
            out = self._lines([buf[:-1]])
        self._data = None
        self._event = None
        return out

    def _lines(self, lines: list[bytes]) -> list[SseEvent]:
        out: list[SseEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data is not None:
                    ev = self._event
                    out.append(SseEvent(None if ev is None else _text(ev), _text(data), self._id))
                    data = None
                    self._event = None
                continue
            if line.startswith(b"data:"):
                value = line[6:] if line[5:6] == b" " else line[5:]
            elif line[0] == 0x3A:  # ":" comment
                if self._on_comment is not None:
                    text = line[2:] if line[1:2] == b" " else line[1:]
                    self._on_comment(_text(text))
                continue
            else:
                name, colon, value = line.partition(b":")
                if colon and value[:1] == b" ":
                    value = value[1:]
                if name != b"data":  # "data" without a colon is an empty data line (below)
                    if name == b"event":
                        self._event = value or None
                    elif name == b"id" and b"\x00" not in value:
                        self._id = _text(value)
                    # "retry" and unknown fields are ignored.
                    continue
            # One data line, however spelled: the only place pending data grows, and counted.
            if data is None:
                data = value  # a single line is within the cap (lines are capped in `feed`)
                continue
            if type(data) is bytes:
                data = bytearray(data)
            data += b"\n"
            data += value
            if len(data) > self._limit:
                self._reset()
                raise _too_large(self._limit)
        self._data = data
        return out
