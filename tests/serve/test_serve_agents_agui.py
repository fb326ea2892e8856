"""Issue 37: the agent turn as AG-UI events on `POST /v1/agents/{name}/ag-ui`, each event
validated by the `ag-ui-protocol` package's own models (`ag_ui.core`), resumable after a seq."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from approval_model import plan_text
from pydantic import TypeAdapter
from web_helpers import WebModel, read_sse, serving

ag_ui = pytest.importorskip("ag_ui.core")
EVENT: TypeAdapter[Any] = TypeAdapter(ag_ui.Event)


@pytest.fixture(autouse=True)
def _counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPROVAL_COUNTER", str(tmp_path / "ran.txt"))


@pytest.fixture
async def model() -> WebModel:
    m = WebModel()
    await m.start()
    yield m  # type: ignore[misc]
    await m.stop()


def run_input(thread: str, *texts: str) -> dict[str, Any]:
    messages = [{"id": f"m{i}", "role": "user", "content": t} for i, t in enumerate(texts)]
    body = ag_ui.RunAgentInput(
        thread_id=thread,
        run_id="run-1",
        messages=messages,
        state=None,
        tools=[],
        context=[],
        forwarded_props=None,
    )
    return json.loads(body.model_dump_json(by_alias=True, exclude_none=True))


def validated(events: list[dict[str, Any]]) -> list[Any]:
    return [EVENT.validate_python(json.loads(e["data"])) for e in events]


async def test_ag_ui_events_of_a_turn_with_reasoning_text_and_a_tool_call(model: WebModel) -> None:
    async with serving(model) as url, aiohttp.ClientSession() as http:
        endpoint = f"{url}/v1/agents/bot/ag-ui"
        async with http.post(endpoint, json=run_input("g1", "hello world")) as r:
            assert r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")
            text_events = validated(await read_sse(r))
        later = run_input("g1", "hello world", plan_text([("look", {})]))
        later["messages"].insert(1, {"id": "a", "role": "assistant", "content": "echo hello world"})
        async with http.post(endpoint, json=later) as r:
            tool_events = validated(await read_sse(r))
    kinds = [e.type.value for e in text_events]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert "REASONING_MESSAGE_CONTENT" in kinds and "STEP_STARTED" in kinds
    text = "".join(e.delta for e in text_events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "echo hello world"
    assert text_events[0].thread_id == "g1"
    kinds = [e.type.value for e in tool_events]
    start = next(e for e in tool_events if e.type.value == "TOOL_CALL_START")
    assert start.tool_call_name == "look"
    result = next(e for e in tool_events if e.type.value == "TOOL_CALL_RESULT")
    assert result.tool_call_id == start.tool_call_id and result.content == "looked"
    assert kinds.index("TOOL_CALL_END") < kinds.index("TOOL_CALL_RESULT")


async def test_ag_ui_resumes_after_a_seq_with_no_gap_and_no_duplicate(model: WebModel) -> None:
    model.hold = True
    async with serving(model) as url, aiohttp.ClientSession() as http:
        response = await http.post(f"{url}/v1/agents/bot/ag-ui", json=run_input("g2", "a b c"))
        head = await read_sse(response, stop_after=2)
        response.close()
        await asyncio.wait_for(model.holding.wait(), 30)
        stream = f"{url}/v1/agents/bot/ag-ui/g2/stream"
        async with http.get(stream, headers={"Last-Event-ID": str(head[-1]["id"])}) as resumed:
            model.release.set()
            rest = await read_sse(resumed)
        async with http.get(f"{stream}?from_seq=0") as whole:
            everything = await read_sse(whole)
    first = await_all_from(everything, head)
    assert [(e["id"], e["data"]) for e in head + rest] == first
    events = validated(head + rest)
    assert events[-1].type.value == "RUN_FINISHED"


def await_all_from(everything: list[dict[str, Any]], head: list[dict[str, Any]]) -> list[Any]:
    """The whole turn's events as a resume from the turn's first seq sends them, preceded by the
    first event (the one at that seq, which `from_seq` excludes)."""
    return [(head[0]["id"], head[0]["data"])] + [(e["id"], e["data"]) for e in everything]


async def test_ag_ui_bad_input(model: WebModel) -> None:
    async with serving(model) as url, aiohttp.ClientSession() as http:
        endpoint = f"{url}/v1/agents/bot/ag-ui"
        async with http.post(endpoint, data=b"[") as r:
            assert r.status == 400
        async with http.post(endpoint, json={"threadId": "x", "runId": "r", "messages": []}) as r:
            assert r.status == 400
        async with http.post(f"{url}/v1/agents/other/ag-ui", json=run_input("x", "y")) as r:
            assert r.status == 404


async def test_ag_ui_a_call_waiting_for_approval_is_a_custom_event(model: WebModel) -> None:
    async with serving(model) as url, aiohttp.ClientSession() as http:
        body = run_input("g3", plan_text([("pay", {"amount": 7})]))
        async with http.post(f"{url}/v1/agents/bot/ag-ui", json=body) as r:
            events = validated(await read_sse(r))
        decide = f"{url}/v1/agents/bot/chat/g3/decisions"
        async with http.post(decide, json={"call_id": "call_0", "approve": False}) as r:
            answer = await r.json()
        stream = f"{url}/v1/agents/bot/ag-ui/g3/stream"
        async with http.get(stream, headers={"Last-Event-ID": str(answer["from_seq"])}) as r:
            resumed = validated(await read_sse(r))
    custom = [e for e in events if e.type.value == "CUSTOM"]
    assert [(e.name, e.value) for e in custom] == [
        ("tool_approval_request", {"toolCallId": "call_0"})
    ]
    assert events[-1].type.value == "RUN_FINISHED"
    result = next(e for e in resumed if e.type.value == "TOOL_CALL_RESULT")
    assert result.tool_call_id == "call_0"
    assert resumed[0].type.value == "RUN_STARTED" and resumed[-1].type.value == "RUN_FINISHED"
