"""SSE framing (spec B.3): `SseDecoder` line endings, UTF-8, BOM, comments, multi-line data."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire.wire.sse import SseDecoder, SseEvent


def decode_all(chunks: list[bytes]) -> list[SseEvent]:
    dec = SseDecoder()
    out: list[SseEvent] = []
    for c in chunks:
        out.extend(dec.feed(c))
    out.extend(dec.close())
    return out


def test_b22_blank_line_dispatches_event_with_data() -> None:
    assert decode_all([b"data: a\n\ndata: b\n\n"]) == [SseEvent(None, "a"), SseEvent(None, "b")]


def test_b22_event_without_data_is_not_dispatched() -> None:
    assert decode_all([b"event: ping\n\nid: 3\n\n"]) == []


def test_b22_empty_data_line_dispatches_empty_string() -> None:
    assert decode_all([b"data:\n\n"]) == [SseEvent(None, "")]


def test_b24_multiline_data_joined_with_newline() -> None:
    assert decode_all([b"data: one\ndata: two\ndata\n\n"]) == [SseEvent(None, "one\ntwo\n")]


def test_b24_one_optional_space_removed_after_colon() -> None:
    assert decode_all([b"data:x\n\ndata:  y\n\n"]) == [SseEvent(None, "x"), SseEvent(None, " y")]


def test_b24_event_and_id_fields_are_reported_not_filtering() -> None:
    events = decode_all([b"event: error\nid: 7\ndata: {}\n\ndata: next\n\n"])
    assert events == [SseEvent("error", "{}", "7"), SseEvent(None, "next", "7")]


def test_b24_retry_and_unknown_fields_ignored() -> None:
    assert decode_all([b"retry: 10\nfoo: bar\ndata: x\n\n"]) == [SseEvent(None, "x")]


def test_b23_comments_ignored_and_reported_to_callback() -> None:
    seen: list[str] = []
    dec = SseDecoder(on_comment=seen.append)
    out = dec.feed(b": keep-alive\n:raw\ndata: x\n\n")
    assert out == [SseEvent(None, "x")]
    assert seen == ["keep-alive", "raw"]


def test_b21_crlf_lf_and_lone_cr_line_ends() -> None:
    body = b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"
    assert decode_all([body]) == [SseEvent(None, "a"), SseEvent(None, "b"), SseEvent(None, "c")]


def test_b21_cr_at_read_edge_is_held_until_next_read() -> None:
    dec = SseDecoder()
    assert dec.feed(b"data: a\r") == []
    assert dec.feed(b"\n\r") == []
    assert dec.feed(b"\n") == [SseEvent(None, "a")]


def test_b21_trailing_cr_at_close_ends_the_blank_line() -> None:
    dec = SseDecoder()
    assert dec.feed(b"data: a\r\r") == []
    assert dec.close() == [SseEvent(None, "a")]


def test_b20_utf8_split_inside_code_point() -> None:
    raw = "data: é😀中\n\n".encode()
    for cut in range(1, len(raw)):
        assert decode_all([raw[:cut], raw[cut:]]) == [SseEvent(None, "é😀中")]


def test_b20_invalid_bytes_become_replacement_character() -> None:
    assert decode_all([b"data: a\xffb\xe2\x82\n\n"]) == [SseEvent(None, "a\ufffdb\ufffd")]


def test_b20_one_leading_bom_stripped_even_split() -> None:
    body = b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n"
    # the first BOM is stripped; a second one makes the first line an unknown field
    assert decode_all([body[:1], body[1:2], body[2:]]) == []
    assert decode_all([b"\xef\xbb", b"\xbfdata: x\n\n"]) == [SseEvent(None, "x")]


def test_b26_unterminated_event_not_dispatched_at_close() -> None:
    assert decode_all([b"data: a\n\ndata: b\n"]) == [SseEvent(None, "a")]
    assert decode_all([b"data: [DONE]"]) == []


_LINE_END = st.sampled_from([b"\n", b"\r\n", b"\r"])
_FIELD = st.one_of(
    st.text(max_size=12).map(lambda t: b"data: " + t.encode()),
    st.text(max_size=6).map(lambda t: b": " + t.encode()),
    st.just(b"event: x"),
    st.just(b"id: 1"),
    st.just(b""),
    st.binary(max_size=6).filter(lambda b: b"\r" not in b and b"\n" not in b),
)


@st.composite
def stream_and_cuts(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    lines = draw(st.lists(st.tuples(_FIELD, _LINE_END), max_size=25))
    body = b"".join(a + b for a, b in lines)
    if draw(st.booleans()):
        body = b"\xef\xbb\xbf" + body
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=12)))
    return body, cuts


@settings(max_examples=200, deadline=None)
@given(stream_and_cuts())
def test_sse_property_any_rechunking_gives_same_events(case: tuple[bytes, list[int]]) -> None:
    body, cuts = case
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decode_all(pieces) == decode_all([body])
    assert decode_all([bytes([b]) for b in body]) == decode_all([body])


def reference_events(body: bytes) -> list[SseEvent]:
    """The framing rules line by line, with no fast path: the model `SseDecoder` must match."""
    if body.startswith(b"\xef\xbb\xbf"):
        body = body[3:]
    lines = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    lines.pop()  # the unfinished last line (a trailing CR already ended its line above)
    out: list[SseEvent] = []
    data: list[bytes] | None = None
    event: bytes | None = None
    last_id: str | None = None
    for line in lines:
        if not line:
            if data is not None:
                text = b"\n".join(data).decode("utf-8", "replace")
                name = None if event is None else event.decode("utf-8", "replace")
                out.append(SseEvent(name, text, last_id))
                data, event = None, None
            continue
        if line.startswith(b":"):
            continue
        name_, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name_ == b"data":
            data = [*(data or []), value]
        elif name_ == b"event":
            event = value or None
        elif name_ == b"id" and b"\x00" not in value:
            last_id = value.decode("utf-8", "replace")
    return out


_EVENT = st.one_of(
    st.text(max_size=20).map(lambda t: b"data: " + t.encode() + b"\n\n"),
    st.text(max_size=8).map(lambda t: b"data: " + t.replace("\r", "").encode() + b"\n\n"),
    st.just(b"event: x\ndata: y\n\n"),
    # named events of any name and data (the event + data fast paths): one line each
    st.tuples(st.text(max_size=8), st.text(max_size=12)).map(
        lambda nd: (
            b"event: "
            + nd[0].replace("\r", "").replace("\n", "").encode()
            + b"\ndata: "
            + nd[1].replace("\r", "").replace("\n", "").encode()
            + b"\n\n"
        )
    ),
    st.just(b"id: 7\n"),
    st.just(b"\n"),
)


@st.composite
def events_and_cuts(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    plain, _ = draw(stream_and_cuts())
    events = b"".join(draw(st.lists(_EVENT, max_size=12)))
    body = plain + events if draw(st.booleans()) else events + plain
    extra = sorted(draw(st.lists(st.integers(0, len(body)), max_size=12)))
    return body, [c for c in extra if c <= len(body)]


def _reads(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted(cuts)
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


@settings(max_examples=300, deadline=None)
@given(events_and_cuts())
def test_sse_property_feed_and_feed_pieces_match_the_line_by_line_rules(
    case: tuple[bytes, list[int]],
) -> None:
    body, cuts = case
    reads = _reads(body, cuts)
    want = reference_events(body)
    assert decode_all(reads) == want
    dec = SseDecoder()
    got: list[SseEvent] = []
    for i in range(0, len(reads), 3):  # several pieces per read, as a chunked body gives them
        got += dec.feed_pieces(reads[i : i + 3])
    got += dec.close()
    assert got == want
