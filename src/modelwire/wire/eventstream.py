"""The AWS event-stream framing (``application/vnd.amazon.eventstream``): body bytes → events.

A message is ``total_len(4) headers_len(4) prelude_crc(4) headers payload message_crc(4)``,
big-endian, both CRCs CRC32 (`zlib.crc32`): the prelude CRC covers the first 8 bytes, the message
CRC everything before it. A header is ``name_len(1) name type(1) value``; the value's size follows
from its type (bool true/false carry none; byte, short, int, long, timestamp are 1/2/4/8/8 bytes;
byte arrays and strings a 2-byte length; uuid 16 bytes).

`EventStreamDecoder` has the `Framer` shape the stream pump drives (`feed` / `close`), and yields
every message as an `SseEvent` so the protocol translators stay event-based: ``:message-type``
``event`` → ``SseEvent(<:event-type>, <payload>)``; ``exception`` →
``SseEvent("exception:" + <:exception-type>, <payload>)``; ``error`` →
``SseEvent("error:" + <:error-code>, <:error-message>)``. Payloads are UTF-8 text.

Reads of any size are buffered in one `bytearray` with a read offset, compacted once per read,
so decoding costs linear time however the body was split. Any damage (a CRC mismatch, a length
outside the sane bounds, an unknown header value type, a frame cut off at the end of the body)
raises `LlmError` ``MALFORMED_RESPONSE``, after the messages before it in the same read were
handed over (so what is delivered never depends on how the body was split); the decoder then
refuses further input.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import Final

from ..errors import ErrorCode, LlmError
from .sse import SseEvent

__all__ = ["MAX_MESSAGE_BYTES", "EventStreamDecoder", "decode_headers", "encode_message"]

MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
"""The largest message accepted (AWS caps event-stream messages far below this)."""

_PRELUDE: Final = 12
_MIN_MESSAGE: Final = 16  # prelude + message CRC, no headers, no payload
_U32: Final = struct.Struct(">I")
_PRELUDE_FIELDS: Final = struct.Struct(">III")
_U16: Final = struct.Struct(">H")
_FIXED_SIZES: Final = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
_STRING_TYPES: Final = frozenset({6, 7})  # byte array, string: a 2-byte length, then the bytes


def _malformed(what: str) -> LlmError:
    return LlmError(
        f"malformed AWS event stream (application/vnd.amazon.eventstream): {what}",
        ErrorCode.MALFORMED_RESPONSE,
    )


def decode_headers(raw: bytes | memoryview) -> dict[str, str]:
    """The string-valued headers of one message (other value types are checked and skipped)."""
    view = memoryview(raw)
    out: dict[str, str] = {}
    pos = 0
    end = len(view)
    while pos < end:
        name_len = view[pos]
        pos += 1
        if name_len == 0 or pos + name_len + 1 > end:
            raise _malformed("a header name runs past the header block")
        name = bytes(view[pos : pos + name_len]).decode("utf-8", "replace")
        pos += name_len
        kind = view[pos]
        pos += 1
        if kind in _STRING_TYPES:
            if pos + 2 > end:
                raise _malformed(f"header {name!r} has a truncated length")
            (size,) = _U16.unpack_from(view, pos)
            pos += 2
            if pos + size > end:
                raise _malformed(f"header {name!r} runs past the header block")
            if kind == 7:
                try:
                    out[name] = bytes(view[pos : pos + size]).decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise _malformed(f"header {name!r} is not UTF-8") from exc
            pos += size
            continue
        fixed = _FIXED_SIZES.get(kind)
        if fixed is None:
            raise _malformed(f"header {name!r} has unknown value type {kind}")
        if pos + fixed > end:
            raise _malformed(f"header {name!r} runs past the header block")
        pos += fixed
    return out


def _event(headers: dict[str, str], payload: memoryview) -> SseEvent:
    kind = headers.get(":message-type")
    if kind == "error":
        code = headers.get(":error-code") or "unknown"
        return SseEvent(f"error:{code}", headers.get(":error-message", ""))
    try:
        data = bytes(payload).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _malformed("a message payload is not UTF-8") from exc
    if kind == "event":
        name = headers.get(":event-type")
        if not name:
            raise _malformed("an event message has no :event-type header")
        return SseEvent(name, data)
    if kind == "exception":
        return SseEvent(f"exception:{headers.get(':exception-type') or 'unknown'}", data)
    raise _malformed(f"unknown :message-type {kind!r}")


def _message(message: bytearray, headers_len: int) -> SseEvent:
    (message_crc,) = _U32.unpack_from(message, len(message) - 4)
    if zlib.crc32(memoryview(message)[:-4]) != message_crc:
        raise _malformed("message CRC mismatch")
    view = memoryview(message)
    headers = decode_headers(view[_PRELUDE : _PRELUDE + headers_len])
    return _event(headers, view[_PRELUDE + headers_len : -4])


def _then_raise(events: list[SseEvent], exc: LlmError) -> Iterator[SseEvent]:
    yield from events
    raise exc


class EventStreamDecoder:
    """Incremental event-stream decoder: `feed` body reads, `close` at the end of the body."""

    __slots__ = ("_buffer", "_failed")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._failed = False

    def feed(self, data: bytes) -> Iterable[SseEvent]:
        """The events of every message `data` completes. A damaged message raises, but only
        once the events before it in the same read were taken (iterate the result)."""
        if self._failed:
            raise _malformed("the stream already failed to decode")
        buffer = self._buffer
        buffer += data
        out: list[SseEvent] = []
        offset = 0
        size = len(buffer)
        try:
            while size - offset >= _PRELUDE:
                total, headers_len, prelude_crc = _PRELUDE_FIELDS.unpack_from(buffer, offset)
                if zlib.crc32(buffer[offset : offset + 8]) != prelude_crc:
                    raise _malformed("prelude CRC mismatch")
                if total < _MIN_MESSAGE or total > MAX_MESSAGE_BYTES:
                    raise _malformed(
                        f"message length {total} outside {_MIN_MESSAGE}..{MAX_MESSAGE_BYTES}"
                    )
                if headers_len > total - _MIN_MESSAGE:
                    raise _malformed(f"headers length {headers_len} exceeds message length")
                if size - offset < total:
                    break  # the rest of this message is in a later read
                end = offset + total
                message = buffer[offset:end]  # a copy: each byte is copied once
                out.append(_message(message, headers_len))
                offset = end
        except LlmError as exc:
            self._failed = True
            buffer.clear()
            if not out:
                raise
            return _then_raise(out, exc)
        if offset:
            del buffer[:offset]  # once per read: the unread tail is at most one message
        return out

    def close(self) -> list[SseEvent]:
        """The body ended: nothing is pending, or the last frame was cut off (raises)."""
        if self._buffer:
            pending = len(self._buffer)
            self._buffer.clear()
            raise _malformed(f"the body ended inside a message ({pending} bytes left over)")
        return []


def _header(name: str, value: str) -> bytes:
    raw_name = name.encode()
    raw_value = value.encode()
    return bytes([len(raw_name)]) + raw_name + b"\x07" + _U16.pack(len(raw_value)) + raw_value


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message with string `headers` (the inverse of the decoder; for tests
    and local servers that speak the framing)."""
    block = b"".join(_header(k, v) for k, v in headers.items())
    total = _MIN_MESSAGE + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    head = prelude + _U32.pack(zlib.crc32(prelude))
    body = head + block + payload
    return body + _U32.pack(zlib.crc32(body))
