"""The demo's local server speaks DeepSeek's streaming wire format, from the scripted conversation."""

from __future__ import annotations

import json

import aiohttp
import pytest

from modelwire.cli.demo import evaluate
from modelwire.cli.demo_script import DEMO_SCRIPT, ScriptedReply, ScriptedStep, WireUsage
from modelwire.cli.demo_server import DemoServer, render_reply_frames

AUTH = {"Authorization": "Bearer demo-key"}


def _payloads(body: bytes) -> list[str]:
    text = body.decode("utf-8")
    assert text.endswith("data: [DONE]\n\n")
    events = [e for e in text.split("\n\n") if e]
    return [e.removeprefix("data: ") for e in events if e.startswith("data: ")]


async def _post(server: DemoServer, messages: list[dict[str, object]]) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as client,
        client.post(
            f"{server.base_url}/chat/completions",
            json={"model": "deepseek-v4-flash", "stream": True, "messages": messages},
            headers=AUTH,
        ) as response,
    ):
        return response.status, await response.read()


def test_frames_are_deepseek_chat_completion_chunks() -> None:
    reply = DEMO_SCRIPT[0].reply
    frames = render_reply_frames(reply, response_id="r1", created=1, model="deepseek-v4-flash")
    assert frames[-1] == b"data: [DONE]\n\n"
    for frame in frames[:-1]:
        assert frame.startswith(b"data: {") and frame.endswith(b"}\n\n")
        assert b"\n" not in frame[:-2]
        payload = json.loads(frame[6:])
        assert payload["object"] == "chat.completion.chunk"
        assert payload["id"] == "r1"
    first = json.loads(frames[0][6:])
    assert first["choices"][0]["delta"] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "",
    }


def test_tool_call_is_split_over_many_deltas() -> None:
    reply = DEMO_SCRIPT[0].reply
    frames = render_reply_frames(reply, response_id="r", created=1, model="m")
    calls = [
        json.loads(f[6:])["choices"][0]["delta"]["tool_calls"][0]
        for f in frames[:-1]
        if b'"tool_calls":[' in f
    ]
    assert len(calls) >= 5
    assert calls[0]["id"] == "call_demo_0" and calls[0]["function"]["name"] == "calculator"
    assert all("id" not in c for c in calls[1:])
    arguments = json.loads("".join(c["function"]["arguments"] for c in calls))
    assert evaluate(arguments["expression"]) == 550


def test_usage_chunk_reports_cache_hits_then_done() -> None:
    frames = render_reply_frames(DEMO_SCRIPT[1].reply, response_id="r", created=1, model="m")
    usage_frame = json.loads(frames[-2][6:])
    assert usage_frame["choices"] == []
    usage = usage_frame["usage"]
    assert usage["prompt_cache_hit_tokens"] == 384
    assert usage["prompt_cache_miss_tokens"] == usage["prompt_tokens"] - 384
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 18
    finish = json.loads(frames[-3][6:])
    assert finish["choices"][0]["finish_reason"] == "stop"


def test_reasoning_precedes_text() -> None:
    frames = render_reply_frames(DEMO_SCRIPT[1].reply, response_id="r", created=1, model="m")
    deltas = [json.loads(f[6:])["choices"] for f in frames[:-2]]
    kinds = [
        "reasoning" if c[0]["delta"].get("reasoning_content") else "text" for c in deltas[1:-1] if c
    ]
    assert kinds == sorted(kinds)  # all reasoning, then all text
    assert "reasoning" in kinds and "text" in kinds


async def test_second_step_fails_once_with_503_then_streams() -> None:
    async with DemoServer(DEMO_SCRIPT) as server:
        status, body = await _post(server, [{"role": "user", "content": "hi"}])
        assert status == 200
        assert len(_payloads(body)) > 10
        step_two = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": []},
            {"role": "tool", "tool_call_id": "call_demo_0", "content": "550"},
        ]
        status, body = await _post(server, step_two)
        assert status == 503
        assert json.loads(body)["error"]["type"] == "service_unavailable_error"
        status, body = await _post(server, step_two)
        assert status == 200
        text = "".join(
            json.loads(p)["choices"][0]["delta"].get("content") or ""
            for p in _payloads(body)[:-1]
            if json.loads(p)["choices"]
        )
        assert "550 minutes" in text
        assert server.statuses == [200, 503, 200]


async def test_wrong_key_and_non_streaming_requests_are_refused() -> None:
    async with DemoServer(DEMO_SCRIPT) as server, aiohttp.ClientSession() as client:
        async with client.post(
            f"{server.base_url}/chat/completions",
            json={"stream": True, "messages": []},
            headers={"Authorization": "Bearer other"},
        ) as response:
            assert response.status == 401
            assert "other" not in await response.text()
        async with client.post(
            f"{server.base_url}/chat/completions", json={"messages": []}, headers=AUTH
        ) as response:
            assert response.status == 400


async def test_a_step_beyond_the_script_is_a_400() -> None:
    script = (ScriptedStep(reply=ScriptedReply((), ("ok",), WireUsage(1, 1, 0, 0))),)
    async with DemoServer(script) as server:
        status, _ = await _post(server, [{"role": "assistant", "content": "x"}])
        assert status == 400


@pytest.mark.parametrize(
    ("expression", "value"),
    [("(2*60+35)+(4*60+50)+(1*60+45)", 550), ("7/2", 3.5), ("-3+10%4", -1), ("2*(3+4)", 14)],
)
def test_calculator_evaluates_arithmetic(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize("expression", ["__import__('os')", "2**999999", "a+1", "x" * 201])
def test_calculator_refuses_anything_else(expression: str) -> None:
    with pytest.raises((ValueError, SyntaxError)):
        evaluate(expression)
