"""The AWS event-stream framer: recorded Bedrock bodies decode identically however they are
split; damaged, oversized and truncated frames are MALFORMED_RESPONSE; message types map to
events as `wire.eventstream` says."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire.errors import LlmError
from modelwire.wire.eventstream import (
    MAX_MESSAGE_BYTES,
    EventStreamDecoder,
    decode_headers,
    encode_message,
)
from modelwire.wire.sse import SseEvent

FOLDER = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "bedrock-converse"


def _recordings() -> list[Path]:
    if not FOLDER.is_dir():
        raise RuntimeError(f"recorded fixtures absent: {FOLDER} (CI must fail, not skip)")
    found = sorted(FOLDER.glob("*.eventstream"))
    if len(found) != 12:
        raise RuntimeError(f"expected 12 recordings in {FOLDER}, found {len(found)}")
    return found


RECORDINGS = _recordings()
SMALL = [p for p in RECORDINGS if p.stat().st_size <= 8192]
LARGE = [p for p in RECORDINGS if p.stat().st_size > 8192]
IDS = [p.stem for p in RECORDINGS]


def _decode(reads: list[bytes]) -> list[SseEvent]:
    decoder = EventStreamDecoder()
    out = [e for data in reads for e in decoder.feed(data)]
    out.extend(decoder.close())
    return out


def _event(kind: str, payload: bytes = b"{}") -> bytes:
    return encode_message({":message-type": "event", ":event-type": kind}, payload)


def _malformed(reads: list[bytes]) -> LlmError:
    with pytest.raises(LlmError) as err:
        _decode(reads)
    assert err.value.code == "MALFORMED_RESPONSE"
    assert "event stream" in err.value.message
    return err.value


@pytest.mark.parametrize("path", RECORDINGS, ids=IDS)
def test_recording_decodes_to_its_events_whole_and_byte_by_byte(path: Path) -> None:
    body = path.read_bytes()
    whole = _decode([body])
    assert whole
    assert whole[0].event == "messageStart"
    assert whole[-1].event == "metadata"
    assert _decode([body[i : i + 1] for i in range(len(body))]) == whole


@pytest.mark.parametrize("path", SMALL, ids=[p.stem for p in SMALL])
def test_recording_split_at_every_offset_decodes_identically(path: Path) -> None:
    body = path.read_bytes()
    whole = _decode([body])
    for cut in range(1, len(body)):
        assert _decode([body[:cut], body[cut:]]) == whole, cut


@pytest.mark.parametrize("path", LARGE, ids=[p.stem for p in LARGE])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_large_recording_decodes_identically_at_random_splits(
    path: Path, data: st.DataObject
) -> None:
    body = path.read_bytes()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=100)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert _decode(reads) == _decode([body])


def test_event_message_is_named_by_its_event_type_with_utf8_payload() -> None:
    frame = _event("contentBlockDelta", '{"delta":{"text":"30°C"}}'.encode())
    assert _decode([frame]) == [SseEvent("contentBlockDelta", '{"delta":{"text":"30°C"}}')]


def test_exception_message_is_prefixed_with_its_exception_type() -> None:
    frame = encode_message(
        {":message-type": "exception", ":exception-type": "throttlingException"},
        b'{"message":"slow down"}',
    )
    assert _decode([frame]) == [
        SseEvent("exception:throttlingException", '{"message":"slow down"}')
    ]


def test_error_message_carries_its_code_and_error_message_header() -> None:
    frame = encode_message(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}, b""
    )
    assert _decode([frame]) == [SseEvent("error:InternalFailure", "boom")]


def test_non_string_header_types_are_skipped() -> None:
    block = (
        b"\x04flag\x00"  # bool true
        + b"\x03num\x04"
        + struct.pack(">i", 7)  # int32
        + b"\x02id\x09"
        + bytes(16)  # uuid
        + b"\x02ts\x08"
        + struct.pack(">q", 1)  # timestamp
        + b"\x03raw\x06"
        + struct.pack(">H", 2)
        + b"\x00\xff"  # byte array
        + b"\x05:name\x07"
        + struct.pack(">H", 1)
        + b"x"
    )
    assert decode_headers(block) == {":name": "x"}


def test_bad_prelude_crc_is_malformed() -> None:
    frame = bytearray(_event("messageStart"))
    frame[8] ^= 0xFF
    assert "prelude CRC" in _malformed([bytes(frame)]).message


def test_bad_message_crc_is_malformed() -> None:
    frame = bytearray(_event("messageStart", b'{"role":"assistant"}'))
    frame[-6] ^= 0x01  # a payload byte: the message CRC no longer matches
    assert "message CRC" in _malformed([bytes(frame)]).message


def test_length_over_the_cap_is_malformed_before_buffering_it() -> None:
    prelude = struct.pack(">II", MAX_MESSAGE_BYTES + 1, 0)
    head = prelude + struct.pack(">I", zlib.crc32(prelude))
    assert "outside" in _malformed([head]).message


def test_headers_longer_than_the_message_are_malformed() -> None:
    prelude = struct.pack(">II", 20, 10)
    head = prelude + struct.pack(">I", zlib.crc32(prelude))
    assert "headers length" in _malformed([head + bytes(8)]).message


def test_frame_cut_off_at_the_end_of_the_body_is_malformed() -> None:
    frame = _event("messageStart")
    error = _malformed([frame, frame[:-1]])
    assert "body ended inside a message" in error.message


def test_unknown_header_value_type_is_malformed() -> None:
    block = b"\x04name\x0b\x00"
    frame = _raw_frame(block, b"{}")
    assert "unknown value type 11" in _malformed([frame]).message


def test_unknown_message_type_is_malformed() -> None:
    frame = encode_message({":message-type": "surprise"}, b"{}")
    assert "unknown :message-type" in _malformed([frame]).message


def test_event_without_event_type_is_malformed() -> None:
    assert ":event-type" in _malformed([encode_message({":message-type": "event"}, b"")]).message


def test_non_utf8_payload_is_malformed() -> None:
    assert "not UTF-8" in _malformed([_event("messageStart", b"\xff\xfe")]).message


def test_good_messages_before_a_damaged_one_in_the_same_read_are_delivered_first() -> None:
    good = _event("messageStart")
    bad = bytearray(_event("messageStop"))
    bad[-1] ^= 0xFF
    decoder = EventStreamDecoder()
    seen: list[SseEvent] = []
    with pytest.raises(LlmError) as err:
        seen.extend(decoder.feed(good + bytes(bad)))
    assert err.value.code == "MALFORMED_RESPONSE"
    assert seen == [SseEvent("messageStart", "{}")]
    with pytest.raises(LlmError):
        decoder.feed(good)  # a failed decoder takes nothing more


def test_large_message_fed_in_small_reads_is_buffered_not_reconcatenated() -> None:
    payload = b'{"p":"' + b"x" * (2 * 1024 * 1024) + b'"}'
    frame = _event("contentBlockDelta", payload)
    decoder = EventStreamDecoder()
    events: list[SseEvent] = []
    for i in range(0, len(frame), 512):
        events.extend(decoder.feed(frame[i : i + 512]))
    assert len(events) == 1
    assert len(events[0].data) == len(payload)
    assert decoder.close() == []


def _raw_frame(block: bytes, payload: bytes) -> bytes:
    total = 16 + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + block + payload
    return body + struct.pack(">I", zlib.crc32(body))
