"""One HTTP/1.1 response parsed strictly: raw reads in, the head and the body's pieces out.

`ResponseParser` runs llhttp (through `httptools`, the parser under uvicorn) over the reads of
one connection. llhttp is strict where a hand-written parser was lenient, and each case ends in
a `WireError`: chunk sizes of hex digits only (``0x1a``, ``+1a``, ``1_a`` and sizes past 2^64
refused), Content-Length of ASCII digits only (and never twice), Content-Length with
Transfer-Encoding refused (RFC 9112 §6.3; that connection is never reused), control characters
and bare CR or LF refused in header values, obsolete line folding refused. On top of llhttp:
the head cap (`MAX_HEAD_BYTES`) counts every head byte before the final head, interim ``1xx``
heads included (each parsed once, never re-parsed), and a read that completes a head over the
cap is refused too.

`feed(data)` returns the body's pieces `data` completes (one per HTTP chunk of a chunked body,
unjoined); `head` is set once the final head is parsed; `done` once the body is whole, then
`extra` tells whether bytes followed it. `until_eof` bodies (no length, not chunked) end only
when the connection closes. A fault after good chunks sets `error` once those pieces are
returned (raise it after delivering them). A gzip or deflate body (multi-member gzip and raw
deflate included) is inflated as it arrives.
"""

from __future__ import annotations

import zlib
from typing import Final

import httptools
from multidict import CIMultiDict, CIMultiDictProxy

from .h1 import MAX_HEAD_BYTES, Head, WireError

__all__ = ["ResponseParser"]

_NO_BODY: Final = frozenset({204, 304})


class _Inflater:
    """A gzip (any number of members) or deflate (zlib-wrapped or raw) body, inflated."""

    __slots__ = ("_gzip", "_started", "_zlib")

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._started = False
        self._zlib = zlib.decompressobj(wbits=32 + zlib.MAX_WBITS)

    def inflate(self, pieces: list[bytes]) -> list[bytes]:
        out = []
        for piece in pieces:
            try:
                data = self._inflate(piece)
            except zlib.error:
                raise WireError("the compressed response body is malformed") from None
            if data:
                out.append(data)
        return out

    def _inflate(self, data: bytes) -> bytes:
        if not self._started and not self._gzip and data:
            self._started = True
            if len(data) > 1 and (data[0] & 0x0F != 8 or ((data[0] << 8) | data[1]) % 31):
                self._zlib = zlib.decompressobj(wbits=-zlib.MAX_WBITS)  # raw deflate
        out = self._zlib.decompress(data)
        while self._gzip and self._zlib.eof and self._zlib.unused_data:  # the next member
            rest = self._zlib.unused_data
            self._zlib = zlib.decompressobj(wbits=32 + zlib.MAX_WBITS)
            out += self._zlib.decompress(rest)
        return out


class ResponseParser:
    """The response to one request on a connection (see the module docstring).

    `head_only` (a HEAD request) ends the response at its head."""

    __slots__ = (
        "_fields",
        "_head_bytes",
        "_head_only",
        "_inflater",
        "_out",
        "_parser",
        "done",
        "error",
        "extra",
        "head",
        "on_body",
        "until_eof",
        "upgraded",
    )

    def __init__(self, head_only: bool = False) -> None:
        self._out: list[bytes] = []
        self.on_body = self._out.append  # llhttp's body callback: no Python frame per chunk
        self._fields: list[tuple[bytes, bytes]] = []
        self._head_bytes = 0
        self._head_only = head_only
        self._inflater: _Inflater | None = None
        self.head: Head | None = None
        self.done = False
        self.extra = False
        self.until_eof = False
        self.error: WireError | None = None
        self.upgraded = b""  # after a 101 head: the new protocol's first bytes
        self._parser = httptools.HttpResponseParser(self)

    # llhttp callbacks ----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.done:
            self.extra = True  # bytes after the whole response: the connection is not reused

    def on_status(self, status: bytes) -> None:
        self._count(len(status) + 17)  # "HTTP/1.1 200 " + reason + CRLF, and the blank line

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.head is None:
            self._count(len(name) + len(value) + 4)
            self._fields.append((name, value))

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            raise WireError("the response head is too large")

    def on_headers_complete(self) -> None:
        parser = self._parser
        status = parser.get_status_code()
        fields, self._fields = self._fields, []
        if 100 <= status < 200 and status != 101:
            return  # an interim response (its bytes stay counted): the final one follows
        headers: CIMultiDict[str] = CIMultiDict(
            (n.decode("latin-1"), v.decode("latin-1")) for n, v in fields
        )
        http = parser.get_http_version()
        if http not in ("1.1", "1.0"):
            raise WireError("the response is not HTTP/1.1")
        version = 1 if http == "1.1" else 0
        self.head = Head(status, version, CIMultiDictProxy(headers), parser.should_keep_alive())
        if self._head_only or status in _NO_BODY or status == 101:
            self.done = True
            return
        if "Content-Length" not in headers and not _chunked(headers):
            self.until_eof = True
        encoding = headers.get("Content-Encoding", "identity").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            self._inflater = _Inflater(encoding != "deflate")
        elif encoding not in ("identity", ""):
            self.head = None
            raise WireError(f"the response's content coding {encoding!r} is not supported")

    def on_message_complete(self) -> None:
        if self.head is not None:
            self.done = True

    # the consumer's side -------------------------------------------------------------------

    def feed(self, data: bytes) -> list[bytes]:
        """The body pieces `data` completes (raises `WireError` on a fault before any piece)."""
        if self.error is not None:
            raise self.error
        out = self._out
        if self.done:
            self.extra = self.extra or bool(data)
            return []
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as exc:
            self.done = True  # a 101: what follows belongs to the new protocol
            self.upgraded = data[int(exc.args[0]) :]
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            self._fault(cause if isinstance(cause, WireError) else WireError(str(exc)))
        except httptools.HttpParserError as exc:
            if not self.done:
                self._fault(_malformed(self.head is not None, self._chunked, str(exc)))
            else:
                self.extra = True
        if not self.done and self.head is None and self._head_bytes > MAX_HEAD_BYTES:
            self._fault(WireError("the response head is too large"))
        pieces = out[:]
        out.clear()
        if pieces and self._inflater is not None:
            pieces = self._inflater.inflate(pieces)
        if self.error is not None and not pieces:
            raise self.error
        return pieces

    def _fault(self, error: WireError) -> None:
        self.error = error

    @property
    def _chunked(self) -> bool:
        return self.head is not None and _chunked(self.head.headers)


def _chunked(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> bool:
    coding = headers.get("Transfer-Encoding")
    return coding is not None and coding.rsplit(",", 1)[-1].strip().lower() == "chunked"


def _malformed(after_head: bool, chunked: bool, text: str) -> WireError:
    detail = text.strip().rstrip(".") or "malformed"
    if not after_head and detail.startswith("Expected HTTP/"):
        return WireError("the response is not HTTP/1.1")
    first = detail.split(" ", 1)[0]
    if "-" not in first:  # llhttp's sentence, not a header name: "Invalid character ..."
        detail = detail[:1].lower() + detail[1:]
    if not after_head:
        return WireError(f"the response head is malformed ({detail})")
    what = "chunked response body" if chunked else "response body"
    return WireError(f"the {what} is malformed ({detail})")
