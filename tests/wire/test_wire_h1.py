"""The HTTP/1.1 client's pure parts (`wire.h1`, `wire.h1body`): the strict response parser (every
framing case ends in one classified `WireError`), inflation, request bytes."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire.wire.h1 import MAX_HEAD_BYTES, WireError, request_bytes
from modelwire.wire.h1body import ResponseParser


def _chunked(parts: list[bytes], trailers: bytes = b"") -> bytes:
    return (
        b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p) + b"0\r\n" + trailers + b"\r\n"
    )


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted(cuts)
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@st.composite
def chunked_and_cuts(draw: st.DrawFn) -> tuple[list[bytes], bytes, bytes, list[int]]:
    parts = draw(st.lists(st.binary(min_size=1, max_size=40), max_size=12))
    trailers = draw(st.sampled_from([b"", b"x-trailer: 1\r\n", b"a: b\r\nc: d\r\n"]))
    extra = draw(st.sampled_from([b"", b"HTTP/1.1 200 OK\r\n"]))
    wire = _CHUNKED_HEAD + _chunked(parts, trailers) + extra
    cuts = draw(st.lists(st.integers(0, len(wire)), max_size=10))
    return parts, trailers, extra, cuts


_CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


def _parse(*reads: bytes, head_only: bool = False) -> tuple[ResponseParser, list[bytes]]:
    parser = ResponseParser(head_only=head_only)
    got: list[bytes] = []
    for read in reads:
        got += parser.feed(read)
    if parser.error is not None:  # a fault after good pieces: they came first
        raise parser.error
    return parser, got


@settings(max_examples=300, deadline=None)
@given(chunked_and_cuts())
def test_h1_chunked_any_split_of_the_wire_gives_the_same_body(
    case: tuple[list[bytes], bytes, bytes, list[int]],
) -> None:
    parts, trailers, extra, cuts = case
    wire = _CHUNKED_HEAD + _chunked(parts, trailers) + extra
    for reads in (_cut(wire, cuts), [bytes([b]) for b in wire]):
        parser = ResponseParser()
        got: list[bytes] = []
        for read in reads:
            got += parser.feed(read)
        assert parser.done and parser.head is not None and parser.error is None
        assert b"".join(got) == b"".join(parts)
        assert parser.extra == bool(extra)  # bytes after the body: never reused
        assert parser.head.headers.get("x-trailer") is None  # trailers are not headers


def test_h1_chunked_pieces_are_the_http_chunks() -> None:
    parser, got = _parse(_CHUNKED_HEAD + _chunked([b"data: 1\n\n", b"data: 2\n\n"]))
    assert got == [b"data: 1\n\n", b"data: 2\n\n"]
    assert parser.done and not parser.extra


def test_h1_chunk_extensions_and_trailers_are_skipped() -> None:
    parser, got = _parse(_CHUNKED_HEAD + b"5;name=value\r\nhello\r\n0\r\nx-sum: 1\r\n\r\n")
    assert got == [b"hello"] and parser.done


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"zz\r\nhello\r\n", "invalid character in chunk size"),  # not a size
        (b"-5\r\nhello\r\n", "invalid character in chunk size"),  # a negative size
        (b"0x1a\r\n", "invalid character in chunk size"),  # a prefix
        (b"+1a\r\n", "invalid character in chunk size"),  # a sign
        (b"1_a\r\n", "invalid character in chunk size"),  # a separator
        (b"%x\r\n" % 2**96, "chunk size overflow"),  # past 64 bits
        (b"5\r\nhelloXX0\r\n\r\n", "malformed"),  # the chunk's CRLF is missing
    ],
)
def test_h1_malformed_chunked_body_is_a_wire_error(body: bytes, reason: str) -> None:
    with pytest.raises(WireError, match="the chunked response body is malformed") as info:
        _parse(_CHUNKED_HEAD, body)
    assert reason in info.value.reason


def test_h1_chunk_size_of_2_80_after_a_good_chunk_delivers_the_chunk_then_fails() -> None:
    """Issue 29: the huge size is a failure after the good chunk, never a clean end."""
    parser = ResponseParser()
    assert parser.feed(_CHUNKED_HEAD + b"2\r\nok\r\n" + b"%x\r\n" % 2**80) == [b"ok"]
    assert parser.error is not None and "chunk size overflow" in parser.error.reason
    assert not parser.done
    with pytest.raises(WireError):
        parser.feed(b"more")


def test_h1_length_body_stops_at_its_length_and_flags_what_followed() -> None:
    parser, got = _parse(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", b"lo")
    assert got == [b"hel", b"lo"] and parser.done and not parser.extra
    after, _ = _parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiEXTRA")
    assert after.done and after.extra


def test_h1_eof_body_takes_everything() -> None:
    parser, got = _parse(b"HTTP/1.1 200 OK\r\n\r\nabc", b"def")
    assert parser.until_eof and got == [b"abc", b"def"] and not parser.done


def test_h1_head_parsed_with_repeated_headers() -> None:
    parser, got = _parse(
        b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nX-A: 1\r\nx-a: 2\r\n"
        b"Content-Length: 4\r\n\r\nBODY"
    )
    head = parser.head
    assert head is not None
    assert (head.status, head.version, head.keep_alive) == (429, 1, True)
    assert head.headers["retry-after"] == "3"
    assert head.headers.getall("X-A") == ["1", "2"]
    assert got == [b"BODY"]


def test_h1_head_incomplete_is_none_and_interim_heads_are_skipped() -> None:
    assert _parse(b"HTTP/1.1 200 OK\r\nA: b\r\n")[0].head is None
    parser, _ = _parse(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\nLink: x\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    )
    assert parser.head is not None and parser.head.status == 200 and parser.done
    assert "Link" not in parser.head.headers  # an interim head's headers are not the final's


def test_h1_flood_of_100_continue_heads_is_bounded_and_linear() -> None:
    """Issue 29: interim heads count toward the head cap; each is parsed once (no re-parse)."""
    parser = ResponseParser()
    flood = b"HTTP/1.1 100 Continue\r\n\r\n" * 200
    with pytest.raises(WireError, match="the response head is too large"):
        for _ in range(MAX_HEAD_BYTES // len(flood) + 2):
            parser.feed(flood)
    assert parser.head is None


def test_h1_keep_alive_follows_connection_header_and_version() -> None:
    close = _parse(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")[0]
    old = _parse(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")[0]
    kept = _parse(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n")[0]
    assert close.head is not None and not close.head.keep_alive
    assert old.head is not None and not old.head.keep_alive
    assert kept.head is not None and kept.head.keep_alive


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        (b"HTTP/1.1 200 OK\r\nX\x01: y\r\n\r\n", "invalid header token"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "invalid response status"),
        (b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "invalid header"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: \xc2\xb2\r\n\r\n", "content-length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", "duplicate"),
        (b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n", "invalid header value char"),
        (b"HTTP/1.1 200 OK\r\nX: a\x1bb\r\n\r\n", "invalid header value char"),
        (b"HTTP/1.1 200 OK\r\nX-Request-Id: a\nInjected: b\r\n\r\n", "cr"),  # bare LF
        (b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n", "whitespace"),  # obs-fold
        (b"HTTP/1.1 200 OK\nContent-Length: 0\n\n", "cr"),
    ],
)
def test_h1_malformed_head_is_a_wire_error(wire: bytes, reason: str) -> None:
    with pytest.raises(WireError, match="the response head is malformed") as info:
        _parse(wire)
    assert reason in info.value.reason.lower()


@pytest.mark.parametrize("wire", [b"ICY 200 OK\r\n\r\n", b"HTTP/2.0 200 OK\r\n\r\n"])
def test_h1_an_answer_that_is_not_http_1_is_refused(wire: bytes) -> None:
    with pytest.raises(WireError, match=r"the response is not HTTP/1\.1"):
        _parse(wire)


def test_h1_content_length_with_transfer_encoding_is_refused() -> None:
    """RFC 9112 §6.3: both framings at once is an error (and the connection is not reused)."""
    with pytest.raises(WireError, match="can't be present with"):
        _parse(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")


def test_h1_ten_thousand_obs_fold_lines_fail_at_once() -> None:
    """Issue 29: no quadratic unfolding; the first fold is refused."""
    wire = b"HTTP/1.1 200 OK\r\nX: a\r\n" + b" b\r\n" * 10_000 + b"\r\n"
    with pytest.raises(WireError, match="malformed"):
        _parse(wire)


@pytest.mark.parametrize("split", [False, True])
def test_h1_oversized_head_is_refused_in_one_read_or_many(split: bool) -> None:
    wire = b"HTTP/1.1 200 OK\r\n" + b"X: yyyyyyyy\r\n" * (MAX_HEAD_BYTES // 10) + b"\r\nbody"
    reads = [wire[i : i + 1000] for i in range(0, len(wire), 1000)] if split else [wire]
    with pytest.raises(WireError, match="the response head is too large"):
        _parse(*reads)


def test_h1_no_body_statuses_and_head_requests_end_at_the_head() -> None:
    assert _parse(b"HTTP/1.1 204 No Content\r\n\r\n")[0].done
    assert _parse(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n")[0].done
    assert _parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", head_only=True)[0].done


def test_h1_unsupported_content_coding_is_refused() -> None:
    with pytest.raises(WireError, match="content coding"):
        _parse(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Encoding: br\r\n\r\n")


def _compressed(coding: str, plain: bytes) -> bytes:
    if coding == "gzip":
        return gzip.compress(plain)
    if coding == "gzip-members":
        half = len(plain) // 2
        return gzip.compress(plain[:half]) + gzip.compress(plain[half:])
    if coding == "deflate":
        return zlib.compress(plain)
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)  # raw deflate, as some servers send it
    return packer.compress(plain) + packer.flush()


@pytest.mark.parametrize("coding", ["gzip", "gzip-members", "deflate", "raw-deflate"])
def test_h1_compressed_body_is_inflated_across_reads(coding: str) -> None:
    plain = b"data: " + bytes(range(256)) * 40 + b"\n\n"
    packed = _compressed(coding, plain)
    name = b"gzip" if coding.startswith("gzip") else b"deflate"
    wire = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: "
        + name
        + b"\r\n\r\n"
        + _chunked([packed[:10], packed[10:]])
    )
    parser, got = _parse(*[wire[i : i + 7] for i in range(0, len(wire), 7)])
    assert b"".join(got) == plain and parser.done


def test_h1_request_bytes_carry_host_headers_and_length() -> None:
    raw = request_bytes("POST", "/v1/x?a=1", "api.test:8080", {"Authorization": "Bearer k"}, b"{}")
    assert raw == (
        b"POST /v1/x?a=1 HTTP/1.1\r\nHost: api.test:8080\r\nAuthorization: Bearer k\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    signed = request_bytes("POST", "/", "h", {"host": "signed.example", "Content-Length": "9"}, b"")
    assert signed.count(b"ost:") == 1 and b"signed.example" in signed
    assert b"Content-Length: 0\r\n" in signed and b"Content-Length: 9" not in signed


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("X-Evil", "a\r\nInjected: 1"),
        ("X-Evil", "a\nb"),
        ("Bad Name", "sk-value"),
        ("X-Nul", "a\0"),
    ],
)
def test_h1_header_with_line_break_is_refused_without_its_value(name: str, value: str) -> None:
    with pytest.raises(WireError) as info:
        request_bytes("POST", "/", "h", {name: value}, b"")
    assert name in info.value.reason and value not in info.value.reason
