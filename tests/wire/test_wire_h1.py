"""The HTTP/1.1 client's pure parts (`wire.h1`, `wire.h1body`): heads, body framings, requests."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire.wire.h1 import MAX_HEAD_BYTES, WireError, parse_head, request_bytes
from modelwire.wire.h1body import ChunkedBody, EofBody, LengthBody, body_for


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
    wire = _chunked(parts, trailers) + extra
    cuts = draw(st.lists(st.integers(0, len(wire)), max_size=10))
    return parts, trailers, extra, cuts


@settings(max_examples=300, deadline=None)
@given(chunked_and_cuts())
def test_h1_chunked_any_split_of_the_wire_gives_the_same_body(
    case: tuple[list[bytes], bytes, bytes, list[int]],
) -> None:
    parts, trailers, extra, cuts = case
    wire = _chunked(parts, trailers) + extra
    for reads in (_cut(wire, cuts), [bytes([b]) for b in wire]):
        for by_pieces in (False, True):
            body = ChunkedBody()
            got: list[bytes] = []
            for read in reads:
                assert not body.done
                got += body.pieces(read) if by_pieces else [body.feed(read)]
                if body.done:
                    break
            assert body.done
            assert b"".join(got) == b"".join(parts)
            assert extra.startswith(body.extra)  # what followed the body in its last read


def test_h1_chunked_pieces_are_the_http_chunks() -> None:
    body = ChunkedBody()
    assert body.pieces(_chunked([b"data: 1\n\n", b"data: 2\n\n"])) == [
        b"data: 1\n\n",
        b"data: 2\n\n",
    ]
    assert body.done and body.extra == b""


def test_h1_chunk_extensions_and_trailers_are_skipped() -> None:
    body = ChunkedBody()
    assert body.feed(b"5;name=value\r\nhello\r\n0\r\nx-sum: 1\r\n\r\n") == b"hello"
    assert body.done


@pytest.mark.parametrize(
    "wire",
    [
        b"zz\r\nhello\r\n",  # not a size
        b"-5\r\nhello\r\n",  # a negative size
        b"5\r\nhelloXX0\r\n\r\n",  # the chunk's CRLF is missing
        b"3\r\nabc",  # fine so far, then a bad CRLF below
    ],
)
def test_h1_malformed_chunked_body_is_a_wire_error(wire: bytes) -> None:
    body = ChunkedBody()
    with pytest.raises(WireError, match="chunked response body is malformed"):
        body.feed(wire)
        body.feed(b"!!")


def test_h1_endless_size_line_is_refused() -> None:
    with pytest.raises(WireError, match="malformed"):
        ChunkedBody().feed(b"1" * 5000)


def test_h1_length_body_stops_at_its_length_and_keeps_what_followed() -> None:
    body = LengthBody(5)
    assert body.feed(b"hel") == b"hel" and not body.done
    assert body.feed(b"loEXTRA") == b"lo"
    assert body.done and body.extra == b"EXTRA"
    assert LengthBody(0).done


def test_h1_eof_body_takes_everything() -> None:
    body = EofBody()
    assert body.until_eof and body.feed(b"abc") == b"abc" and not body.done


def test_h1_head_parsed_with_repeated_and_folded_headers() -> None:
    head = parse_head(
        b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nX-A: 1\r\nx-a: 2\r\nX-Long: a\r\n  b\r\n\r\nBODY"
    )
    assert head is not None
    assert (head.status, head.version, head.keep_alive) == (429, 1, True)
    assert head.headers["retry-after"] == "3"
    assert head.headers.getall("X-A") == ["1", "2"]
    assert head.headers["x-long"] == "a b"
    assert head.rest == b"BODY"


def test_h1_head_incomplete_is_none_and_interim_heads_are_skipped() -> None:
    assert parse_head(b"HTTP/1.1 200 OK\r\nA: b\r\n") is None
    head = parse_head(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    assert head is not None and head.status == 200


def test_h1_keep_alive_follows_connection_header_and_version() -> None:
    close = parse_head(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
    old = parse_head(b"HTTP/1.0 200 OK\r\n\r\n")
    old_kept = parse_head(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n")
    assert close is not None and not close.keep_alive
    assert old is not None and not old.keep_alive
    assert old_kept is not None and old_kept.keep_alive


@pytest.mark.parametrize(
    "wire",
    [b"ICY 200 OK\r\n\r\n", b"HTTP/1.1 2000 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n"],
)
def test_h1_malformed_head_is_a_wire_error(wire: bytes) -> None:
    with pytest.raises(WireError):
        parse_head(wire)


def test_h1_oversized_head_is_refused() -> None:
    with pytest.raises(WireError, match="too large"):
        parse_head(b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * (MAX_HEAD_BYTES // 4))


def _body_of(head_text: bytes) -> object:
    head = parse_head(head_text + b"\r\n")
    assert head is not None
    return body_for(head)


def test_h1_body_framing_is_chosen_by_the_headers() -> None:
    assert isinstance(_body_of(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"), ChunkedBody)
    assert isinstance(_body_of(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n"), LengthBody)
    assert isinstance(_body_of(b"HTTP/1.1 200 OK\r\n"), EofBody)
    no_body = _body_of(b"HTTP/1.1 204 No Content\r\n")
    assert isinstance(no_body, LengthBody) and no_body.done
    with pytest.raises(WireError, match="Content-Length"):
        _body_of(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n")
    with pytest.raises(WireError, match="transfer coding"):
        _body_of(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n")
    with pytest.raises(WireError, match="content coding"):
        _body_of(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Encoding: br\r\n")


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_h1_compressed_body_is_inflated_across_reads(coding: str) -> None:
    plain = b"data: " + b"x" * 5000 + b"\n\n"
    packed = gzip.compress(plain) if coding == "gzip" else zlib.compress(plain)
    head = parse_head(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: "
        + coding.encode()
        + b"\r\n\r\n"
    )
    assert head is not None
    body = body_for(head)
    wire = _chunked([packed[:10], packed[10:]])
    got = b"".join(body.feed(wire[i : i + 7]) for i in range(0, len(wire), 7))
    assert got == plain and body.done


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
