"""Refusals, content filters, whole tool inputs and server-tool loops on the three protocols.

Rules pinned (DESIGN §8 as settled in docs/decisions.md): a refusal or content-filter stop is one
outcome everywhere — `Error` with code CONTENT_FILTER, the refusal text kept in the failure
message, never EMPTY_RESPONSE and never retried by the default policy; an Anthropic `tool_use`
input that arrives whole in `content_block_start` is the call's arguments unless deltas follow;
the "clean stop but input > window" overflow heuristic does not fire on a server-side tool loop.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from providers_fixtures import FIXTURES, MockServer, Reply, load_case

from modelwire import LlmRuntime
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.protocols import translate_sse
from modelwire.agent import Agent
from modelwire.assembler import BlockAssembler
from modelwire.policy import resolve_retry_policy
from modelwire.retry import RetryPlugin
from modelwire.session import AssistantChunk, open_log
from modelwire.vocab import Error, Finish, StreamChunk, ToolCallBlock


def _chat(*payloads: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in payloads) + b"data: [DONE]\n\n"


def _events(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _assemble(api: str, body: bytes, window: int | None = None) -> BlockAssembler:
    asm = BlockAssembler()
    chunks: list[StreamChunk] = translate_sse(
        api, [body], provider="r", model="m", context_window=window
    )
    for chunk in chunks:
        asm.push(chunk)
    return asm


def _code(asm: BlockAssembler) -> str:
    assert isinstance(asm.finish, Error)
    return asm.finish.failure.code


def test_chat_refusal_delta_is_content_filter_with_the_refusal_text() -> None:
    body = _chat(
        {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "refusal": ""}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"refusal": "I can't "}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"refusal": "help."}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    asm = _assemble("openai-completions", body)
    assert _code(asm) == "CONTENT_FILTER"
    assert isinstance(asm.finish, Error)
    assert 'model "m" refused: I can\'t help.' in asm.finish.failure.message


def test_chat_content_filter_finish_is_content_filter() -> None:
    body = _chat(
        {"id": "c", "choices": [{"index": 0, "delta": {"content": "Once"}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}]},
    )
    assert _code(_assemble("openai-completions", body)) == "CONTENT_FILTER"


def test_responses_refusal_part_without_deltas_is_content_filter() -> None:
    item = {"type": "message", "id": "msg_1", "content": []}
    done = {
        "type": "message",
        "id": "msg_1",
        "content": [{"type": "refusal", "refusal": "No."}],
    }
    body = _events(
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    )
    asm = _assemble("openai-responses", body)
    assert _code(asm) == "CONTENT_FILTER"
    assert isinstance(asm.finish, Error)
    assert asm.finish.failure.message.endswith("refused: No.")


def test_responses_incomplete_content_filter_is_content_filter_not_max_tokens() -> None:
    item = {"type": "message", "id": "msg_1", "content": []}
    body = _events(
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "Part"},
        {
            "type": "response.incomplete",
            "response": {
                "status": "incomplete",
                "incomplete_details": {"reason": "content_filter"},
            },
        },
    )
    assert _code(_assemble("openai-responses", body)) == "CONTENT_FILTER"


def _anthropic(stop: str, *blocks: dict[str, Any], input_tokens: int = 5) -> bytes:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {"id": "msg_1", "usage": {"input_tokens": input_tokens, "output_tokens": 1}},
        }
    ]
    events += blocks
    events += [
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    return _events(*events)


def test_anthropic_refusal_stop_is_content_filter_keeping_the_text() -> None:
    body = _anthropic(
        "refusal",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "I won't do that."},
        },
        {"type": "content_block_stop", "index": 0},
    )
    asm = _assemble("anthropic-messages", body)
    assert _code(asm) == "CONTENT_FILTER"
    assert isinstance(asm.finish, Error)
    assert "I won't do that." in asm.finish.failure.message


def _tool_start(args: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "roll", "input": args}
    return {"type": "content_block_start", "index": 0, "content_block": block}


def test_anthropic_tool_input_whole_in_block_start_is_the_arguments() -> None:
    body = _anthropic(
        "tool_use", _tool_start({"player": "p1"}), {"type": "content_block_stop", "index": 0}
    )
    calls = [
        b for b in _assemble("anthropic-messages", body).blocks() if isinstance(b, ToolCallBlock)
    ]
    assert [json.loads(c.arguments) for c in calls] == [{"player": "p1"}]


def test_anthropic_tool_input_deltas_win_over_an_empty_start_input() -> None:
    body = _anthropic(
        "tool_use",
        _tool_start({}),
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'},
        },
        {"type": "content_block_stop", "index": 0},
    )
    calls = [
        b for b in _assemble("anthropic-messages", body).blocks() if isinstance(b, ToolCallBlock)
    ]
    assert [c.arguments for c in calls] == ['{"a": 1}']


def test_overflow_heuristic_does_not_fire_on_a_pause_turn_stream() -> None:
    text = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "x"},
    }
    body = _anthropic("pause_turn", text, delta, input_tokens=50_000)
    assert _assemble("anthropic-messages", body, window=1_000).finish.kind == "stop"
    # the same counts on a plain end_turn still reveal an overflow
    overflow = _anthropic("end_turn", text, delta, input_tokens=50_000)
    assert _code(_assemble("anthropic-messages", overflow, window=1_000)) == (
        "CONTEXT_WINDOW_EXCEEDED"
    )


def test_content_filter_is_not_retried_by_the_default_policy() -> None:
    policy = resolve_retry_policy(None)
    assert "CONTENT_FILTER" not in getattr(policy, "retryable_codes", ())
    assert policy.mode == "normal"


@pytest.mark.parametrize(
    ("api", "folder", "name"),
    [
        ("openai-completions", "openai-chat", "oai-refusal"),
        ("openai-responses", "openai-responses", "mirascope-resp-gpt4o-refusal"),
        ("anthropic-messages", "anthropic-messages", "vercel-anth-refusal"),
    ],
)
async def test_recorded_refusal_in_an_agent_turn_with_retries_is_sent_once(
    api: str, folder: str, name: str
) -> None:
    body, expected = load_case(FIXTURES / folder / f"{name}.sse")
    async with MockServer([Reply(reads=[body])]) as server:
        profile = {
            "api": api,
            "base_url": server.url + "/v1",
            "api_key_env": "FIXTURE_KEY",
            "models": [{"id": "m"}],
        }
        adapter = ProvidersAdapter.from_config(
            {"providers": {"route": profile}}, env={"FIXTURE_KEY": "sk-fixture"}
        )
        rt = LlmRuntime()
        adapter.register(rt)
        log = await open_log("memory:")
        agent = Agent(rt, log, "route", "m", plugins=[RetryPlugin()])
        result = await agent.run_turn("s1", "hi")
    assert result.reason.kind == "error"
    assert len(server.bodies) == 1  # CONTENT_FILTER is never retried by default
    chunks = [e.data.chunk for e in await log.read("s1") if isinstance(e.data, AssistantChunk)]
    final = chunks[-1]
    assert isinstance(final, Finish)
    assert isinstance(final.reason, Error)
    assert final.reason.failure.code == "CONTENT_FILTER"
    refusal = expected["extras"].get("refusal")
    if refusal:
        assert refusal in final.reason.failure.message
