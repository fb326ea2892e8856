"""Issue 35 in the inspector: a paused turn shows its waiting calls (read-only), then the
decisions and the reopened turn once it is resumed.

The session is made by a real agent (`approval_agent`, tests/support) against `ApprovalModel`
on 127.0.0.1, and read over HTTP from the inspector app as the page reads it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any  # JSON decoded from the server: its shape is what these checks check

import pytest
from aiohttp.test_utils import TestClient, TestServer
from approval_agent import make_agent
from approval_model import ApprovalModel, plan_text

from modelwire.session import MemoryLog
from modelwire.ui import create_app

PLAN = plan_text([("pay", {"amount": 5}), ("look", {}), ("wire", {"amount": 500})])


@pytest.fixture
async def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ApprovalModel]:
    server = ApprovalModel()
    await server.start()
    monkeypatch.setenv("APPROVAL_MODEL_URL", server.base_url)
    monkeypatch.setenv("APPROVAL_COUNTER", str(tmp_path / "ran.txt"))
    try:
        yield server
    finally:
        await server.stop()


async def view_of(client: TestClient, sid: str) -> Any:
    response = await client.get("/api/session", params={"id": sid})
    assert response.status == 200
    return await response.json()


def notes(view: Any) -> list[str]:
    return [i["blocks"][0]["text"] for i in view["transcript"] if i["kind"] == "note"]


async def test_a_paused_turn_shows_its_waiting_calls_then_the_decisions(
    model: ApprovalModel,
) -> None:
    log = MemoryLog()
    agent = make_agent(log)
    client = TestClient(TestServer(create_app(log, poll_interval=0.02)))
    await client.start_server()
    try:
        await agent.run_turn("s", PLAN)
        view = await view_of(client, "s")
        [turn] = view["turns"]
        assert turn["outcome"] == "paused" and view["running"] is False
        assert 'pay {"amount": 5} [call_0]' in turn["detail"] and "[call_2]" in turn["detail"]
        tools = {t["call_id"]: t for t in turn["steps"][0]["tools"]}
        assert {k: t["approval"] for k, t in tools.items()} == {
            "call_0": "pending",
            "call_1": None,
            "call_2": "pending",
        }
        assert tools["call_0"]["end"] is None and tools["call_1"]["end"] is not None
        assert any(
            n.startswith("turn 1 paused: waiting for a decision on pay") for n in notes(view)
        )
        listed = await (await client.get("/api/sessions")).json()
        assert listed["items"][0]["outcome"] == "paused"
        refused = await client.post("/api/session", params={"id": "s"})
        assert refused.status == 405  # the inspector stays read-only

        await agent.decide("s", "call_0", True, by="alice")
        await agent.decide("s", "call_2", False, "over the limit")
        await agent.resume_turn("s")
        view = await view_of(client, "s")
        [turn] = view["turns"]
        assert turn["outcome"] == "completed" and [s["step"] for s in turn["steps"]] == [1, 2]
        tools = {t["call_id"]: t for t in turn["steps"][0]["tools"]}
        assert (tools["call_0"]["approval"], tools["call_0"]["is_error"]) == ("approved", False)
        assert (tools["call_2"]["approval"], tools["call_2"]["error_code"]) == (
            "denied",
            "TOOL_DENIED",
        )
        said = notes(view)
        assert "tool call call_0 (pay) approved by alice" in said
        assert "tool call call_2 (wire) denied: over the limit" in said
        assert "turn 1 resumed: its decided calls are answered" in said
    finally:
        await client.close()
        await agent.close()
