"""An MCP server's tools in agent turns: listing, calls, results, errors, bad input.

One real server (`mcp_server.py`, the SDK's FastMCP) over stdio is opened for the module and
offered to each test's agent; an agent never stops a server it did not start, so the server
outlives them. The model is the scripted loopback DeepSeek-wire server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from mcp_helpers import (
    LoopbackServer,
    agent_for,
    by_request,
    of_type,
    recorded,
    stdio,
    tool_messages,
)

from modelwire.agent import Agent, Tool
from modelwire.errors import HarnessError
from modelwire.events import ToolCallRecord, ToolResultRecord
from modelwire.mcp import MCPServer
from modelwire.session import MemoryLog

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def calls_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "calls.txt"
    path.touch()
    return path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(calls_file: Path) -> AsyncIterator[MCPServer]:
    async with stdio(calls=calls_file) as srv:
        yield srv


def _tools(body: dict[str, object]) -> dict[str, dict[str, object]]:
    tools = body.get("tools") or []
    assert isinstance(tools, list)
    return {t["function"]["name"]: t["function"] for t in tools}


async def test_tool_listing_reaches_the_model_request(
    model: LoopbackServer, server: MCPServer
) -> None:
    model.handlers.append(by_request([]))
    local = Tool("local_echo", "echo", {"type": "object"}, lambda args: "x")
    agent = agent_for(model, MemoryLog(), [server], tools=[local])
    result = await agent.run_turn("s", "hello")
    assert result.reason.kind == "completed"
    offered = _tools(model.bodies[0])
    assert next(iter(offered)) == "local_echo"  # the agent's own tools first
    assert {"t_add", "t_boom", "t_weather", "t_picture", "t_grow"} <= set(offered)
    assert offered["t_add"]["description"] == "Add two integers."
    schema = offered["t_add"]["parameters"]
    assert isinstance(schema, dict) and schema["required"] == ["a", "b"]
    assert schema["properties"]["a"]["type"] == "integer"  # type: ignore[index]


async def test_a_tool_with_an_invalid_input_schema_is_left_out_and_said_why(
    model: LoopbackServer, server: MCPServer
) -> None:
    model.handlers.append(by_request([]))
    await agent_for(model, MemoryLog(), [server]).run_turn("s", "hello")
    assert "t_broken" not in _tools(model.bodies[0])
    (problem,) = server.problems
    assert "'broken' is left out" in problem and "not a valid JSON Schema" in problem


async def test_a_call_runs_on_the_server_once_and_its_result_reaches_the_next_request(
    model: LoopbackServer, server: MCPServer, calls_file: Path
) -> None:
    calls_file.write_text("", encoding="utf-8")
    model.handlers += [by_request([("t_add", {"a": 2, "b": 40})])] * 2
    log = MemoryLog()
    result = await agent_for(model, log, [server]).run_turn("s", "2 + 40?")
    assert result.reason.kind == "completed" and result.text == "done: 42"
    assert recorded(calls_file) == ["add"]
    (answer,) = tool_messages(model.bodies[1])
    assert answer["content"] == "42" and answer["tool_call_id"] == "call_1"
    events = await log.read("s")
    (call,) = of_type(events, "tool/call")
    assert call == ToolCallRecord(1, 1, "call_1", "t_add", '{"a": 2, "b": 40}', "t")
    (outcome,) = of_type(events, "tool/result")
    assert isinstance(outcome, ToolResultRecord)
    assert (outcome.server, outcome.is_error, outcome.error_code) == ("t", False, None)


async def test_a_raising_tool_is_an_error_result_the_model_is_told(
    model: LoopbackServer, server: MCPServer
) -> None:
    model.handlers += [by_request([("t_boom", {})])] * 2
    log = MemoryLog()
    result = await agent_for(model, log, [server]).run_turn("s", "boom")
    assert result.reason.kind == "completed"
    (answer,) = tool_messages(model.bodies[1])
    text = str(answer["content"])
    assert "MCP server 't': tool 'boom' reported an error" in text
    (outcome,) = of_type(await log.read("s"), "tool/result")
    assert isinstance(outcome, ToolResultRecord)
    assert (outcome.is_error, outcome.error_code, outcome.server) == (True, "TOOL_FAILED", "t")


async def test_arguments_that_do_not_match_the_schema_never_reach_the_server(
    model: LoopbackServer, server: MCPServer, calls_file: Path
) -> None:
    calls_file.write_text("", encoding="utf-8")
    model.handlers += [by_request([("t_add", {"a": "two"})])] * 2
    log = MemoryLog()
    await agent_for(model, log, [server]).run_turn("s", "add")
    assert recorded(calls_file) == []  # refused before any request to the server
    (outcome,) = of_type(await log.read("s"), "tool/result")
    assert isinstance(outcome, ToolResultRecord)
    assert (outcome.is_error, outcome.error_code) == (True, "INVALID_ARGS")
    text = json.dumps(tool_messages(model.bodies[1])[0]["content"])
    assert "invalid arguments for tool 'add' of MCP server 't'" in text
    assert "is not of type" in text or "required" in text


async def test_structured_content_and_images_become_tool_results(
    model: LoopbackServer, server: MCPServer
) -> None:
    model.handlers += [by_request([("t_weather", {"city": "Oslo"}), ("t_picture", {})])] * 3
    result = await agent_for(model, MemoryLog(), [server]).run_turn("s", "weather")
    assert result.reason.kind == "completed"
    weather, picture = tool_messages(model.bodies[2])
    assert json.loads(str(weather["content"])) == {"city": "Oslo", "celsius": 21}
    assert "[image image/png, about" in str(picture["content"])


async def test_a_name_taken_by_a_local_tool_is_refused_at_construction_naming_both(
    model: LoopbackServer, server: MCPServer
) -> None:
    clash = Tool("t_add", "mine", {"type": "object"}, lambda args: 0)
    with pytest.raises(HarnessError) as caught:
        agent_for(model, MemoryLog(), [server], tools=[clash])
    message = caught.value.message
    assert caught.value.code == "INVALID_CONFIG"
    assert "'t_add'" in message and "local tool" in message and "MCP server 't'" in message


async def test_concurrent_turns_share_the_one_server(
    model: LoopbackServer, server: MCPServer
) -> None:
    model.handlers += [by_request([("t_pid", {})])] * 4
    agent = agent_for(model, MemoryLog(), [server])
    first, second = await asyncio.gather(agent.run_turn("a", "pid?"), agent.run_turn("b", "pid?"))
    assert first.text == second.text  # the same process answered both
    await agent.close()
    assert server.running  # not the agent's to stop: it was open before the agent


async def test_two_servers_of_one_name_are_refused() -> None:
    with pytest.raises(HarnessError) as caught:
        Agent(None, MemoryLog(), "p", "m", mcp_servers=[stdio(), stdio()])  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_CONFIG" and "two MCP servers are named 't'" in str(
        caught.value
    )
