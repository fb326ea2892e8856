"""Issue 37: agent turns for web frontends — the AI SDK's UI message stream from the log.

The client is the real AI SDK (`ai` under node: `DefaultChatTransport` and `readUIMessageStream`
parse the stream into UI messages), the agent a real `Agent` on a scripted model over HTTP, the
log real (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from approval_model import plan_text
from web_helpers import WebModel, parts, read_sse, sdk, serving, user

from modelwire.serve.agents import AGENTS


@pytest.fixture(autouse=True)
def _counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPROVAL_COUNTER", str(tmp_path / "ran.txt"))


@pytest.fixture
async def model() -> WebModel:
    m = WebModel()
    await m.start()
    yield m  # type: ignore[misc]
    await m.stop()


async def test_ui_stream_is_parsed_by_the_ai_sdk_into_reasoning_and_text(model: WebModel) -> None:
    async with serving(model) as url:
        got = await sdk("send", f"{url}/v1/agents/bot/chat", "s1", [user("hi there")])
    message = got["message"]
    assert message["role"] == "assistant"
    kinds = [p["type"] for p in message["parts"]]
    assert kinds == ["step-start", "reasoning", "text"]
    assert message["parts"][1]["text"] == "thinking"
    assert message["parts"][2] == {"type": "text", "text": "echo hi there", "state": "done"}
    types = [c["type"] for c in got["chunks"]]
    assert types[0] == "start" and types[-1] == "finish"
    assert "start-step" in types and "finish-step" in types


async def test_each_sse_event_id_is_the_log_seq_it_came_from(
    model: WebModel, tmp_path: Path
) -> None:
    from modelwire.session import open_log

    log = await open_log(f"sqlite:///{tmp_path / 'web.db'}")
    try:
        async with serving(model, log) as url, aiohttp.ClientSession() as http:
            body = {"id": "s2", "messages": [user("one two")]}
            async with http.post(f"{url}/v1/agents/bot/chat", json=body) as response:
                assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
                events = await read_sse(response)
        logged = {e.seq: e.type for e in await log.read("s2")}
        assert events[-1]["data"] == "[DONE]"
        for event in events:
            kind = json.loads(event["data"])["type"] if event["data"] != "[DONE]" else None
            seq = event["id"]
            if kind == "start":
                assert logged[seq] == "turn/start"
            elif kind in ("text-delta", "reasoning-delta", "text-start", "text-end"):
                assert logged[seq] == "assistant/chunk"
            elif kind == "finish":
                assert logged[seq] == "turn/end"
    finally:
        await log.close()


async def test_tool_calls_and_results_become_the_sdks_tool_parts(model: WebModel) -> None:
    async with serving(model) as url:
        plan = plan_text([("look", {})])
        got = await sdk("send", f"{url}/v1/agents/bot/chat", "s3", [user(plan)])
    tool_parts = [p for p in got["message"]["parts"] if p["type"] == "dynamic-tool"]
    assert len(tool_parts) == 1
    assert tool_parts[0]["toolName"] == "look"
    assert tool_parts[0]["state"] == "output-available"
    assert tool_parts[0]["output"] == "looked"
    texts = [p["text"] for p in got["message"]["parts"] if p["type"] == "text"]
    assert texts == ["results: looked"]


async def test_a_client_that_leaves_does_not_cancel_the_turn(model: WebModel) -> None:
    model.hold = True
    async with serving(model) as url, aiohttp.ClientSession() as http:
        body = {"id": "s4", "messages": [user("keep going")]}
        response = await http.post(f"{url}/v1/agents/bot/chat", json=body)
        await asyncio.wait_for(model.holding.wait(), 30)
        response.close()
        model.release.set()
        got = await sdk("resume", f"{url}/v1/agents/bot/chat", "s4")
        for _ in range(400):
            if got["status"] == 204:
                break
            await asyncio.sleep(0.025)
            got = await sdk("resume", f"{url}/v1/agents/bot/chat", "s4")
        async with http.get(f"{url}/v1/agents/bot/chat/s4/stream") as again:
            assert again.status == 204
        body = {
            "id": "s4",
            "messages": [
                user("keep going"),
                {
                    "id": "a",
                    "role": "assistant",
                    "parts": [{"type": "text", "text": "echo keep going"}],
                },
                user("next", "u2"),
            ],
        }
        async with http.post(f"{url}/v1/agents/bot/chat", json=body) as response2:
            assert response2.status == 200
            events = parts(await read_sse(response2))
    assert "".join(e.get("delta", "") for e in events if e["type"] == "text-delta") == "echo next"


async def test_a_needs_approval_call_is_an_approval_request_decided_over_http_then_resumed(
    model: WebModel, tmp_path: Path
) -> None:
    from approval_agent import counted

    async with serving(model) as url, aiohttp.ClientSession() as http:
        chat = f"{url}/v1/agents/bot/chat"
        plan = plan_text([("pay", {"amount": 5}), ("look", {})])
        paused = await sdk("send", chat, "ap", [user(plan)])
        tools = {
            p["toolCallId"]: p for p in paused["message"]["parts"] if p["type"] == "dynamic-tool"
        }
        assert tools["call_0"]["state"] == "approval-requested"
        assert tools["call_0"]["input"] == {"amount": 5}
        assert tools["call_1"]["state"] == "output-available"
        assert counted(str(tmp_path / "ran.txt")) == ["look call_1"]
        finish = [c for c in paused["chunks"] if c["type"] == "finish"]
        assert finish == [{"type": "finish", "finishReason": "tool-calls"}]
        async with http.get(f"{chat}/ap/stream") as none:
            assert none.status == 204  # paused: no turn runs
        again = {"id": "ap", "messages": [user(plan), paused["message"], user("more", "u2")]}
        async with http.post(chat, json=again) as r:
            assert r.status == 409 and (await r.json())["error"]["code"] == "TURN_PAUSED"
        decide = f"{chat}/ap/decisions"
        async with http.post(decide, json={"call_id": "nope", "approve": True}) as r:
            assert r.status == 404 and (await r.json())["error"]["code"] == "UNKNOWN_CALL"
        async with http.post(decide, json={"call_id": "call_0"}) as r:
            assert r.status == 400
        async with http.post(decide, json={"call_id": "call_0", "approve": True}) as r:
            assert r.status == 200
            answer = await r.json()
        assert answer["decided"] == "call_0" and answer["waiting"] == [] and answer["resumed"]
        # the client resumes after the seq the answer names, continuing its paused message
        resumed = await sdk("resume", chat, "ap", paused["message"], answer["from_seq"])
        async with http.post(decide, json={"call_id": "call_0", "approve": False}) as r:
            assert r.status == 409 and (await r.json())["error"]["code"] == "ALREADY_DECIDED"
    assert resumed["status"] == 200
    parts_by_id = {
        p["toolCallId"]: p for p in resumed["message"]["parts"] if p["type"] == "dynamic-tool"
    }
    assert parts_by_id["call_0"]["state"] == "output-available"
    assert parts_by_id["call_0"]["output"] == "paid 5"
    texts = [p["text"] for p in resumed["message"]["parts"] if p["type"] == "text"]
    assert texts == ["results: paid 5 | looked"]  # in call order
    assert sorted(counted(str(tmp_path / "ran.txt"))) == ["look call_1", "pay call_0"]


async def test_a_failed_turn_ends_the_stream_with_an_error_part(model: WebModel) -> None:
    async with serving(model) as url:
        got = await sdk("send", f"{url}/v1/agents/bot/chat", "err", [user("fail")])
    errors = [c for c in got["chunks"] if c["type"] == "error"]
    assert len(errors) == 1 and "the scripted model refuses" in errors[0]["errorText"]
    assert "the scripted model refuses" in got["failure"]  # the SDK's own error handling


async def test_an_explicit_stop_cancels_the_turn(model: WebModel) -> None:
    model.hold = True
    async with serving(model) as url, aiohttp.ClientSession() as http:
        chat = f"{url}/v1/agents/bot/chat"
        body = {"id": "halt", "messages": [user("never finished")]}
        async with http.post(chat, json=body) as response:
            await asyncio.wait_for(model.holding.wait(), 30)
            async with http.post(f"{chat}/halt/stop") as stopped:
                assert stopped.status == 200
            events = parts(await read_sse(response))
        async with http.post(f"{chat}/halt/stop") as again:
            assert again.status == 404
        host = url.app[AGENTS]
        ends = [e for e in await host.agents["bot"].log.read("halt") if e.type == "turn/end"]
    assert [e.data.reason.kind for e in ends] == ["aborted"]
    assert events[-1] == {"type": "finish", "finishReason": "other"}
    assert {"type": "error", "errorText": "the turn ended: aborted"} in events


async def test_a_client_that_never_reads_does_not_hold_the_turn(model: WebModel) -> None:
    async with serving(model) as url, aiohttp.ClientSession() as http:
        host, port = url.removeprefix("http://").split(":")
        _reader, writer = await asyncio.open_connection(host, int(port))
        payload = json.dumps({"id": "deaf", "messages": [user("word " * 20000)]}).encode()
        writer.write(
            b"POST /v1/agents/bot/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
        )
        await writer.drain()  # and never read a byte of the answer
        log = url.app[AGENTS].agents["bot"].log
        for _ in range(3000):  # a hang guard, not a deadline: the turn ends on its own
            if await log.exists("deaf") and await log.latest("deaf", "turn/end") is not None:
                break
            await asyncio.sleep(0.02)
        end = await log.latest("deaf", "turn/end")
        assert end is not None and end.data.reason.kind == "completed"
        async with http.post(
            f"{url}/v1/agents/bot/chat", json={"id": "other", "messages": [user("still here")]}
        ) as r:
            texts = [e.get("delta", "") for e in parts(await read_sse(r))]
        assert "".join(texts).endswith("echo still here")
        writer.close()


async def test_a_turn_refused_before_it_starts_ends_the_stream_with_the_refusal(
    model: WebModel,
) -> None:
    async with serving(model) as url:
        await url.app[AGENTS].agents["bot"].close()  # run_turn now refuses at once
        got = await sdk("send", f"{url}/v1/agents/bot/chat", "shut", [user("hello")])
    assert got["failure"] is not None
    errors = [c for c in got["chunks"] if c["type"] == "error"]
    assert errors == [{"type": "error", "errorText": "INVALID_ARGS: agent is closed"}]
