"""The response body framings of `wire.h1`: raw reads in, body bytes (or pieces) out.

`body_for(head)` picks the framing from the status and headers: `LengthBody` (Content-Length),
`ChunkedBody` (the chunked transfer coding, undone once per read; `pieces` hands each HTTP
chunk's data on unjoined), `EofBody` (until the connection closes), inflated when the server sent
gzip or deflate anyway. Each says when the body is complete (`done`) and what followed it
(`extra`); a malformed framing raises `WireError`, after the bytes before it were returned.
"""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from typing import Final

from .h1 import MAX_HEAD_BYTES, Head, WireError

__all__ = ["Body", "ChunkedBody", "EofBody", "LengthBody", "body_for"]

_MAX_SIZE_LINE: Final = 1 << 12
_CRLF: Final = b"\r\n"
_NO_BODY: Final = frozenset({204, 304})


class Body(ABC):
    """Raw reads in, body bytes out: `feed` returns the body bytes `data` completes; `done` once
    the body is whole, then `extra` holds any bytes that followed it; `until_eof` bodies end only
    when the connection closes; `error` is set when the body turned out malformed after `feed`
    returned the bytes before the fault (raise it once those are delivered)."""

    __slots__ = ("done", "error", "extra", "until_eof")

    def __init__(self) -> None:
        self.done = False
        self.extra = b""
        self.until_eof = False
        self.error: WireError | None = None

    @abstractmethod
    def feed(self, data: bytes) -> bytes:
        """The body bytes of `data` (which follows the bytes fed before)."""

    def pieces(self, data: bytes) -> list[bytes]:
        """`feed` as the body's pieces in order (a chunked body: one per HTTP chunk), unjoined."""
        body = self.feed(data)
        return [body] if body else []


class LengthBody(Body):
    """A body of `Content-Length` bytes."""

    __slots__ = ("_left",)

    def __init__(self, length: int) -> None:
        super().__init__()
        self._left = length
        self.done = length == 0

    def feed(self, data: bytes) -> bytes:
        left = self._left
        if len(data) < left:
            self._left = left - len(data)
            return data
        self._left = 0
        self.done = True
        if len(data) > left:
            self.extra = data[left:]
            return data[:left]
        return data


class EofBody(Body):
    """A body delimited by the connection's close (no length, not chunked)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__()
        self.until_eof = True

    def feed(self, data: bytes) -> bytes:
        return data


class ChunkedBody(Body):
    """The chunked transfer coding undone: any split of `size CRLF data CRLF ... 0 CRLF
    trailers CRLF` across reads gives the same body bytes."""

    __slots__ = ("_crlf", "_left", "_pending", "_trailers")

    def __init__(self) -> None:
        super().__init__()
        self._pending = b""  # an incomplete size line, chunk CRLF or trailer section
        self._left = 0  # bytes of the current chunk's data still to come
        self._crlf = False  # the CRLF closing a chunk's data is still to come
        self._trailers = False  # past the last chunk: trailer lines up to a blank line

    def feed(self, data: bytes) -> bytes:
        return _joined(self.pieces(data))

    def pieces(self, data: bytes) -> list[bytes]:
        if self.error is not None:
            raise self.error
        out: list[bytes] = []
        try:
            return self._pieces(data, out)
        except WireError as exc:
            if not out:
                raise
            self.error = exc  # the chunks before the fault are delivered first
            return out

    def _pieces(self, data: bytes, out: list[bytes]) -> list[bytes]:
        if self._pending:
            data = self._pending + data
            self._pending = b""
        pos, n = 0, len(data)
        if self._left:  # the rest of a chunk split across reads
            end = self._left
            if end > n:
                self._left = end - n
                return [data]
            out.append(data[:end])
            pos, self._left, self._crlf = end, 0, True
        if self._crlf:
            if n - pos < 2:
                self._pending = data[pos:]
                return out
            if data[pos : pos + 2] != _CRLF:
                raise WireError("the chunked response body is malformed")
            pos += 2
            self._crlf = False
        while pos < n:
            if self._trailers:
                self._trailer(data, pos)
                break
            j = data.find(_CRLF, pos)
            if j < 0:
                if n - pos > _MAX_SIZE_LINE:
                    raise WireError("the chunked response body is malformed")
                self._pending = data[pos:]
                break
            try:
                size = int(data[pos:j], 16)  # the common size line: bare hex digits
            except ValueError:
                size = _chunk_size(data[pos:j])  # chunk extensions, or not a size at all
            if size < 0:
                raise WireError("the chunked response body is malformed")
            start = j + 2
            if size == 0:
                self._trailers = True
                pos = start
                continue
            end = start + size
            if end + 2 <= n:  # the common case: the whole chunk and its CRLF are here
                if not data.startswith(_CRLF, end):
                    raise WireError("the chunked response body is malformed")
                out.append(data[start:end])
                pos = end + 2
            elif end <= n:  # the data is here, (part of) its CRLF is not
                out.append(data[start:end])
                self._pending, self._crlf = data[end:], True
                break
            else:
                out.append(data[start:])
                self._left = end - n
                break
        return out

    def _trailer(self, data: bytes, pos: int) -> None:
        """After the last chunk: skip trailer lines up to the blank line that ends the body."""
        while True:
            j = data.find(_CRLF, pos)
            if j < 0:
                if len(data) - pos > MAX_HEAD_BYTES:
                    raise WireError("the chunked response body is malformed")
                self._pending = data[pos:]
                return
            if j == pos:  # the blank line: the body is complete
                self.done = True
                self.extra = data[j + 2 :]
                return
            pos = j + 2


def _joined(parts: list[bytes]) -> bytes:
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _chunk_size(line: bytes) -> int:
    """A size line with chunk extensions (``1a;name=value``): the size before them."""
    line = line.split(b";", 1)[0].strip(b" \t")
    try:
        return int(line, 16)
    except ValueError:
        raise WireError("the chunked response body is malformed") from None


class _Decoded(Body):
    """A compressed body (`Content-Encoding: gzip` or `deflate`) inflated as it arrives."""

    __slots__ = ("_inner", "_zlib")

    def __init__(self, inner: Body, wbits: int) -> None:
        super().__init__()
        self._inner = inner
        self._zlib = zlib.decompressobj(wbits=wbits)
        self.until_eof = inner.until_eof

    def feed(self, data: bytes) -> bytes:
        raw = self._inner.feed(data)
        try:
            out = self._zlib.decompress(raw) if raw else b""
            if self._inner.done:
                out += self._zlib.flush()
        except zlib.error:
            raise WireError("the compressed response body is malformed") from None
        self.done, self.extra = self._inner.done, self._inner.extra
        return out


def body_for(head: Head) -> Body:
    """The decoder of `head`'s body (by status, Transfer-Encoding, Content-Length and
    Content-Encoding); a framing it cannot read raises `WireError`."""
    headers = head.headers
    if head.status in _NO_BODY:
        return LengthBody(0)
    coding = headers.get("Transfer-Encoding")
    body: Body
    if coding is not None:
        if coding.rsplit(",", 1)[-1].strip().lower() != "chunked":
            raise WireError(f"the response's transfer coding {coding!r} is not supported")
        body = ChunkedBody()
    elif (lengths := headers.getall("Content-Length", None)) is not None:
        values = {v.strip() for length in lengths for v in length.split(",")}
        if len(values) != 1 or not (value := values.pop()).isdigit():
            raise WireError("the response's Content-Length is not valid")
        body = LengthBody(int(value))
    else:
        body = EofBody()
    encoding = headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        return _Decoded(body, 32 + zlib.MAX_WBITS)  # a gzip or zlib header, detected
    if encoding not in ("identity", ""):
        raise WireError(f"the response's content coding {encoding!r} is not supported")
    return body
