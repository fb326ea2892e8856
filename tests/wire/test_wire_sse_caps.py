"""SSE framing caps: every `data` line counts toward the event cap, and nothing held outgrows it."""

from __future__ import annotations

import pytest

from modelwire.errors import ErrorCode, LlmError
from modelwire.wire.sse import MAX_EVENT_BYTES, SseDecoder, SseEvent


def _refused(decoder: SseDecoder, *reads: bytes) -> LlmError:
    with pytest.raises(LlmError) as info:
        for read in reads:
            decoder.feed(read)
    assert info.value.code == ErrorCode.MALFORMED_RESPONSE
    assert decoder.buffered_bytes == 0  # what was held is dropped, not kept
    return info.value


def test_sse_bare_data_lines_count_toward_the_event_cap() -> None:
    # The reported case: a line within the default cap plus 32 bare `data` lines used to
    # dispatch a 16,777,240-byte event (the value plus 32 joining newlines) instead of failing.
    value = MAX_EVENT_BYTES - 8
    body = b"data: " + b"x" * value + b"\n" + b"data\n" * 32 + b"\n"
    assert value + 32 == 16_777_240
    error = _refused(SseDecoder(), body)
    assert str(MAX_EVENT_BYTES) in error.message


def test_sse_bare_data_lines_count_toward_a_smaller_cap() -> None:
    body = b"data: " + b"x" * 58 + b"\n" + b"data\n" * 7 + b"\n"  # 58 + 7 = 65 bytes
    _refused(SseDecoder(max_event_bytes=64), body)


def test_sse_bare_data_lines_alone_keep_the_buffer_within_the_cap() -> None:
    # A body of nothing but `data` lines (the reported 20 MB body) never frames an event: the
    # pending data grows one newline per line and is refused at the cap, fed in any read size.
    cap = 4096
    decoder = SseDecoder(max_event_bytes=cap)
    high = 0
    with pytest.raises(LlmError) as info:
        for _ in range(10_000):
            decoder.feed(b"data\n" * 50)
            high = max(high, decoder.buffered_bytes)
    assert info.value.code == ErrorCode.MALFORMED_RESPONSE
    assert 0 < high <= cap


def test_sse_colon_data_lines_keep_the_buffer_within_the_cap() -> None:
    cap = 1000
    decoder = SseDecoder(max_event_bytes=cap)
    high = 0
    with pytest.raises(LlmError):
        for _ in range(10_000):
            decoder.feed(b"data: abc\ndata:\n")
            high = max(high, decoder.buffered_bytes)
    assert 0 < high <= cap


def test_sse_complete_line_over_the_cap_in_one_read_is_refused() -> None:
    # A line that arrives whole in one read is measured too, not only one spread over reads.
    _refused(SseDecoder(max_event_bytes=64), b"data: " + b"x" * 100 + b"\n\n")
    _refused(SseDecoder(max_event_bytes=64), b": " + b"c" * 100 + b"\ndata: ok\n\n")


def test_sse_unfinished_line_over_the_cap_is_refused_across_reads() -> None:
    _refused(SseDecoder(max_event_bytes=64), b"data: ", *[b"x" * 10] * 10)


def test_sse_event_exactly_at_the_cap_is_dispatched() -> None:
    one = SseDecoder(max_event_bytes=64)  # a line is capped whole: "data: " + 58 bytes
    assert one.feed(b"data: " + b"x" * 58 + b"\n\n") == [SseEvent(None, "x" * 58)]
    many = SseDecoder(max_event_bytes=64)
    # 3 + 1 + 3 + 1 + 56 = 64 bytes once joined with newlines.
    body = b"data: abc\ndata: def\ndata: " + b"y" * 56 + b"\n\n"
    assert many.feed(body) == [SseEvent(None, "abc\ndef\n" + "y" * 56)]
    assert many.buffered_bytes == 0


def test_sse_cap_is_per_event() -> None:
    decoder = SseDecoder(max_event_bytes=16)
    events = []
    for _ in range(100):
        events += decoder.feed(b"data: 0123456789\ndata\n\n")
    assert events == [SseEvent(None, "0123456789\n")] * 100


@pytest.mark.parametrize("cap", [0, -1, 1.5, True])
def test_sse_cap_must_be_a_positive_integer(cap: object) -> None:
    with pytest.raises(ValueError, match="max_event_bytes"):
        SseDecoder(max_event_bytes=cap)  # type: ignore[arg-type]
