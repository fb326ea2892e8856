"""Event translation, stop and usage mapping, error classification (spec §4.2, §8.5 #145-163)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelwire.adapters.providers.protocols import translate_sse
from modelwire.adapters.providers.protocols.common import (
    BlockRecord,
    ResponseRecord,
    classify_error_text,
    finish_chunks,
    is_overflow_text,
)
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Finish,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)


def _chat(*events: Any) -> list[StreamChunk]:
    body = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
    return translate_sse("openai-completions", [body], provider="r", model="m", context_window=100)


def _finish(chunks: list[StreamChunk]) -> Finish:
    last = chunks[-1]
    assert isinstance(last, Finish)
    return last


def test_mp_145_text_events_chunks_usage_and_envelope() -> None:
    chunks = _chat(
        {"id": "c1", "choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {
            "id": "c1",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        },
    )
    assert chunks[:3] == [BlockStart(0, "text"), TextDelta(0, "hi"), BlockEnd(0, TextBlock("hi"))]
    assert chunks[3] == UsageChunk(TokenUsage(3, 2))
    finish = _finish(chunks)
    assert finish.reason.kind == "stop"
    assert finish.replay_state is not None
    assert dict(finish.replay_state.response) == {
        "kind": "pi-ai",
        "version": 2,
        "api": "openai-completions",
        "provider": "r",
        "model": "m",
        "response_id": "c1",
        "stop_reason": "stop",
    }
    assert [dict(b) for b in finish.replay_state.blocks or ()] == [{"type": "text"}]


def test_mp_147_tool_call_events() -> None:
    chunks = _chat(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]},
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]},
                    "finish_reason": "tool_calls",
                }
            ]
        },
    )
    assert chunks[0] == BlockStart(0, "tool-call")
    assert [c for c in chunks if isinstance(c, ToolCallDelta)] == [
        ToolCallDelta(0, "call_1", "", "f"),
        ToolCallDelta(0, "call_1", '{"a":', "f"),
        ToolCallDelta(0, "call_1", "1}", "f"),
    ]
    assert BlockEnd(0, ToolCallBlock("call_1", "f", '{"a":1}')) in chunks
    # the stream reports no usage: no usage chunk (usage None), never zeros
    assert not any(isinstance(c, UsageChunk) for c in chunks)
    finish = _finish(chunks)
    assert finish.reason.kind == "tool-calls"
    assert finish.replay_state is not None and dict(finish.replay_state.blocks[0]) == {
        "type": "tool-call"
    }  # type: ignore[index]


def test_mp_148_162_163_tool_delta_without_name_or_id() -> None:
    chunks = _chat(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
                    "finish_reason": "tool_calls",
                }
            ]
        },
    )
    delta = next(c for c in chunks if isinstance(c, ToolCallDelta))
    assert (delta.id, delta.name) == ("", None)


def test_mp_149_in_stream_error_object() -> None:
    chunks = _chat(
        {
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 0},
            "error": {"message": "boom", "code": "x"},
        }
    )
    assert UsageChunk(TokenUsage(1, 0)) in chunks
    finish = _finish(chunks)
    assert finish.reason.kind == "error" and finish.replay_state is None
    assert finish.reason.failure.code == "PI_AI_ERROR"  # type: ignore[union-attr]


def test_mp_151_stream_without_finish_reason_is_transport() -> None:
    body = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    finish = _finish(translate_sse("openai-completions", [body], provider="r", model="m"))
    assert finish.reason.failure.code == "TRANSPORT"  # type: ignore[union-attr]
    assert "without finish_reason" in finish.reason.failure.message  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("api", "body", "fragment"),
    [
        (
            "openai-responses",
            b'data: {"type":"response.created","response":{"id":"r"}}\n\n',
            "before a terminal response event",
        ),
        (
            "anthropic-messages",
            b'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n',
            "before message_stop",
        ),
    ],
)
def test_mp_151_truncated_streams_are_transport(api: str, body: bytes, fragment: str) -> None:
    finish = _finish(translate_sse(api, [body], provider="r", model="m"))
    assert finish.reason.failure.code == "TRANSPORT"  # type: ignore[union-attr]
    assert fragment in finish.reason.failure.message  # type: ignore[union-attr]


def _record(
    stop: Any,
    *,
    blocks: int = 1,
    message: str | None = None,
    window: int | None = None,
    **usage: int,
) -> list[StreamChunk]:
    record = ResponseRecord(
        api="openai-completions", provider="r", model="m", context_window=window
    )
    record.stop_reason = stop
    record.error_message = message
    record.blocks = [BlockRecord(i, "text") for i in range(blocks)]
    for key, value in usage.items():
        setattr(record, key, value)
    record.reported = True  # these cases are about the buckets of reported usage
    out: list[StreamChunk] = []
    finish_chunks(record, out)
    return out


@pytest.mark.parametrize(
    ("stop", "kind"),
    [("stop", "stop"), ("length", "max-tokens"), ("toolUse", "tool-calls"), ("aborted", "aborted")],
)
def test_mp_153_stop_reason_kinds(stop: str, kind: str) -> None:
    assert _finish(_record(stop)).reason.kind == kind


def test_mp_150_154_155_156_empty_aborted_and_messageless() -> None:
    empty = _finish(_record("stop", blocks=0)).reason
    assert empty.failure.code == "EMPTY_RESPONSE"  # type: ignore[union-attr]
    assert empty.failure.message == 'model "m" returned a completed response with no content'  # type: ignore[union-attr]
    aborted = _finish(_record("aborted")).reason
    assert (aborted.failure.code, aborted.failure.message) == ("ABORTED", "pi-ai stream aborted")  # type: ignore[union-attr]
    error = _finish(_record("error")).reason
    assert (error.failure.code, error.failure.message) == ("PI_AI_ERROR", "pi-ai stream error")  # type: ignore[union-attr]


def test_mp_160_usage_overflow_with_and_without_window() -> None:
    assert (
        _finish(_record("stop", window=100, input=101)).reason.failure.code
        == "CONTEXT_WINDOW_EXCEEDED"
    )  # type: ignore[union-attr]
    assert _finish(_record("stop", input=101)).reason.kind == "stop"
    assert (
        _finish(_record("length", window=100, input=90, cache_read=9)).reason.failure.code
        == "CONTEXT_WINDOW_EXCEEDED"
    )  # type: ignore[union-attr]
    assert _finish(_record("length", input=90, cache_read=9)).reason.kind == "max-tokens"


def test_mp_161_cache_fields_only_when_non_zero() -> None:
    usage = _record("stop", input=5, output=2)[0]
    assert usage == UsageChunk(TokenUsage(5, 2))
    usage = _record("stop", input=5, output=2, cache_read=3, cache_write=4)[0]
    assert usage == UsageChunk(TokenUsage(5, 2, 3, 4))


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("401 Unauthorized", "AUTH"),
        ("429 rate limit reached", "RATE_LIMIT"),
        ("429 insufficient_quota", "QUOTA"),
        ("You exceeded your current quota", "QUOTA"),
        ("500 internal error", "SERVER"),
        ("request timed out", "TIMEOUT"),
        ("read ECONNRESET", "TRANSPORT"),
        ("400 temperature out of range", "INVALID_REQUEST"),
        ("413 Payload Too Large", "INVALID_REQUEST"),
        ("failed to buffer the request body: length limit exceeded", "INVALID_REQUEST"),
        ("vector length limit exceeded", "PI_AI_ERROR"),
        ("other side closed", "TRANSPORT"),
        ("HTTP2 request did not get a response", "TRANSPORT"),
        ("WebSocket closed unexpectedly", "TRANSPORT"),
        ("terminated", "TRANSPORT"),
        ("Premature close", "TRANSPORT"),
        ("Stream ended before done", "TRANSPORT"),
        ("stream ended without finish_reason", "TRANSPORT"),
    ],
)
def test_mp_157_158_error_text_classification(text: str, code: str) -> None:
    assert classify_error_text(text) == code


@pytest.mark.parametrize(
    ("text", "overflow"),
    [
        ("prompt is too long: 210000 tokens > 200000 maximum", True),
        ("This model's maximum context length is 8192 tokens", True),
        ("context_length_exceeded", True),
        ("Too many tokens, rate limit exceeded", False),
    ],
)
def test_mp_159_overflow_patterns(text: str, overflow: bool) -> None:
    assert is_overflow_text(text) is overflow
    chunks = _record("error", message=text)
    code = _finish(chunks).reason.failure.code  # type: ignore[union-attr]
    assert (code == "CONTEXT_WINDOW_EXCEEDED") is overflow
