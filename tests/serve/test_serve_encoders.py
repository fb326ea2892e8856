"""The streaming encoders: any split of an answer into deltas, any text (quotes, newlines,
non-ASCII, lone surrogates excepted), encodes into events whose JSON parses and whose deltas join
back into the answer, on each protocol."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from modelwire.serve.chat_out import ChatStream
from modelwire.serve.messages_out import MessagesStream
from modelwire.serve.responses_out import ResponsesStream
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Finish,
    Stop,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
)

pieces = st.lists(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1), max_size=8
)


def _chunks(parts: list[str]) -> list[object]:
    out: list[object] = [BlockStart(0, "text")]
    out += [TextDelta(0, p) for p in parts]
    out += [BlockEnd(0, TextBlock("".join(parts))), UsageChunk(TokenUsage(3, 4)), Finish(Stop())]
    return out


def _datas(raw: bytes) -> list[str]:
    return [line[6:] for line in raw.decode().split("\n") if line.startswith("data: ")]


@given(pieces)
def test_chat_stream_deltas_join_back_into_the_answer(parts: list[str]) -> None:
    encoder = ChatStream("chatcmpl-1", "m", 1, True, "r:m")
    raw = encoder.start() + b"".join(encoder.push(c) for c in _chunks(parts))  # type: ignore[arg-type]
    datas = _datas(raw)
    assert datas[-1] == "[DONE]"
    events = [json.loads(d) for d in datas[:-1]]
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"])
    assert text == "".join(parts)
    assert events[-1]["usage"]["total_tokens"] == 7


@given(pieces)
def test_messages_stream_deltas_join_back_into_the_answer(parts: list[str]) -> None:
    encoder = MessagesStream("msg_1", "m", "r", "m")
    raw = encoder.start() + b"".join(encoder.push(c) for c in _chunks(parts))  # type: ignore[arg-type]
    events = [json.loads(d) for d in _datas(raw)]
    deltas = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert "".join(deltas) == "".join(parts)
    assert [e["type"] for e in events][-2:] == ["message_delta", "message_stop"]


@given(pieces)
def test_responses_stream_deltas_join_back_into_the_answer(parts: list[str]) -> None:
    encoder = ResponsesStream("resp_1", "m", 1, "r:m")
    raw = encoder.start() + b"".join(encoder.push(c) for c in _chunks(parts))  # type: ignore[arg-type]
    events = [json.loads(d) for d in _datas(raw)]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(deltas) == "".join(parts)
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "".join(parts)
