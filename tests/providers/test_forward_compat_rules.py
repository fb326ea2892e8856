"""Forward compatibility, rule by rule (issue 33): what a translator does not know never fails a
stream — it is reported once in the replay envelope (`response.extras.unknown`) and, where it is
part of the answer, kept there whole and sent back byte for byte to the same model; a stream
that delivered its end marker without a finish signal has an inferred finish (and says so);
EMPTY_RESPONSE only when nothing at all came back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from collection3 import folder
from providers_fixtures import MockServer, Reply, sse

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.protocols import translate_sse
from modelwire.assembler import BlockAssembler
from modelwire.vocab import (
    Error,
    GenerateOptions,
    ModelSource,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    user_message,
)


def _assemble(api: str, reads: Sequence[bytes]) -> BlockAssembler:
    asm = BlockAssembler()
    for chunk in translate_sse(api, reads, provider="r", model="m"):
        asm.push(chunk)
    return asm


def _named(*events: dict[str, Any]) -> list[bytes]:
    """SSE reads with an ``event:`` line named after each event's type."""
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


def _extras(asm: BlockAssembler) -> dict[str, Any]:
    state = asm.replay_state
    assert state is not None
    extras: dict[str, Any] = dict(state.response.get("extras", {}))
    return extras


def _kept(asm: BlockAssembler) -> list[str]:
    state = asm.replay_state
    assert state is not None
    kept = [raw for e in state.blocks or () for raw in e.get("opaque", ())]
    return [*kept, *state.response.get("opaque_tail", ())]


# ---- an end marker without a finish signal ---------------------------------------------------


def test_chat_done_without_finish_reason_infers_tool_calls_and_says_so() -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a":1}'}}
    asm = _assemble(
        "openai-completions",
        sse({"id": "x", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}, "[DONE]"),
    )
    assert asm.finish.kind == "tool-calls"
    assert asm.blocks() == [ToolCallBlock("c1", "f", '{"a":1}')]
    assert _extras(asm) == {"finish": "inferred"}


def test_chat_done_without_finish_reason_infers_stop_for_text() -> None:
    asm = _assemble(
        "openai-completions", sse({"choices": [{"index": 0, "delta": {"content": "4"}}]}, "[DONE]")
    )
    assert asm.finish.kind == "stop" and asm.blocks() == [TextBlock("4")]
    assert _extras(asm) == {"finish": "inferred"}


def test_a_finish_signal_is_never_reported_as_inferred() -> None:
    asm = _assemble(
        "openai-completions",
        sse({"choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": "stop"}]}),
    )
    assert asm.finish.kind == "stop"
    assert _extras(asm) == {}


def test_chat_stream_cut_before_done_and_finish_is_still_a_transport_failure() -> None:
    asm = _assemble("openai-completions", sse({"choices": [{"delta": {"content": "4"}}]}))
    assert isinstance(asm.finish, Error) and asm.finish.failure.code == "TRANSPORT"


def test_anthropic_message_stop_without_stop_reason_infers_stop() -> None:
    asm = _assemble(
        "anthropic-messages",
        _named(
            {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 3}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "hi"},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_stop"},
        ),
    )
    assert asm.finish.kind == "stop" and asm.blocks() == [TextBlock("hi")]
    assert _extras(asm) == {"finish": "inferred"}


def test_responses_done_line_without_terminal_event_infers_the_finish() -> None:
    item = {"type": "message", "id": "msg_1", "content": []}
    done = {**item, "content": [{"type": "output_text", "text": "ok"}]}
    asm = _assemble(
        "openai-responses",
        [
            *_named(
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.output_text.delta", "output_index": 0, "delta": "ok"},
                {"type": "response.output_item.done", "output_index": 0, "item": done},
            ),
            b"data: [DONE]\n\n",
        ],
    )
    assert asm.finish.kind == "stop" and asm.blocks() == [TextBlock("ok")]
    assert _extras(asm) == {"finish": "inferred"}


def test_converse_metadata_without_message_stop_infers_the_finish() -> None:
    from bedrock_fixtures import event

    asm = _assemble(
        "bedrock-converse-stream",
        [
            event("messageStart", {"role": "assistant"}),
            event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}}),
            event("contentBlockStop", {"contentBlockIndex": 0}),
            event("metadata", {"usage": {"inputTokens": 2, "outputTokens": 1}}),
        ],
    )
    assert asm.finish.kind == "stop" and asm.blocks() == [TextBlock("hi")]
    assert _extras(asm) == {"finish": "inferred"}


# ---- unknown parts: kept, reported once, content -------------------------------------------


def test_unknown_responses_items_are_kept_reported_once_and_never_malformed() -> None:
    search = {
        "type": "tool_search_call",
        "id": "tsc_1",
        "arguments": {"queries": ["fx rate"]},  # an object: no function_call argument string
        "execution": "client",
    }
    novel = {"type": "x_new_item", "id": "xn_1", "payload": {"deep": [1, 2]}}
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "rate"}
    events: list[dict[str, Any]] = []
    for index, item in enumerate((search, novel, novel, call)):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        done = {**item, "arguments": '{"c":"EUR"}'} if item is call else item
        events.append({"type": "response.output_item.done", "output_index": index, "item": done})
    events.append({"type": "response.x_new_event", "output_index": 0})
    events.append({"type": "response.completed", "response": {"id": "r1", "status": "completed"}})
    asm = _assemble("openai-responses", _named(*events))
    assert asm.finish.kind == "tool-calls"
    assert asm.blocks() == [ToolCallBlock("call_1|fc_1", "rate", '{"c":"EUR"}')]
    kept = _kept(asm)
    assert [json.loads(k)["type"] for k in kept] == ["tool_search_call", "x_new_item", "x_new_item"]
    assert json.loads(kept[0]) == search  # whole, as it came
    assert _extras(asm) == {"unknown": ("item:x_new_item", "event:response.x_new_event")}


def test_a_server_tool_only_anthropic_answer_is_a_stop_not_empty() -> None:
    use = {"type": "server_tool_use", "id": "srv_1", "name": "advisor", "input": {}}
    result = {"type": "advisor_tool_result", "tool_use_id": "srv_1", "content": {"x": 1}}
    asm = _assemble(
        "anthropic-messages",
        _named(
            {"type": "message_start", "message": {"id": "msg_1"}},
            {"type": "content_block_start", "index": 0, "content_block": use},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"q":"2+2"}'},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1, "content_block": result},
            {"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
            {"type": "message_stop"},
        ),
    )
    assert asm.finish.kind == "stop" and asm.blocks() == []
    kept = [json.loads(k) for k in _kept(asm)]
    assert kept == [{**use, "input": {"q": "2+2"}}, result]  # the streamed input parsed in
    assert _extras(asm) == {"unknown": ("block:advisor_tool_result",)}


def test_empty_response_only_when_nothing_at_all_came_back() -> None:
    asm = _assemble(
        "anthropic-messages",
        _named(
            {"type": "message_start", "message": {"id": "msg_1"}},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
            {"type": "message_stop"},
        ),
    )
    assert isinstance(asm.finish, Error) and asm.finish.failure.code == "EMPTY_RESPONSE"


def test_a_kept_part_before_a_tool_call_dropped_at_max_tokens_moves_to_the_next_block() -> None:
    use = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}
    text = {"type": "text", "text": ""}
    asm = _assemble(
        "anthropic-messages",
        _named(
            {"type": "message_start", "message": {"id": "msg_1"}},
            {"type": "content_block_start", "index": 0, "content_block": use},
            {"type": "content_block_stop", "index": 0},
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
            },
            {"type": "content_block_stop", "index": 1},
            {"type": "content_block_start", "index": 2, "content_block": text},
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "text_delta", "text": "cut"},
            },
            {"type": "content_block_stop", "index": 2},
            {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}},
            {"type": "message_stop"},
        ),
    )
    assert asm.finish.kind == "max-tokens" and asm.blocks() == [TextBlock("cut")]
    state = asm.replay_state
    assert state is not None and len(state.blocks or ()) == 1
    assert [json.loads(k) for k in state.blocks[0]["opaque"]] == [use]


def test_unknown_gemini_parts_are_kept_byte_exact_without_splitting_the_text() -> None:
    raw_part = '{"inlineData": {"mimeType": "image/png",  "data": "iVBOR"}}'
    body = (
        'data: {"candidates":[{"content":{"parts":[{"text":"a"},' + raw_part + ',{"text":"b"}]},'
        '"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":2}}\r\n\r\n'
    ).encode()
    asm = _assemble("google-generative-ai", [body])
    assert asm.finish.kind == "stop" and asm.blocks() == [TextBlock("ab")]
    assert _kept(asm) == [raw_part]
    assert _extras(asm) == {"unknown": ("part:inlineData",)}


# ---- kept parts go back to the same model, byte for byte -------------------------------------


async def _two_turns(api: str, first: bytes, second: list[bytes], route: dict[str, Any]) -> bytes:
    """Stream `first` on a route of `api`, then send a second turn with its assistant message in
    the history; the raw body of the second request."""
    async with MockServer([Reply(reads=[first]), Reply(reads=second)]) as server:
        profile = {
            "api": api,
            "base_url": server.url + "/v1",
            "api_key_env": "K",
            "models": [{"id": "m"}],
            **route,
        }
        adapter = ProvidersAdapter.from_config({"providers": {"gw": profile}}, env={"K": "k-1"})
        ask = GenerateOptions(provider="gw", model="m", messages=(user_message("hi"),))
        chunks: list[StreamChunk] = [c async for c in adapter.stream(ask)]
        asm = BlockAssembler()
        for chunk in chunks:
            asm.push(chunk)
        answer = asm.message(ModelSource("gw", "m", asm.replay_state))
        again = GenerateOptions(
            provider="gw", model="m", messages=(*ask.messages, answer, user_message("more"))
        )
        async for _ in adapter.stream(again):
            pass
    return json.dumps(server.bodies[1]).encode()


def _raw_blocks(path_events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["content_block"] for e in path_events if e.get("type") == "content_block_start"]


async def test_anthropic_server_tool_blocks_go_back_to_the_same_model_whole() -> None:
    recording = folder("anthropic-messages") / "pyd-anth-text-before-builtin-tool.sse"
    body = recording.read_bytes()
    events = [
        json.loads(line[5:]) for line in body.decode().splitlines() if line.startswith("data:")
    ]
    results = [b for b in _raw_blocks(events) if b["type"].endswith("_tool_result")]
    second = _named(
        {"type": "message_start", "message": {"id": "msg_2"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    )
    sent = json.loads(await _two_turns("anthropic-messages", body, second, {}))
    assistant = next(m for m in sent["messages"] if m["role"] == "assistant")
    types = [b["type"] for b in assistant["content"]]
    assert "server_tool_use" in types and "web_search_tool_result" in types
    assert types.index("server_tool_use") < types.index("web_search_tool_result")
    sent_results = [b for b in assistant["content"] if b["type"].endswith("_tool_result")]
    assert sent_results == results  # encrypted_content and all, as recorded


async def test_responses_items_kept_whole_go_back_to_the_same_model_byte_exact() -> None:
    recording = folder("openai-responses") / "pyd-resp-compaction-item.sse"
    body = recording.read_bytes()
    done = [
        line[5:].strip()
        for line in body.decode().splitlines()
        if line.startswith("data:") and '"response.output_item.done"' in line
    ]
    raw_items = [json.dumps(json.loads(d)["item"]) for d in done if '"type":"compaction"' in d]
    assert raw_items
    second = _named({"type": "response.completed", "response": {"id": "r2", "status": "completed"}})
    sent = json.loads(await _two_turns("openai-responses", body, second, {}))
    compactions = [i for i in sent["input"] if i.get("type") == "compaction"]
    assert [json.dumps(i) for i in compactions] == raw_items


def test_kept_parts_are_dropped_for_another_protocol() -> None:
    from compat_fixtures import descriptor

    from modelwire.adapters.providers.context import NAssistant, NContext, NText, NUser
    from modelwire.adapters.providers.protocols.transform import prepare_messages

    kept = NAssistant(
        content=(NText("t"),),
        opaque=((0, '{"type":"server_tool_use","id":"s"}'),),
        api="anthropic-messages",
        provider="a",
        model="claude",
        stop_reason="stop",
    )
    ctx = NContext(None, (NUser("q"), kept), ())
    model = descriptor("openai-responses", "gpt")
    [_, foreign] = prepare_messages(ctx, model, lambda raw: raw)
    assert isinstance(foreign, NAssistant) and foreign.opaque == ()  # nothing kept goes along
    assert foreign.content == (NText("t"),)


@pytest.mark.parametrize("code", ["MALFORMED_RESPONSE"])
def test_a_wrongly_shaped_known_item_is_still_malformed(code: str) -> None:
    bad = {"type": "function_call", "id": "fc_1", "call_id": "c", "arguments": {"not": "a str"}}
    with pytest.raises(Exception) as info:
        _assemble(
            "openai-responses",
            _named({"type": "response.output_item.added", "output_index": 0, "item": bad}),
        )
    assert getattr(info.value, "code", None) == code
