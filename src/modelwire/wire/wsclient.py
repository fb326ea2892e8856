"""A WebSocket client (RFC 6455) over a connection of `wire.pool`, so a socket goes through the
route's proxy, TLS settings and connect timeout like every other request.

`open_websocket` sends the upgrade (``Sec-WebSocket-Key`` checked against the server's
``Sec-WebSocket-Accept``) and returns an `H1WebSocket`: `send_text` (masked frames, as a client
must), `receive` (text messages, fragmented ones joined; a ping is answered with a pong; a close
frame is answered and ends the reads). A message over `max_message_bytes` raises
`MessageTooLarge`; a refused upgrade `UpgradeRefused` with the status, headers and (at most
1 MiB of) the body. The socket's connection counts toward the route's connection limit while
open and is never reused.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import struct
from typing import Final

from multidict import CIMultiDictProxy

from .h1 import Connection, WireError, request_bytes
from .h1body import ResponseParser
from .pool import Pool, Target

__all__ = [
    "DEFAULT_MAX_MESSAGE",
    "H1WebSocket",
    "MessageTooLarge",
    "UpgradeRefused",
    "open_websocket",
]

_GUID: Final = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_MAX_ERROR_BODY: Final = 1 << 20
DEFAULT_MAX_MESSAGE: Final = 16 << 20
_TEXT, _BINARY, _CLOSE, _PING, _PONG, _CONTINUATION = 1, 2, 8, 9, 10, 0


class UpgradeRefused(WireError):
    """The server answered the upgrade with another status than 101."""

    def __init__(self, status: int, headers: CIMultiDictProxy[str], body: str) -> None:
        super().__init__(f"the server refused the WebSocket upgrade ({status})")
        self.status = status
        self.headers = headers
        self.body = body


class MessageTooLarge(WireError):
    """A message longer than the socket's `max_message_bytes`."""


def _mask(data: bytes, mask: bytes) -> bytes:
    if not data:
        return data
    n = len(data)
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


def frame(opcode: int, payload: bytes) -> bytes:
    """One final, masked client frame."""
    n = len(payload)
    first = 0x80 | opcode
    if n < 126:
        header = struct.pack("!BB", first, 0x80 | n)
    elif n < 1 << 16:
        header = struct.pack("!BBH", first, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", first, 0x80 | 127, n)
    mask = os.urandom(4)
    return header + mask + _mask(payload, mask)


class H1WebSocket:
    """An open client WebSocket (see the module docstring)."""

    __slots__ = (
        "_buffer",
        "_closed",
        "_conn",
        "_fragments",
        "_pending",
        "_pool",
        "max_message_bytes",
    )

    def __init__(self, pool: Pool, conn: Connection, rest: bytes, max_message_bytes: int) -> None:
        self._pool = pool
        self._conn = conn
        # A bytearray: appending a read and deleting a consumed frame from its front are both
        # amortised O(1) in CPython, so a read holding thousands of frames is parsed linearly.
        self._buffer = bytearray(rest)
        self._fragments: list[bytes] = []
        self._pending = 0  # the bytes of `_fragments` (a running total, never re-summed)
        self._closed = False
        self.max_message_bytes = max_message_bytes

    async def send_text(self, text: str) -> None:
        self._conn.write(frame(_TEXT, text.encode("utf-8")))

    def _frame(self) -> tuple[bool, int, bytes] | None:
        """The next whole frame in the buffer (fin, opcode, payload), or None."""
        buf = self._buffer
        if len(buf) < 2:
            return None
        fin, opcode = bool(buf[0] & 0x80), buf[0] & 0x0F
        if buf[1] & 0x80:
            raise WireError("the server sent a masked WebSocket frame")
        size, pos = buf[1] & 0x7F, 2
        if size == 126:
            if len(buf) < 4:
                return None
            size, pos = struct.unpack_from("!H", buf, 2)[0], 4
        elif size == 127:
            if len(buf) < 10:
                return None
            size, pos = struct.unpack_from("!Q", buf, 2)[0], 10
        if opcode >= _CLOSE and size > 125:  # RFC 6455 §5.5: control frames are short
            raise WireError("the server sent a WebSocket control frame over 125 bytes")
        if size + self._pending > self.max_message_bytes:
            raise MessageTooLarge(
                f"the server sent a WebSocket message over {self.max_message_bytes} bytes "
                "(the limit)"
            )
        if len(buf) < pos + size:
            return None
        payload = bytes(buf[pos : pos + size])
        del buf[: pos + size]
        return fin, opcode, payload

    async def receive(self) -> bytes | None:
        conn = self._conn
        while not self._closed:
            found = self._frame()
            if found is None:
                data = conn.take()
                if data:
                    self._buffer += data
                elif conn.closed:
                    self._closed = True
                    return None
                else:
                    await conn.wait()
                continue
            message = self._message(*found)
            if message is not None:
                return message
        return None

    def _message(self, fin: bool, opcode: int, payload: bytes) -> bytes | None:
        if opcode == _PING:
            self._conn.write(frame(_PONG, payload))
            return None
        if opcode == _PONG:
            return None
        if opcode == _CLOSE:
            self._closed = True
            if not self._conn.closed:
                self._conn.write(frame(_CLOSE, payload[:2]))
            return None
        if opcode == _BINARY or (opcode == _CONTINUATION and not self._fragments):
            raise TypeError("the server sent a binary WebSocket message")
        if opcode not in (_TEXT, _CONTINUATION):
            raise WireError(f"the server sent an unknown WebSocket opcode {opcode}")
        self._fragments.append(payload)
        self._pending += len(payload)
        if not fin:
            return None
        parts, self._fragments, self._pending = self._fragments, [], 0
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def aclose(self) -> None:
        conn = self._conn
        if not self._closed and not conn.closed:
            self._closed = True
            with contextlib.suppress(WireError):
                conn.write(frame(_CLOSE, struct.pack("!H", 1000)))
        self._pool.drop(conn)


async def open_websocket(
    pool: Pool,
    target: Target,
    path: str,
    host_header: str,
    headers: dict[str, str],
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE,
) -> H1WebSocket:
    """Connect, upgrade, and return the open socket (see the module docstring)."""
    key = base64.b64encode(os.urandom(16)).decode("ascii")
    sent = {
        **headers,
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": key,
        "Sec-WebSocket-Version": "13",
    }
    data = request_bytes("GET", path, host_header, sent, None)
    conn, _ = await pool.acquire(target)
    try:
        conn.write(data)
        parser = ResponseParser()
        body: list[bytes] = []
        size = 0
        while parser.head is None or (parser.head.status != 101 and not parser.done):
            more = conn.take()
            if more:
                for piece in parser.feed(more):
                    size += len(piece)
                    if size <= _MAX_ERROR_BODY:
                        body.append(piece)
            elif conn.closed:
                if parser.head is not None and parser.until_eof:
                    break
                raise WireError("the server closed the connection before its answer")
            else:
                await conn.wait()
        head = parser.head
        if head.status != 101:
            text = b"".join(body).decode("utf-8", "replace")
            raise UpgradeRefused(head.status, head.headers, text)
        expected = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()
        if head.headers.get("Sec-WebSocket-Accept", "").strip() != expected:
            raise WireError("the server's WebSocket handshake is not valid")
    except BaseException:
        pool.drop(conn)
        raise
    return H1WebSocket(pool, conn, parser.upgraded, max_message_bytes)
