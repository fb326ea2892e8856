"""`GoogleTranslator` rules the recordings do not pin: malformed and truncated streams, refusals,
rejected function calls, in-stream errors, blocked prompts, ids, signatures, usage buckets and
Vertex streamed arguments."""

from __future__ import annotations

from typing import Any

import pytest
from google_fixtures import assemble, sse, translate

from modelwire.errors import LlmError
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    UsageChunk,
)


def _event(
    *parts: dict[str, Any], finish: str | None = None, said: str | None = None, **extra: Any
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    if said is not None:
        candidate["finishMessage"] = said
    return {"candidates": [candidate], "responseId": "resp-1", **extra}


USAGE: dict[str, Any] = {"usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2}}


def test_a_non_json_data_line_is_one_malformed_response_failure() -> None:
    reads = [*sse(_event({"text": "hi"})), b"data: {not json\r\n\r\n", *sse(_event(finish="STOP"))]
    with pytest.raises(LlmError) as info:
        translate(reads)
    assert info.value.code == "MALFORMED_RESPONSE"
    assert "gem" in info.value.message and "Gemini" in info.value.message


def test_json_that_is_not_an_event_object_is_malformed() -> None:
    with pytest.raises(LlmError) as info:
        translate([b"data: [1, 2]\r\n\r\n"])
    assert info.value.code == "MALFORMED_RESPONSE"


def test_a_stream_without_finish_reason_ends_in_the_truncated_stream_failure() -> None:
    chunks, _ = translate(sse(_event({"text": "half an ans"}, **USAGE)))
    finish = chunks[-1]
    assert isinstance(finish, Finish) and isinstance(finish.reason, Error)
    assert finish.reason.failure.code == "TRANSPORT"
    assert "finishReason" in finish.reason.failure.message
    assert finish.replay_state is None


def test_an_empty_body_is_the_truncated_stream_failure() -> None:
    chunks, _ = translate([b""])
    assert isinstance(chunks[-1], Finish) and isinstance(chunks[-1].reason, Error)
    assert chunks[-1].reason.failure.code == "TRANSPORT"


def test_nothing_after_the_finishing_event_is_read() -> None:
    reads = sse(_event({"text": "done"}, finish="STOP", **USAGE), "garbage that is not json")
    chunks, _ = translate(reads)
    assert assemble(chunks).finish.kind == "stop"


@pytest.mark.parametrize(
    "reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY"]
)
def test_filter_finish_reasons_are_one_content_filter_refusal(reason: str) -> None:
    event = _event({"text": "I was saying"}, finish=reason, said="policy 12", **USAGE)
    event["candidates"][0]["safetyRatings"] = [
        {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
    ]
    asm = assemble(translate(sse(event))[0])
    assert isinstance(asm.finish, Error)
    failure = asm.finish.failure
    assert failure.code == "CONTENT_FILTER"
    assert reason in failure.message and "HARM_CATEGORY_DANGEROUS_CONTENT" in failure.message
    assert '"fixture-model"' in failure.message and "policy 12" in failure.message
    assert asm.usage is not None and asm.usage.input_tokens == 10


@pytest.mark.parametrize("reason", ["MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"])
def test_a_rejected_function_call_is_a_malformed_response_error(reason: str) -> None:
    event = _event(finish=reason, said="Malformed function call: foo(")
    asm = assemble(translate(sse(event))[0])
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == "MALFORMED_RESPONSE"
    assert reason in asm.finish.failure.message and "foo(" in asm.finish.failure.message


def test_other_after_some_text_is_an_error_not_a_clean_stop() -> None:
    asm = assemble(translate(sse(_event({"text": "partial"}), _event(finish="OTHER")))[0])
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == "PI_AI_ERROR"
    assert "OTHER" in asm.finish.failure.message


def test_a_blocked_prompt_is_content_filter() -> None:
    event = {
        "promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": "unsafe prompt"},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
    }
    chunks, _ = translate(sse(event))
    asm = assemble(chunks)
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == "CONTENT_FILTER"
    assert "blockReason SAFETY" in asm.finish.failure.message
    assert "unsafe prompt" in asm.finish.failure.message
    assert asm.usage is not None and asm.usage.input_tokens == 7


@pytest.mark.parametrize(
    ("status", "code"),
    [("RESOURCE_EXHAUSTED", "RATE_LIMIT"), ("UNAVAILABLE", "SERVER"), ("INTERNAL", "SERVER")],
)
def test_an_in_stream_error_object_fails_with_its_status_code(status: str, code: str) -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": status}}
    chunks, _ = translate([*sse(_event({"text": "so far"}), error)])
    asm = assemble(chunks)
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == code
    assert "The model is overloaded." in asm.finish.failure.message
    assert asm.interrupted_blocks() == [TextBlock("so far")]


def test_gemini_ids_are_kept_missing_and_duplicate_ones_minted_unique() -> None:
    calls = [
        {"functionCall": {"name": "a", "args": {}, "id": "x1"}},
        {"functionCall": {"name": "b", "args": {}, "id": "x1"}},  # a duplicate: re-minted
        {"functionCall": {"name": "c", "args": {"k": [1, {"z": None}]}}},
    ]
    first = assemble(translate(sse(_event(*calls, finish="STOP")))[0])
    again = assemble(translate(sse(_event(*calls, finish="STOP")))[0])
    ids = [b.id for b in first.blocks() if isinstance(b, ToolCallBlock)]
    assert ids[0] == "x1" and len(set(ids)) == 3
    assert ids == [b.id for b in again.blocks() if isinstance(b, ToolCallBlock)]  # stable
    assert all("resp-1" in i for i in ids[1:])
    assert first.finish.kind == "tool-calls"  # a STOP with function calls is a tool-use stop
    args = [b.arguments for b in first.blocks() if isinstance(b, ToolCallBlock)]
    assert args == ["{}", "{}", '{"k":[1,{"z":null}]}']


def test_only_candidate_zero_is_read() -> None:
    event = {
        "candidates": [
            {"index": 1, "content": {"parts": [{"text": "second"}]}, "finishReason": "STOP"},
            {"index": 0, "content": {"parts": [{"text": "first"}]}, "finishReason": "STOP"},
        ],
        **USAGE,
    }
    asm = assemble(translate(sse(event))[0])
    assert [b.text for b in asm.blocks() if isinstance(b, TextBlock)] == ["first"]


def test_text_and_thought_parts_alternate_blocks_and_keep_their_last_signature() -> None:
    events = sse(
        _event({"text": "think ", "thought": True}, {"text": "more", "thought": True}),
        _event({"text": "ans", "thoughtSignature": "c2lnMQ=="}),
        _event({"text": "wer"}, {"text": "", "thoughtSignature": "c2lnMg=="}),
        _event({"text": ""}, finish="STOP", **USAGE),
    )
    chunks, _ = translate(events)
    asm = assemble(chunks)
    blocks = asm.blocks()
    assert blocks == [ReasoningBlock("think more"), TextBlock("answer")]
    assert [c.block_type for c in chunks if isinstance(c, BlockStart)] == ["reasoning", "text"]
    state = asm.replay_state
    assert state is not None and state.blocks is not None
    assert state.blocks[1] == {"type": "text", "text_signature": "c2lnMg=="}


def test_an_empty_part_after_a_call_opens_no_block() -> None:
    events = sse(
        _event({"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "QUJD"}),
        _event({"text": ""}, finish="STOP", **USAGE),
    )
    asm = assemble(translate(events)[0])
    assert [type(b) for b in asm.blocks()] == [ToolCallBlock]
    state = asm.replay_state
    assert state is not None and state.blocks == (
        {"type": "tool-call", "thought_signature": "QUJD"},
    )


def test_usage_buckets_are_disjoint_with_cache_and_thoughts() -> None:
    usage = {
        "promptTokenCount": 1000,
        "cachedContentTokenCount": 600,
        "candidatesTokenCount": 40,
        "thoughtsTokenCount": 60,
        "totalTokenCount": 1100,
    }
    chunks, _ = translate(sse(_event({"text": "x"}, finish="STOP", usageMetadata=usage)))
    reported = next(c for c in chunks if isinstance(c, UsageChunk)).usage
    assert (reported.input_tokens, reported.cache_read_tokens) == (400, 600)
    assert (reported.output_tokens, reported.reasoning_tokens) == (100, 60)
    assert reported.cache_write_tokens is None


def test_a_stream_that_reports_no_usage_has_no_usage_chunk() -> None:
    chunks, _ = translate(sse(_event({"text": "x"}, finish="STOP")))
    assert not any(isinstance(c, UsageChunk) for c in chunks)


def test_a_clean_stop_whose_prompt_exceeds_the_window_is_context_overflow() -> None:
    usage: dict[str, Any] = {"usageMetadata": {"promptTokenCount": 5000, "candidatesTokenCount": 1}}
    chunks, _ = translate(sse(_event({"text": "x"}, finish="STOP", **usage)), context_window=4096)
    asm = assemble(chunks)
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == "CONTEXT_WINDOW_EXCEEDED"


def _partial(path: str, **value: Any) -> dict[str, Any]:
    return {"functionCall": {"partialArgs": [{"jsonPath": path, **value}], "willContinue": True}}


def test_vertex_partial_args_build_nested_objects_arrays_and_scalars() -> None:
    events = sse(
        _event(
            {"functionCall": {"name": "plan", "willContinue": True}, "thoughtSignature": "QQ=="}
        ),
        _event(_partial("$.trip.city", stringValue="San ")),
        _event(_partial("$.trip.city", stringValue="Francisco")),
        _event(_partial("$.trip.days", numberValue=3)),
        _event(_partial("$.stops[1]", stringValue="b")),
        _event(_partial("$.stops[0]", stringValue="a")),
        _event(_partial("$['odd key']", boolValue=True)),
        _event(_partial("$.none", nullValue="NULL_VALUE")),
        _event({"functionCall": {}}),
        _event({"text": ""}, finish="STOP", **USAGE),
    )
    chunks, _ = translate(events)
    asm = assemble(chunks)
    (call,) = [b for b in asm.blocks() if isinstance(b, ToolCallBlock)]
    assert call.name == "plan"
    assert call.arguments == (
        '{"trip":{"city":"San Francisco","days":3},"stops":["a","b"],"odd key":true,"none":null}'
    )
    ends = [c for c in chunks if isinstance(c, BlockEnd)]
    assert len(ends) == 1  # the call closes once, on its empty `functionCall: {}`
    assert asm.replay_state is not None and asm.replay_state.blocks is not None
    assert asm.replay_state.blocks[0]["thought_signature"] == "QQ=="


def test_a_partial_args_path_that_cannot_apply_is_malformed() -> None:
    events = sse(
        _event({"functionCall": {"name": "f", "willContinue": True}}),
        _event(_partial("location", stringValue="x")),
    )
    with pytest.raises(LlmError) as info:
        translate(events)
    assert info.value.code == "MALFORMED_RESPONSE"


def test_a_streamed_call_still_open_at_finish_is_closed_with_its_arguments() -> None:
    events = sse(
        _event({"functionCall": {"name": "f", "willContinue": True}}),
        _event(_partial("$.q", stringValue="abc"), finish="STOP", **USAGE),
    )
    asm = assemble(translate(events)[0])
    (call,) = [b for b in asm.blocks() if isinstance(b, ToolCallBlock)]
    assert call.arguments == '{"q":"abc"}'
    assert asm.finish.kind == "tool-calls"


def test_max_tokens_is_a_max_tokens_finish() -> None:
    asm = assemble(translate(sse(_event({"text": "cut"}, finish="MAX_TOKENS", **USAGE)))[0])
    assert asm.finish.kind == "max-tokens"
    assert asm.blocks() == [TextBlock("cut")]


def test_response_model_is_recorded_when_the_stream_reports_another_model() -> None:
    event = _event({"text": "x"}, finish="STOP", modelVersion="gemini-3.1-pro-preview")
    asm = assemble(translate(sse(event), model="gemini-3-pro-preview")[0])
    assert asm.replay_state is not None
    assert asm.replay_state.response["response_model"] == "gemini-3.1-pro-preview"
    assert asm.replay_state.response["response_id"] == "resp-1"
