"""`bedrock-converse-stream` translation: every recorded ConverseStream body (whole and split
anywhere) assembles to its expected result; stop reasons, in-stream exceptions, usage buckets,
the end of the stream and reasoning signatures follow the rules of `bedrock_stream`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bedrock_fixtures import (
    assemble,
    check,
    event,
    exception,
    load,
    record,
    stream_cases,
    text_stream,
    translate,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwire.errors import LlmError
from modelwire.vocab import Error, ReasoningBlock, TextBlock, ToolCallBlock, UsageChunk

CASES = stream_cases()
SMALL = [c for c in CASES if c.values[0].stat().st_size <= 8192]
LARGE = [c for c in CASES if c.values[0].stat().st_size > 8192]


@pytest.mark.parametrize("path", CASES)
def test_recording_assembles_to_expected_whole(path: Path) -> None:
    body, expected = load(path)
    check(translate([body]), expected)


@pytest.mark.parametrize("path", CASES)
def test_recording_assembles_to_expected_one_byte_per_read(path: Path) -> None:
    body, expected = load(path)
    check(translate(body[i : i + 1] for i in range(len(body))), expected)


@pytest.mark.parametrize("path", SMALL)
def test_recording_assembles_identically_split_at_every_offset(path: Path) -> None:
    body, expected = load(path)
    whole = translate([body])
    for cut in range(1, len(body)):
        assert translate([body[:cut], body[cut:]]) == whole, cut
    check(whole, expected)


@pytest.mark.parametrize("path", LARGE)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_large_recording_assembles_identically_at_random_splits(
    path: Path, data: st.DataObject
) -> None:
    body, expected = load(path)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=80)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    chunks = translate(reads)
    assert chunks == translate([body])
    check(chunks, expected)


def test_twelve_recordings_are_covered() -> None:
    assert len(CASES) == 12
    assert LARGE  # the 32 KB long-text recording takes the hypothesis path


@pytest.mark.parametrize(
    ("stop", "kind", "code"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("max_tokens", "max-tokens", None),
        ("guardrail_intervened", "error", "CONTENT_FILTER"),
        ("content_filtered", "error", "CONTENT_FILTER"),
        ("model_context_window_exceeded", "error", "CONTEXT_WINDOW_EXCEEDED"),
        ("something_new", "error", "PI_AI_ERROR"),
    ],
)
def test_stop_reason_maps_to_finish(stop: str, kind: str, code: str | None) -> None:
    asm = assemble(translate(text_stream("hi", stop=stop)))
    assert asm.finish.kind == kind
    if code is not None:
        assert isinstance(asm.finish, Error)
        assert asm.finish.failure.code == code


def test_guardrail_refusal_keeps_what_the_model_said() -> None:
    asm = assemble(translate(text_stream("I can't help", stop="guardrail_intervened")))
    assert isinstance(asm.finish, Error)
    assert "I can't help" in asm.finish.failure.message
    assert asm.finish.failure.code == "CONTENT_FILTER"


def test_tool_use_stop_with_a_call_finishes_tool_calls() -> None:
    frames = [
        event("messageStart", {"role": "assistant"}),
        event(
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}},
        ),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": ""}}}),
        event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a"'}}}
        ),
        event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": ":1}"}}}
        ),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("messageStop", {"stopReason": "tool_use"}),
    ]
    asm = assemble(translate(frames))
    assert asm.finish.kind == "tool-calls"
    assert asm.blocks() == [ToolCallBlock("t1", "f", '{"a":1}')]


@pytest.mark.parametrize(
    ("kind", "message", "code", "prefix"),
    [
        ("throttlingException", "Too many requests, please wait", "RATE_LIMIT", "Throttling error"),
        ("throttlingException", "Too many tokens, rate limit", "RATE_LIMIT", "Throttling error"),
        ("validationException", "Malformed input request", "INVALID_REQUEST", "Validation error"),
        (
            "validationException",
            "Input is too long for requested model.",
            "CONTEXT_WINDOW_EXCEEDED",
            "Validation error",
        ),
        ("serviceUnavailableException", "try later", "SERVER", "Service unavailable"),
        ("internalServerException", "oops", "SERVER", "Internal server error"),
        ("modelStreamErrorException", "model failed", "SERVER", "Model stream error"),
        ("accessDeniedException", "not allowed", "AUTH", "Access denied"),
    ],
)
def test_in_stream_exception_is_a_classified_error_finish(
    kind: str, message: str, code: str, prefix: str
) -> None:
    frames = [*text_stream("partial", usage=False)[:2], exception(kind, message)]
    frames.append(event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}}))
    chunks = translate(frames)
    asm = assemble(chunks)
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == code
    assert asm.finish.failure.message == f"{prefix}: {message}"
    assert asm.finish.failure.code != "PI_AI_ERROR"
    assert asm.interrupted_blocks() == [TextBlock("partial")]  # nothing read after the exception
    assert asm.replay_state is None


def test_error_message_type_is_an_error_finish() -> None:
    from modelwire.wire.eventstream import encode_message

    frame = encode_message(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}, b""
    )
    asm = assemble(translate([frame]))
    assert isinstance(asm.finish, Error)
    assert "boom" in asm.finish.failure.message


def test_stream_is_done_only_after_metadata() -> None:
    frames = text_stream("hi")
    chunks = translate([*frames, b"trailing garbage that is never read"])
    asm = assemble(chunks)
    assert asm.finish.kind == "stop"
    assert asm.usage is not None and asm.usage.input_tokens == 5


def test_body_ending_after_message_stop_without_metadata_is_complete_without_usage() -> None:
    chunks = translate(text_stream("hi", usage=False))
    asm = assemble(chunks)
    assert asm.finish.kind == "stop"
    assert asm.usage is None
    assert not any(isinstance(c, UsageChunk) for c in chunks)


def test_body_ending_before_message_stop_is_a_transport_failure() -> None:
    asm = assemble(translate(text_stream("hi")[:3]))
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == "TRANSPORT"
    assert "before messageStop" in asm.finish.failure.message


def test_truncated_frame_at_body_end_is_malformed() -> None:
    frames = text_stream("hi")
    with pytest.raises(LlmError) as err:
        translate([b"".join(frames[:2]) + frames[2][:-3]])
    assert err.value.code == "MALFORMED_RESPONSE"


def test_undecodable_event_payload_is_malformed() -> None:
    from modelwire.wire.eventstream import encode_message

    bad = encode_message({":message-type": "event", ":event-type": "messageStop"}, b"{not json")
    with pytest.raises(LlmError) as err:
        translate([bad])
    assert err.value.code == "MALFORMED_RESPONSE"
    assert "br" in err.value.message


def test_usage_goes_to_disjoint_buckets_with_cache_read_and_write() -> None:
    frames = text_stream("hi")[:-1]
    usage = {
        "inputTokens": 11,
        "outputTokens": 7,
        "cacheReadInputTokens": 300,
        "cacheWriteInputTokens": 40,
        "totalTokens": 358,
    }
    frames.append(event("metadata", {"usage": usage}))
    got = assemble(translate(frames)).usage
    assert got is not None
    assert (got.input_tokens, got.output_tokens) == (11, 7)
    assert (got.cache_read_tokens, got.cache_write_tokens) == (300, 40)
    assert got.reasoning_tokens is None


def test_reasoning_signature_is_kept_byte_exact_in_the_replay_envelope() -> None:
    signature = "Eu0C+/==" * 5
    frames = [
        event("messageStart", {"role": "assistant"}),
        event(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "think"}}},
        ),
        event(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": signature[:9]}}},
        ),
        event(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": signature[9:]}}},
        ),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        *text_stream("answer")[1:],
    ]
    frames[5] = event("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "answer"}})
    frames[6] = event("contentBlockStop", {"contentBlockIndex": 1})
    asm = assemble(translate(frames))
    assert asm.blocks() == [ReasoningBlock("think"), TextBlock("answer")]
    state = asm.replay_state
    assert state is not None
    assert state.blocks == (
        {"type": "reasoning", "thinking_signature": signature},
        {"type": "text"},
    )


def test_redacted_reasoning_keeps_its_blob_and_streams_a_placeholder() -> None:
    frames = [
        event(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "AAEC"}}},
        ),
        event(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "AwQ="}}},
        ),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "ok"}}),
        event("messageStop", {"stopReason": "end_turn"}),
    ]
    asm = assemble(translate(frames))
    assert asm.blocks() == [ReasoningBlock("[Reasoning redacted]"), TextBlock("ok")]
    state = asm.replay_state
    assert state is not None and state.blocks is not None
    # two base64 pieces of one blob: the bytes joined (00 01 02 + 03 04), re-encoded
    assert state.blocks[0] == {
        "type": "reasoning",
        "thinking_signature": "AAECAwQ=",
        "redacted": True,
    }


def test_server_side_tool_blocks_are_not_client_calls() -> None:
    body, _ = load(next(c.values[0] for c in CASES if "server-code" in c.id))
    rec = record()
    asm = assemble(translate([body], rec))
    calls = [b for b in asm.blocks() if isinstance(b, ToolCallBlock)]
    assert [c.name for c in calls] == ["final_result"]
    assert rec.server_tool_loop


def test_empty_text_delta_opens_no_block() -> None:
    frames = [
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": ""}}),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "hi"}}),
        event("messageStop", {"stopReason": "end_turn"}),
    ]
    assert assemble(translate(frames)).blocks() == [TextBlock("hi")]


def test_answer_tool_input_streams_as_the_answer_text_and_is_a_plain_stop() -> None:
    frames = [
        event(
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t", "name": "City"}}},
        ),
        event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"c"'}}}
        ),
        event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": ":1}"}}}
        ),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("messageStop", {"stopReason": "tool_use"}),
    ]
    asm = assemble(translate(frames, record(answer_tool="City")))
    assert asm.finish.kind == "stop"
    assert asm.blocks() == [TextBlock('{"c":1}')]


def test_clean_stop_with_prompt_over_the_window_is_context_overflow() -> None:
    frames = text_stream("hi")[:-1]
    frames.append(event("metadata", {"usage": {"inputTokens": 500, "outputTokens": 1}}))
    asm = assemble(translate(frames, record(context_window=100)))
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == "CONTEXT_WINDOW_EXCEEDED"


def test_expected_files_pin_the_stop_signal_the_translator_reads() -> None:
    for case in CASES:
        _, expected = load(case.values[0])
        assert expected["finish"] in ("end_turn", "tool_use"), json.dumps(expected)[:80]
