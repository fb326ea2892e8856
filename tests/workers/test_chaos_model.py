"""`ChaosModel` over real HTTP on 127.0.0.1: the scripted two-step conversation, the injected
503s and stalls (one per step, first attempt only), its counters, a prompt stop during a stall,
the threaded runner, and a real modelwire `Agent` turn that retries through it."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from chaos_model import (
    TOOL_NAME,
    ChaosModel,
    StepStats,
    answer_text,
    call_id,
    parse_stats,
)

import modelwire as mw
from modelwire.agent import Agent, Tool, open_runtime
from modelwire.retry import RetryPlugin
from modelwire.session import SessionLog, open_log

Chunk = dict[str, Any]  # Any: a decoded JSON chunk


def _user(key: str, *, parts: bool = False) -> dict[str, object]:
    content: object = [{"type": "text", "text": key}] if parts else key
    return {"role": "user", "content": content}


def _after_tool(key: str) -> list[dict[str, object]]:
    """The request of step 1: the user message, the assistant's `bump` call, its result."""
    call = {
        "id": call_id(key, 0),
        "type": "function",
        "function": {"name": TOOL_NAME, "arguments": json.dumps({"key": key})},
    }
    return [
        {"role": "system", "content": "Be brief."},
        _user(key, parts=True),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id(key, 0), "content": "bumped"},
    ]


def _body(messages: list[dict[str, object]]) -> dict[str, object]:
    return {
        "model": "chaos-1",
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def _sse(response: aiohttp.ClientResponse) -> list[Chunk]:
    """Every `data:` chunk up to `[DONE]` (which must come)."""
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    chunks: list[Chunk] = []
    async for raw in response.content:
        line = raw.decode().strip()
        if not line:
            continue
        assert line.startswith("data: ")
        if line == "data: [DONE]":
            return chunks
        chunks.append(json.loads(line.removeprefix("data: ")))
    raise AssertionError("the stream ended without data: [DONE]")


async def _eventually(condition: Callable[[], bool]) -> None:
    """Wait (bounded by the caller's `wait_for`) until `condition()` holds."""
    while not condition():
        await asyncio.sleep(0.01)


def _deltas(chunks: list[Chunk]) -> list[Chunk]:
    return [c["choices"][0]["delta"] for c in chunks if c["choices"]]


def _finish(chunks: list[Chunk]) -> str | None:
    reasons: list[str | None] = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert all(r is None for r in reasons[:-1])
    return reasons[-1]


def _check_usage(chunks: list[Chunk]) -> None:
    last = chunks[-1]
    assert last["choices"] == []
    usage = last["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["model"] == "chaos-1" and chunk["id"] == last["id"]


async def test_step_zero_streams_one_bump_call_with_the_key() -> None:
    key = 'ticket "42" ü'
    async with ChaosModel() as server, aiohttp.ClientSession() as http:
        url = f"{server.base_url}/chat/completions"
        async with http.post(url, json=_body([_user(key)])) as response:
            chunks = await _sse(response)
    _check_usage(chunks)
    assert _finish(chunks) == "tool_calls"
    deltas = _deltas(chunks)
    assert deltas[0]["role"] == "assistant" and deltas[0]["content"] is None
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    head = calls[0]
    assert head["index"] == 0 and head["id"] == call_id(key, 0) and head["type"] == "function"
    assert head["function"] == {"name": "bump", "arguments": ""}
    assert all(set(c) == {"index", "function"} and c["index"] == 0 for c in calls[1:])
    fragments = [c["function"]["arguments"] for c in calls[1:]]
    assert 2 <= len(fragments) <= 3 and all(fragments)
    assert json.loads("".join(fragments)) == {"key": key}
    assert server.stats() == {(key, 0): StepStats(attempts=1, faults=0, completed=1)}


async def test_a_request_with_the_tool_result_is_answered_done_key() -> None:
    key = "order-7"
    async with ChaosModel(chunk_delay_s=0) as server, aiohttp.ClientSession() as http:
        url = f"{server.base_url}/chat/completions"
        async with http.post(url, json=_body(_after_tool(key))) as response:
            chunks = await _sse(response)
    _check_usage(chunks)
    assert _finish(chunks) == "stop"
    texts = [d["content"] for d in _deltas(chunks) if d.get("content")]
    assert len(texts) >= 2 and "".join(texts) == answer_text(key) == "done order-7"
    assert server.stats() == {(key, 1): StepStats(attempts=1, faults=0, completed=1)}


async def test_fail_rate_one_fails_only_the_first_attempt_of_each_step_with_503() -> None:
    key = "k-fail"
    async with ChaosModel(fail_rate=1.0) as server, aiohttp.ClientSession() as http:
        url = f"{server.base_url}/chat/completions"
        assert server.planned_fault(key, 0) == "fail"
        async with http.post(url, json=_body([_user(key)])) as response:
            assert response.status == 503
            assert await response.json() == {
                "error": {"message": "overloaded", "type": "server_error"}
            }
        for _ in range(2):  # the second and every later attempt succeed
            async with http.post(url, json=_body([_user(key)])) as response:
                assert _finish(await _sse(response)) == "tool_calls"
        async with http.get(f"{server.root_url}/stats") as response:
            served = parse_stats(await response.json())
    expected = {(key, 0): StepStats(attempts=3, faults=1, completed=2)}
    assert served == server.stats() == expected


async def test_stall_rate_one_stalls_the_first_attempt_then_serves_the_second() -> None:
    key = "k-stall"
    async with ChaosModel(stall_rate=1.0) as server, aiohttp.ClientSession() as http:
        url = f"{server.base_url}/chat/completions"
        watchdog = aiohttp.ClientTimeout(sock_read=0.5)
        async with http.post(url, json=_body(_after_tool(key)), timeout=watchdog) as response:
            assert response.status == 200
            first = await response.content.readuntil(b"\n\n")
            assert json.loads(first.removeprefix(b"data: "))["choices"][0]["delta"]["role"] == (
                "assistant"
            )
            with pytest.raises(TimeoutError):
                await response.content.readuntil(b"\n\n")
        # the client went away: the stalled handler notices and ends
        await asyncio.wait_for(_eventually(lambda: server.in_flight == 0), 10)
        async with http.post(url, json=_body(_after_tool(key))) as response:
            chunks = await _sse(response)
    assert "".join(d.get("content") or "" for d in _deltas(chunks)) == f"done {key}"
    assert server.stats() == {(key, 1): StepStats(attempts=2, faults=1, completed=1)}


async def test_stop_ends_a_stall_in_progress_and_cuts_its_stream() -> None:
    server = ChaosModel(stall_rate=1.0)
    await server.start()
    async with aiohttp.ClientSession() as http:
        url = f"{server.base_url}/chat/completions"
        async with http.post(url, json=_body([_user("k-stop")])) as response:
            await response.content.readuntil(b"\n\n")  # the one chunk: the handler now stalls
            assert server.in_flight == 1
            await asyncio.wait_for(server.stop(), 10)
            with pytest.raises(aiohttp.ClientPayloadError):  # cut, never finished
                await asyncio.wait_for(response.content.read(), 10)
    assert server.in_flight == 0
    assert server.stats() == {("k-stop", 0): StepStats(attempts=1, faults=1, completed=0)}


def test_faults_are_a_pure_function_of_key_step_rates_and_salt() -> None:
    one, two = ChaosModel(fail_rate=0.3, stall_rate=0.3), ChaosModel(fail_rate=0.3, stall_rate=0.3)
    plan = {
        (f"key-{n}", step): one.planned_fault(f"key-{n}", step)
        for n in range(200)
        for step in (0, 1)
    }
    assert plan == {k: two.planned_fault(*k) for k in plan}
    assert {"fail", "stall", None} == set(plan.values())
    salted = ChaosModel(fail_rate=0.3, stall_rate=0.3, salt="run-2")
    assert plan != {k: salted.planned_fault(*k) for k in plan}
    quiet = ChaosModel()
    assert all(quiet.planned_fault(*k) is None for k in plan)
    with pytest.raises(ValueError, match="fail_rate"):
        ChaosModel(fail_rate=1.5)


def test_run_in_thread_serves_synchronous_clients_until_stopped() -> None:
    base_url, stop = ChaosModel.run_in_thread(fail_rate=1.0, chunk_delay_s=0)
    try:
        request = urllib.request.Request(
            f"{base_url}/chat/completions",
            data=json.dumps(_body(_after_tool("k-sync"))).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=30)
        assert info.value.code == 503
        info.value.close()
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read().decode()
        assert body.endswith("data: [DONE]\n\n") and '"finish_reason":"stop"' in body
        with urllib.request.urlopen(
            f"{base_url.removesuffix('/v1')}/stats", timeout=30
        ) as response:
            stats = parse_stats(json.loads(response.read()))
        assert stats == {("k-sync", 1): StepStats(attempts=2, faults=1, completed=1)}
    finally:
        stop()
    stop()  # idempotent
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{base_url.removesuffix('/v1')}/stats", timeout=30)


# ---- modelwire itself ----------------------------------------------------------------------


def _bump_tool(ran: list[str]) -> Tool:
    """The `bump` tool the script calls; every call's key is appended to `ran`."""

    @mw.tool
    def bump(key: str) -> str:
        """Bump the counter of a conversation.

        Args:
            key: The conversation key.
        """
        ran.append(key)
        return f"bumped {key}"

    return bump


def _agent_on(server: ChaosModel, log: SessionLog, bump: Tool, **route: object) -> Agent[str]:
    """An agent on the keyless route `chaos` (README "Adapters") with `RetryPlugin`."""
    profile = {
        "api": "openai-completions",
        "base_url": server.base_url,
        "auth": "none",
        "models": [{"id": "chaos-1"}],
        **route,
    }
    runtime = open_runtime(config={"providers": {"chaos": profile}})
    return Agent(runtime, log, "chaos", "chaos-1", tools=[bump], plugins=[RetryPlugin()])


async def test_a_modelwire_agent_turn_retries_each_503_and_runs_the_tool_once() -> None:
    key = "conversation-alpha"
    ran: list[str] = []
    bump = _bump_tool(ran)

    async with ChaosModel(fail_rate=1.0) as server:
        log = await open_log("memory:")
        agent = _agent_on(server, log, bump)
        try:
            result = await agent.run_turn("session-chaos", key)
        finally:
            await agent.close()
        events = await log.read("session-chaos")
        await log.close()
    assert result.reason.kind == "completed", result.reason
    assert result.output == f"done {key}"
    assert ran == [key]
    assert [e.type for e in events].count("llm/retry") == 2  # one per step
    assert server.stats() == {
        (key, 0): StepStats(attempts=2, faults=1, completed=1),
        (key, 1): StepStats(attempts=2, faults=1, completed=1),
    }


async def test_a_modelwire_agent_turn_outlasts_a_stall_of_each_step() -> None:
    """The route's idle watchdog ends each stalled first attempt (`TIMEOUT`), which is retried."""
    key = "conversation-beta"
    ran: list[str] = []
    bump = _bump_tool(ran)

    async with ChaosModel(stall_rate=1.0) as server:
        log = await open_log("memory:")
        agent = _agent_on(server, log, bump, stream_idle_timeout_ms=300)
        try:
            result = await agent.run_turn("session-stall", key)
        finally:
            await agent.close()
        events = await log.read("session-stall")
        await log.close()
        await asyncio.wait_for(_eventually(lambda: server.in_flight == 0), 10)
    assert result.reason.kind == "completed", result.reason
    assert result.output == f"done {key}"
    assert ran == [key]
    retries = [e.data for e in events if e.type == "llm/retry"]
    assert len(retries) == 2, retries
    assert server.stats() == {
        (key, 0): StepStats(attempts=2, faults=1, completed=1),
        (key, 1): StepStats(attempts=2, faults=1, completed=1),
    }
