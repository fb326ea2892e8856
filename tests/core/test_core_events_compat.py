"""The new event facts (a limit that ended a turn, an output correction, a tool's error class)
round-trip, and payloads written before them still decode."""

from __future__ import annotations

import msgspec

from modelwire.events import (
    OutputCorrection,
    ToolResultRecord,
    TurnCompleted,
    TurnEnd,
    TurnLimit,
    decode_event_data,
    encode_event_data,
    event_types,
)
from modelwire.vocab import tool_result_message


def _round_trip(data: msgspec.Struct) -> msgspec.Struct:
    name, raw = encode_event_data("s", data)
    return decode_event_data("s", 0, name, raw)


def test_new_facts_round_trip_under_their_names() -> None:
    assert event_types()["output/correction"] is OutputCorrection
    limit = TurnEnd(3, TurnLimit("total_tokens", 100, 140))
    assert _round_trip(limit) == limit
    assert msgspec.json.encode(limit.reason) == (
        b'{"kind":"limit","limit":"total_tokens","max":100,"used":140}'
    )
    correction = OutputCorrection(1, 2, 1, "Expected `int` - at `$.age`")
    assert _round_trip(correction) == correction
    record = ToolResultRecord(
        turn=1,
        step=1,
        call_id="c",
        name="t",
        message=tool_result_message("c", "boom", is_error=True),
        is_error=True,
        error_code="TOOL_FAILED",
        error_class="ValueError",
    )
    assert _round_trip(record) == record


def test_payloads_written_before_the_change_still_decode() -> None:
    message = msgspec.json.encode(tool_result_message("c", "boom", is_error=True)).decode()
    old = (
        '{"turn":1,"step":1,"call_id":"c","name":"t","message":' + message + ","
        '"is_error":true,"error_code":"TOOL_FAILED"}'
    )
    record = decode_event_data("s", 4, "tool/result", old.encode())
    assert isinstance(record, ToolResultRecord)
    assert (record.error_code, record.error_class) == ("TOOL_FAILED", None)
    end = decode_event_data("s", 5, "turn/end", b'{"turn":1,"reason":{"kind":"completed"}}')
    assert end == TurnEnd(1, TurnCompleted())
    fresh = ToolResultRecord(turn=1, step=1, call_id="c", name="t", message=record.message)
    assert b"error_class" not in encode_event_data("s", fresh)[1]  # omitted when unset
