"""`mistral-conversations` stream rules on hand-made events: typed content chunks, block
switching, tool-call keys, finish reasons, usage buckets, in-stream errors and malformed data."""

from __future__ import annotations

import re
from typing import Any

import pytest
from compat_fixtures import sse_events, translate

from modelwire.adapters.providers.protocols.mistral_conversations import PROTOCOL
from modelwire.errors import LlmError
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Error,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    UsageChunk,
)


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any) -> Any:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "r1", "model": "magistral-medium-latest", "choices": [choice], **top}


def _think(text: str) -> dict[str, Any]:
    return {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": text}]}]}


USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _run(*events: Any) -> Any:
    return translate(PROTOCOL, [sse_events(*events)], model="magistral-medium-latest")


def test_mistral_typed_chunks_split_reasoning_and_text_into_blocks_in_order() -> None:
    asm, chunks = _run(
        _chunk({"role": "assistant", "content": ""}),
        _chunk(_think("first ")),
        _chunk(_think("thought")),
        _chunk({"content": [{"type": "text", "text": "answer"}]}),
        _chunk(_think("again")),
        _chunk({"content": " more"}, "stop", usage=USAGE),
        "[DONE]",
    )
    assert asm.finish.kind == "stop"
    assert asm.blocks() == [
        ReasoningBlock("first thought"),
        TextBlock("answer"),
        ReasoningBlock("again"),
        TextBlock(" more"),
    ]
    starts = [c.block_type for c in chunks if isinstance(c, BlockStart)]
    assert starts == ["reasoning", "text", "reasoning", "text"]
    # a switch closes the open block at once: each block ends before the next one starts
    order = [(type(c).__name__, c.index) for c in chunks if isinstance(c, (BlockStart, BlockEnd))]
    assert order == [
        ("BlockStart", 0),
        ("BlockEnd", 0),
        ("BlockStart", 1),
        ("BlockEnd", 1),
        ("BlockStart", 2),
        ("BlockEnd", 2),
        ("BlockStart", 3),
        ("BlockEnd", 3),
    ]


def test_mistral_empty_content_opens_no_block() -> None:
    asm, _ = _run(
        _chunk({"content": ""}),
        _chunk({"content": []}),
        _chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": ""}]}]}),
        _chunk({"content": "hi"}, "stop"),
        "[DONE]",
    )
    assert asm.blocks() == [TextBlock("hi")]


def test_mistral_unknown_content_chunk_types_carry_no_text() -> None:
    asm, _ = _run(
        _chunk({"content": [{"type": "reference", "reference_ids": [1]}, {"type": "text"}]}),
        _chunk({"content": "ok"}, "stop"),
        "[DONE]",
    )
    assert asm.blocks() == [TextBlock("ok")]


def test_mistral_own_tool_calls_without_index_are_separate_calls_keyed_by_id() -> None:
    calls = [
        {"id": "AAAAAAAA1", "function": {"name": "a", "arguments": '{"x": 1}'}},
        {"id": "BBBBBBBB2", "function": {"name": "b", "arguments": {"y": [2]}}},
    ]
    asm, _ = _run(_chunk({"content": None, "tool_calls": calls}, "tool_calls", usage=USAGE))
    assert asm.finish.kind == "tool-calls"
    assert asm.blocks() == [
        ToolCallBlock("AAAAAAAA1", "a", '{"x": 1}'),
        ToolCallBlock("BBBBBBBB2", "b", '{"y":[2]}'),  # an arguments object is sent on as JSON
    ]


def test_mistral_incremental_tool_call_is_keyed_by_index_and_keeps_its_first_name() -> None:
    asm, _ = _run(
        _chunk({"tool_calls": [{"index": 0, "id": "call-1", "function": {"name": "f"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"name": "", "arguments": '{"a"'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        _chunk({}, "tool_calls"),
        "[DONE]",
    )
    assert asm.blocks() == [ToolCallBlock("call-1", "f", '{"a": 1}')]


def test_mistral_tool_call_without_id_gets_a_nine_character_id() -> None:
    asm, _ = _run(
        _chunk({"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}, "tool_calls"),
        "[DONE]",
    )
    (call,) = asm.blocks()
    assert isinstance(call, ToolCallBlock)
    assert re.fullmatch(r"[a-zA-Z0-9]{9}", call.id)


def test_mistral_text_before_a_tool_call_is_closed_first() -> None:
    asm, _ = _run(
        _chunk({"content": "let me check"}),
        _chunk({"tool_calls": [{"id": "CCCCCCCC3", "function": {"name": "f", "arguments": "{}"}}]}),
        _chunk({}, "tool_calls"),
        "[DONE]",
    )
    assert asm.blocks() == [TextBlock("let me check"), ToolCallBlock("CCCCCCCC3", "f", "{}")]


@pytest.mark.parametrize(
    ("reason", "kind"), [("length", "max-tokens"), ("model_length", "max-tokens")]
)
def test_mistral_length_finishes_are_max_tokens(reason: str, kind: str) -> None:
    asm, _ = _run(_chunk({"content": "cut"}, reason), "[DONE]")
    assert asm.finish.kind == kind


def test_mistral_error_finish_is_a_server_failure() -> None:
    asm, _ = _run(_chunk({"content": "par"}, "error"), "[DONE]")
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == "SERVER"
    assert "finish_reason" in asm.finish.failure.message
    assert asm.interrupted_blocks() == [TextBlock("par")]


def test_mistral_unknown_finish_reason_is_a_stop_like_pi_ai() -> None:
    asm, _ = _run(_chunk({"content": "x"}, "something_new"), "[DONE]")
    assert asm.finish.kind == "stop"


def test_mistral_stream_without_finish_reason_fails_as_transport() -> None:
    asm, _ = _run(_chunk({"content": "half"}))
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == "TRANSPORT"


def test_mistral_in_stream_error_envelope_ends_the_response() -> None:
    envelope = {
        "object": "error",
        "message": "Rate limit exceeded",
        "type": "rate_limited",
        "code": "1300",
    }
    asm, chunks = _run(_chunk({"content": "a"}), envelope, _chunk({"content": "ignored"}, "stop"))
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.code == "RATE_LIMIT"
    assert "rate_limited 1300" in asm.finish.failure.message
    assert asm.interrupted_blocks() == [TextBlock("a")]
    assert not any(isinstance(c, UsageChunk) for c in chunks)


def test_mistral_in_stream_error_with_object_message_keeps_its_detail() -> None:
    envelope = {"object": "error", "message": {"detail": [{"msg": "bad"}]}, "type": "invalid"}
    asm, _ = _run(envelope)
    assert isinstance(asm.finish, Error)
    assert '"msg": "bad"' in asm.finish.failure.message  # the object, as JSON


def test_mistral_malformed_event_raises_malformed_response() -> None:
    with pytest.raises(LlmError) as info:
        _run(_chunk({"content": "a"}), "{not json")
    assert info.value.code == "MALFORMED_RESPONSE"


def test_mistral_usage_takes_cached_tokens_out_of_the_input_bucket() -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 7,
        "prompt_tokens_details": {"cached_tokens": 60},
    }
    asm, _ = _run(_chunk({"content": "x"}, "stop", usage=usage), "[DONE]")
    assert asm.usage is not None
    assert (asm.usage.input_tokens, asm.usage.cache_read_tokens) == (40, 60)
    assert asm.usage.output_tokens == 7
    assert asm.usage.reasoning_tokens is None
    capped = {"prompt_tokens": 10, "completion_tokens": 1, "num_cached_tokens": 50}
    asm, _ = _run(_chunk({"content": "x"}, "stop", usage=capped), "[DONE]")
    assert asm.usage is not None
    assert (asm.usage.input_tokens, asm.usage.cache_read_tokens) == (0, 10)


def test_mistral_nothing_after_done_is_read() -> None:
    asm, _ = _run(_chunk({"content": "x"}, "stop"), "[DONE]", _chunk({"content": "late"}))
    assert asm.blocks() == [TextBlock("x")]


def test_mistral_replay_state_names_the_response_and_served_model() -> None:
    asm, _ = translate(
        PROTOCOL, [sse_events(_chunk({"content": "x"}, "stop"), "[DONE]")], model="alias"
    )
    state = asm.replay_state
    assert state is not None
    assert state.response["api"] == "mistral-conversations"
    assert state.response["response_id"] == "r1"
    assert state.response["response_model"] == "magistral-medium-latest"
    assert state.response["stop_reason"] == "stop"
