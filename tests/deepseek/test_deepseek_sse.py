"""Spec G.2 (sse.spec, 7): SSE framing as the DeepSeek adapter consumes it, over loopback HTTP."""

from __future__ import annotations

import pytest
from deepseek_helpers import Server, collect, make_adapter, options, raw_response

from modelwire import Finish, LlmError, TextDelta
from modelwire.wire.sse import SseDecoder, SseEvent


def test_g2_01_yields_each_event_data_then_done() -> None:
    dec = SseDecoder()
    events = dec.feed(b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n')
    assert [e.data for e in events] == ['{"a":1}', '{"b":2}', "[DONE]"]


def test_g2_02_keep_alive_reported_to_comment_callback_not_yielded() -> None:
    seen: list[str] = []
    dec = SseDecoder(on_comment=seen.append)
    assert dec.feed(b": keep-alive\n\ndata: x\n\n") == [SseEvent(None, "x")]
    assert seen == ["keep-alive"]


async def test_g2_03_stops_at_done_later_event_not_yielded(server: Server) -> None:
    body = b'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: [DONE]\n\n'
    body += b'data: {"choices":[{"delta":{"content":"LATE"}}]}\n\n'
    server.queue(raw_response(body))
    chunks = await collect(make_adapter(server).stream(options()))
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["a"]
    assert isinstance(chunks[-1], Finish)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n', id="04-eof-without-done"
        ),
        pytest.param(b"", id="05-empty-body"),
        pytest.param(
            b'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {"cho', id="06-mid-event-close"
        ),
        pytest.param(b'data: {"choices":[]}\n\ndata: [DONE]', id="07-done-without-blank-line"),
    ],
)
async def test_g2_04_to_07_truncation_raises_stream_closed(server: Server, body: bytes) -> None:
    server.queue(raw_response(body, pieces=[7] * 20))
    with pytest.raises(LlmError) as info:
        await collect(make_adapter(server).stream(options()))
    assert info.value.code == "STREAM_CLOSED"
    assert "without [DONE]" in info.value.message


async def test_g2_crlf_framing_and_split_reads(server: Server) -> None:
    body = b'data: {"choices":[{"delta":{"content":"\xc3\xa9"},"finish_reason":"stop"}]}\r\n\r\ndata: [DONE]\r\n\r\n'
    server.queue(raw_response(body, pieces=[1] * len(body)))
    chunks = await collect(make_adapter(server).stream(options()))
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["é"]


async def test_b31_malformed_payload_after_good_one_in_same_read(server: Server) -> None:
    body = b'data: {"choices":[{"delta":{"content":"ok"}}]}\n\ndata: {oops\n\ndata: [DONE]\n\n'
    server.queue(raw_response(body))
    got: list[object] = []
    with pytest.raises(LlmError) as info:
        async for chunk in make_adapter(server).stream(options()):
            got.append(chunk)
    assert info.value.code == "MALFORMED_RESPONSE"
    assert [c.text for c in got if isinstance(c, TextDelta)] == ["ok"]
