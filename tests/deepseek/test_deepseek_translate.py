"""Spec G.3 (translate.spec, 26): DeepSeek payloads → chunks, rules B30-B39."""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelwire import (
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    LlmError,
    MaxTokens,
    ReasoningBlock,
    ReasoningDelta,
    ReplayEnvelope,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolCalls,
    UsageChunk,
)
from modelwire.adapters.deepseek.translate import Translator


def run(*payloads: Any, done: bool = True) -> list[StreamChunk]:
    t = Translator()
    out: list[StreamChunk] = []
    for p in payloads:
        t.push(p if isinstance(p, str) else json.dumps(p), out)
    if done:
        t.push("[DONE]", out)
        assert t.done
    return out


def delta(finish: str | None = None, usage: Any = None, **d: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"choices": [{"delta": d, "finish_reason": finish}]}
    if usage is not None:
        payload["usage"] = usage
    return payload


U52 = {"prompt_tokens": 5, "completion_tokens": 2}


def test_g3_01_text_then_finish_and_usage_deferred_to_done() -> None:
    t = Translator()
    out: list[StreamChunk] = []
    t.push(json.dumps(delta(content="h")), out)
    t.push(json.dumps(delta(content="i", finish="stop", usage=U52)), out)
    assert out == [BlockStart(0, "text"), TextDelta(0, "h"), TextDelta(0, "i")]
    t.push("[DONE]", out)
    assert out[3:] == [
        BlockEnd(0, TextBlock("hi")),
        UsageChunk(TokenUsage(5, 2)),
        Finish(Stop()),
    ]


def test_g3_02_chunks_assemble_to_text_message() -> None:
    out = run(delta(content="h"), delta(content="i", finish="stop"))
    ends = [c.block for c in out if isinstance(c, BlockEnd)]
    assert ends == [TextBlock("hi")] and out[-1] == Finish(Stop())


def test_g3_03_empty_first_reasoning_chunk_opens_nothing() -> None:
    out = run(delta(role="assistant", content=None, reasoning_content=""), delta(content="x"))
    assert out[0] == BlockStart(0, "text")


def test_g3_04_reasoning_then_text_separate_blocks_closed_in_open_order() -> None:
    out = run(delta(reasoning_content="r"), delta(content="t"), delta(reasoning_content="2"))
    assert out == [
        BlockStart(0, "reasoning"),
        ReasoningDelta(0, "r"),
        BlockStart(1, "text"),
        TextDelta(1, "t"),
        ReasoningDelta(0, "2"),
        BlockEnd(0, ReasoningBlock("r2")),
        BlockEnd(1, TextBlock("t")),
        Finish(Stop(), INFERRED),  # no finish_reason before [DONE]: inferred, and said so
    ]


INFERRED = ReplayEnvelope({"extras": {"finish": "inferred"}})
"""The replay state of a finish inferred from ``[DONE]`` alone (no other response fact)."""


def test_g3_05_no_reasoning_field_opens_only_text() -> None:
    out = run(delta(content="a"))
    assert [c for c in out if isinstance(c, BlockStart)] == [BlockStart(0, "text")]


def test_g3_06_fragmented_tool_call_reassembles() -> None:
    out = run(
        delta(
            tool_calls=[
                {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": '{"a"'}}
            ]
        ),
        delta(tool_calls=[{"index": 0, "function": {"arguments": ":1}"}}]),
        delta(finish="tool_calls", usage=U52),
    )
    assert out == [
        BlockStart(0, "tool-call"),
        ToolCallDelta(0, "call_1", '{"a"', "f"),
        ToolCallDelta(0, "call_1", ":1}", "f"),
        BlockEnd(0, ToolCallBlock("call_1", "f", '{"a":1}')),
        UsageChunk(TokenUsage(5, 2)),
        Finish(ToolCalls()),
    ]


def test_g3_07_two_wire_indices_two_blocks() -> None:
    out = run(
        delta(tool_calls=[{"index": 0, "id": "a", "function": {"name": "x", "arguments": "1"}}]),
        delta(tool_calls=[{"index": 1, "id": "b", "function": {"name": "y", "arguments": "2"}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": "3"}}]),
    )
    ends = [c for c in out if isinstance(c, BlockEnd)]
    assert ends == [
        BlockEnd(0, ToolCallBlock("a", "x", "13")),
        BlockEnd(1, ToolCallBlock("b", "y", "2")),
    ]


def test_g3_08_text_then_tool_distinct_indices() -> None:
    out = run(
        delta(content="t"), delta(tool_calls=[{"index": 0, "id": "c", "function": {"name": "n"}}])
    )
    assert [c for c in out if isinstance(c, BlockStart)] == [
        BlockStart(0, "text"),
        BlockStart(1, "tool-call"),
    ]


def test_g3_09_trailing_usage_only_chunk_emitted_before_finish() -> None:
    out = run(
        {"choices": [{"delta": {"content": "x"}, "finish_reason": "stop"}], "usage": None},
        {"choices": [], "usage": U52},
    )
    assert out[-2:] == [UsageChunk(TokenUsage(5, 2)), Finish(Stop())]


def test_g3_10_last_usage_wins() -> None:
    out = run(
        delta(content="x", usage=U52), delta(usage={"prompt_tokens": 9, "completion_tokens": 4})
    )
    assert [c for c in out if isinstance(c, UsageChunk)] == [UsageChunk(TokenUsage(9, 4))]


def test_g3_11_no_finish_reason_is_stop() -> None:
    # issue 33: [DONE] completes the response; the finish is inferred and the log says so
    assert run(delta(content="x"))[-1] == Finish(Stop(), INFERRED)


def test_no_finish_reason_with_a_tool_call_is_an_inferred_tool_calls_finish() -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
    out = run(delta(tool_calls=[call]))
    assert out[-1] == Finish(ToolCalls(), INFERRED)
    assert BlockEnd(0, ToolCallBlock("c1", "f", "{}")) in out


def test_g3_12_no_usage_no_usage_chunk() -> None:
    assert not [c for c in run(delta(content="x")) if isinstance(c, UsageChunk)]


def test_g3_13_no_choices_payload_then_done_is_empty_response() -> None:
    out = run({"id": "x"})
    assert len(out) == 1 and isinstance(out[0], Finish)
    assert isinstance(out[0].reason, Error) and out[0].reason.failure.code == "EMPTY_RESPONSE"


def test_g3_14_explicit_stop_without_blocks_usage_then_empty_response() -> None:
    out = run(delta(finish="stop", usage=U52))
    assert out[0] == UsageChunk(TokenUsage(5, 2))
    reason = out[1].reason  # type: ignore[union-attr]
    assert isinstance(reason, Error)
    assert reason.failure.message == "model returned a completed response with no content"
    assert reason.failure.code == "EMPTY_RESPONSE"


def test_g3_15_reasoning_only_stream_stays_stop() -> None:
    assert run(delta(reasoning_content="r", finish="stop"))[-1] == Finish(Stop())


def test_g3_16_length_without_blocks_stays_max_tokens() -> None:
    assert run(delta(finish="length")) == [Finish(MaxTokens())]


def test_g3_17_invalid_json_is_malformed_response() -> None:
    with pytest.raises(LlmError) as info:
        run("{not json", done=False)
    assert info.value.code == "MALFORMED_RESPONSE"
    assert "malformed SSE payload" in info.value.message


def test_g3_17b_wrong_shape_json_is_malformed_response() -> None:
    with pytest.raises(LlmError) as info:
        run('{"choices":[null]}', done=False)
    assert info.value.code == "MALFORMED_RESPONSE"


def test_g3_18_payload_source_without_done_is_not_done() -> None:
    t = Translator()
    t.push(json.dumps(delta(content="x")), [])
    assert not t.done  # the adapter raises STREAM_CLOSED "... without [DONE]" (adapter tests)


@pytest.mark.parametrize(
    ("wire", "reason"),
    [("stop", Stop()), ("tool_calls", ToolCalls()), ("length", MaxTokens())],
)
def test_g3_19_finish_reason_mapping(wire: str, reason: Any) -> None:
    assert run(delta(content="x", finish=wire))[-1] == Finish(reason)


@pytest.mark.parametrize(
    ("wire", "code"),
    [
        ("content_filter", "CONTENT_FILTER"),
        ("insufficient_system_resource", "INSUFFICIENT_SYSTEM_RESOURCE"),
        ("mystery_reason", "UNKNOWN"),
        ("Rate_Limit", "UNKNOWN"),  # never a code made from provider text
    ],
)
def test_g3_20_other_finish_reasons_are_errors_with_a_code_from_the_table(
    wire: str, code: str
) -> None:
    reason = run(delta(content="x", finish=wire))[-1].reason  # type: ignore[union-attr]
    assert isinstance(reason, Error)
    assert (reason.failure.message, reason.failure.code) == (f"model stopped: {wire}", code)


def test_g3_21_full_live_usage_shape() -> None:
    usage = {
        "prompt_tokens": 283,
        "completion_tokens": 69,
        "prompt_cache_hit_tokens": 256,
        "prompt_cache_miss_tokens": 27,
        "prompt_tokens_details": {"cached_tokens": 256},
        "completion_tokens_details": {"reasoning_tokens": 24},
    }
    out = run(delta(content="x", usage=usage))
    assert UsageChunk(TokenUsage(27, 69, 256, None, 24)) in out


def test_g3_22_prompt_cache_hit_tokens_without_details() -> None:
    out = run(
        delta(
            content="x",
            usage={"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 8},
        )
    )
    assert UsageChunk(TokenUsage(2, 2, 8)) in out


def test_g3_22b_cache_hits_above_prompt_never_make_a_negative_input_bucket() -> None:
    out = run(
        delta(
            content="x",
            usage={"prompt_tokens": 5, "completion_tokens": 2, "prompt_cache_hit_tokens": 9},
        )
    )
    assert UsageChunk(TokenUsage(0, 2, 9)) in out


def test_g3_23_absent_optional_usage_fields() -> None:
    u = next(c for c in run(delta(content="x", usage=U52)) if isinstance(c, UsageChunk)).usage
    assert (u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens) == (None, None, None)


def test_g3_24_deltas_without_id_and_name() -> None:
    out = run(delta(tool_calls=[{"index": 0, "function": {"arguments": "{}"}}]))
    assert ToolCallDelta(0, "", "{}") in out
    assert BlockEnd(0, ToolCallBlock("", "", "{}")) in out


def test_g3_25_function_without_arguments() -> None:
    out = run(delta(tool_calls=[{"index": 0, "id": "c", "function": {"name": "n"}}]))
    assert ToolCallDelta(0, "c", "", "n") in out


def test_g3_26_tool_call_without_function_object() -> None:
    out = run(delta(tool_calls=[{"index": 0, "id": "c"}]))
    d = [c for c in out if isinstance(c, ToolCallDelta)]
    assert d == [ToolCallDelta(0, "c", "")] and d[0].name is None


def test_b_worked_sse_example_chunks() -> None:
    out = run(
        delta(role="assistant", content=None, reasoning_content=""),
        delta(reasoning_content="Check the dir."),
        delta(content="Listing."),
        delta(
            tool_calls=[
                {
                    "index": 0,
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": ""},
                }
            ]
        ),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '{"path":"src"}'}}]),
        delta(
            content="",
            finish="tool_calls",
            usage={
                "prompt_tokens": 1200,
                "completion_tokens": 40,
                "prompt_cache_hit_tokens": 1024,
                "prompt_cache_miss_tokens": 176,
                "completion_tokens_details": {"reasoning_tokens": 12},
            },
        ),
    )
    assert out == [
        BlockStart(0, "reasoning"),
        ReasoningDelta(0, "Check the dir."),
        BlockStart(1, "text"),
        TextDelta(1, "Listing."),
        BlockStart(2, "tool-call"),
        ToolCallDelta(2, "call_0", "", "list_dir"),
        ToolCallDelta(2, "call_0", '{"path":"src"}', "list_dir"),
        BlockEnd(0, ReasoningBlock("Check the dir.")),
        BlockEnd(1, TextBlock("Listing.")),
        BlockEnd(2, ToolCallBlock("call_0", "list_dir", '{"path":"src"}')),
        UsageChunk(TokenUsage(176, 40, 1024, None, 12)),
        Finish(ToolCalls()),
    ]


@pytest.mark.parametrize(
    ("error", "code"),
    [
        pytest.param(
            {"message": "Server overloaded", "type": "server_error"}, "SERVER", id="server"
        ),
        pytest.param(
            {"message": "Rate limit reached", "type": "rate_limit"}, "RATE_LIMIT", id="rate"
        ),
        pytest.param({"message": "x", "code": "insufficient_quota"}, "QUOTA", id="quota"),
        pytest.param({"message": "bad", "code": 400}, "INVALID_REQUEST", id="numeric-400"),
    ],
)
def test_in_band_error_object_ends_with_error_finish(error: dict[str, Any], code: str) -> None:
    t = Translator()
    out: list[StreamChunk] = []
    t.push(json.dumps(delta(content="partial")), out)
    t.push(json.dumps({"error": error}), out)
    assert t.done
    reason = out[-1].reason  # type: ignore[union-attr]
    assert isinstance(reason, Error) and reason.failure.code == code
    assert error["message"] in reason.failure.message


def named(payload: dict[str, Any], rid: str | None = "r-1", model: str | None = "m-1") -> Any:
    return {**payload, "id": rid, "model": model}


@pytest.mark.parametrize(
    ("finish", "reason"), [("stop", Stop()), ("tool_calls", ToolCalls()), ("length", MaxTokens())]
)
def test_a_successful_finish_names_the_response_id_and_model(finish: str, reason: Any) -> None:
    out = run(
        named(delta(content="a")),  # the first id and model win
        named(delta(content="b", finish=finish), "r-2", "m-2"),
        named({"choices": [], "usage": U52}, None, None),
    )
    envelope = ReplayEnvelope({"response_id": "r-1", "response_model": "m-1"})
    assert out[-2:] == [UsageChunk(TokenUsage(5, 2)), Finish(reason, envelope)]


def test_a_stream_naming_its_id_late_only_its_model_or_nothing() -> None:
    late = run(
        named(delta(content="a"), None), named(delta(content="b", finish="stop"), "r-2", None)
    )
    assert late[-1] == Finish(
        Stop(), ReplayEnvelope({"response_id": "r-2", "response_model": "m-1"})
    )
    only_model = run(named(delta(content="a", finish="stop"), None))
    assert only_model[-1] == Finish(Stop(), ReplayEnvelope({"response_model": "m-1"}))
    assert run(delta(content="a", finish="stop"))[-1] == Finish(Stop())  # replay_state None


def test_an_error_finish_carries_no_replay_state() -> None:
    for out in (
        run(named(delta(finish="stop"))),  # EMPTY_RESPONSE
        run(named(delta(content="a", finish="content_filter"))),
        run(named(delta(content="a")), named({"error": {"message": "x"}}), done=False),
    ):
        last = out[-1]
        assert isinstance(last, Finish) and isinstance(last.reason, Error)
        assert last.replay_state is None
