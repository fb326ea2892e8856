"""An MCP server's life beside an agent: started once, restarted when it exits, stopped on close;
failures that never hang; `tools/list_changed`.

Each test runs its own server process (`mcp_server.py`) and checks processes by pid: after
`close()` this process has exactly the children it had before, and no session task is left.
Deadlines are the agent's `sleep`, released by the test once the server is at the point in
question (it says hello on a Unix socket), so no test waits for time to pass.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from mcp_helpers import (
    Hello,
    LoopbackServer,
    agent_for,
    by_request,
    children,
    exited,
    of_type,
    recorded,
    stdio,
    tool_messages,
)

from modelwire.agent import Tool
from modelwire.errors import HarnessError
from modelwire.events import ToolResultRecord, UserMessage
from modelwire.mcp import MCPServer
from modelwire.session import MemoryLog, TurnErrored

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def hello(tmp_path: Path) -> AsyncIterator[Hello]:
    async with Hello(tmp_path / "hello.sock") as greeter:
        yield greeter


def _session_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("mcp-server-")]


async def test_a_server_starts_at_the_first_request_and_close_leaves_no_process(
    model: LoopbackServer,
) -> None:
    before = children()
    server = stdio()
    agent = agent_for(model, MemoryLog(), [server])
    assert not server.running and server.tools == ()  # nothing starts with the agent
    model.handlers += [by_request([("t_pid", {})])] * 4
    result = await agent.run_turn("s", "your pid?")
    pid = int(result.text.removeprefix("done: "))
    assert server.running and children() == before | {pid}
    os.kill(pid, signal.SIGKILL)  # dies between turns: its end is noticed, the next call restarts
    assert await exited(pid)
    again = int((await agent.run_turn("s2", "and now?")).text.removeprefix("done: "))
    assert again != pid and children() == before | {again}
    await agent.close()
    assert not server.running
    assert children() == before  # stopped and reaped
    assert _session_tasks() == []


async def test_a_server_that_exits_mid_turn_is_an_mcp_error_result_then_restarts(
    model: LoopbackServer, calls: Path
) -> None:
    before = children()
    server = stdio(calls=calls)
    script = [("t_pid", {}), ("t_die", {}), ("t_pid", {})]
    model.handlers += [by_request(script)] * 4
    log = MemoryLog()
    async with agent_for(model, log, [server]) as agent:
        assert server.running  # `async with agent` starts the servers
        result = await agent.run_turn("s", "go")
    assert result.reason.kind == "completed"
    first, died, second = tool_messages(model.bodies[3])
    assert "went away during tools/call 'die'" in str(died["content"])
    assert int(str(first["content"])) != int(str(second["content"]))  # a new process
    outcome = of_type(await log.read("s"), "tool/result")[1]
    assert isinstance(outcome, ToolResultRecord)
    assert (outcome.error_code, outcome.server) == ("MCP", "t")
    assert recorded(calls) == ["die"]  # the dead call was not sent again
    assert children() == before and _session_tasks() == []


async def test_a_command_that_does_not_exist_ends_the_turn_with_mcp_keeping_the_message(
    model: LoopbackServer,
) -> None:
    server = MCPServer.stdio("/nonexistent/mcp-server", name="gone")
    log = MemoryLog()
    result = await agent_for(model, log, [server]).run_turn("s", "hello there")
    assert isinstance(result.reason, TurnErrored)
    failure = result.reason.failure
    assert failure.code == "MCP"
    assert failure.message == (
        "MCP server 'gone' (stdio: /nonexistent/mcp-server) could not start: command "
        "'/nonexistent/mcp-server' not found"
    )
    assert model.bodies == []  # no model request without the server's tools
    (entered,) = of_type(await log.read("s"), "user/message")
    assert isinstance(entered, UserMessage) and "hello there" in str(entered.message)


async def test_a_server_that_exits_at_start_is_named_with_what_failed() -> None:
    with pytest.raises(HarnessError) as caught:
        await stdio("--exit-start", name="quits").open()
    assert caught.value.code == "MCP"
    assert "MCP server 'quits' (stdio: " in caught.value.message
    assert caught.value.message.endswith("exited before answering the MCP handshake")


async def test_a_server_that_never_answers_fails_within_timeout_ms_and_is_reaped(
    model: LoopbackServer, hello: Hello
) -> None:
    before = children()
    deadline = asyncio.Event()

    async def sleep(seconds: float) -> None:
        assert seconds == 2.5  # the start's timeout_ms, by the agent's clock
        await deadline.wait()

    server = stdio("--stall-start", hello=hello, timeout_ms=2500)
    agent = agent_for(model, MemoryLog(), [server], sleep=sleep)
    turn = asyncio.create_task(agent.run_turn("s", "hi"))
    pid = await hello.next()  # the process runs and has the handshake unanswered
    deadline.set()
    result = await turn
    assert isinstance(result.reason, TurnErrored)
    assert result.reason.failure.code == "MCP"
    assert "did not start within 2500 ms (no answer to the MCP handshake)" in (
        result.reason.failure.message
    )
    assert pid not in children() and children() == before  # reaped before the failure returned
    await agent.close()


async def test_a_call_past_call_timeout_ms_is_tool_timeout_and_the_server_goes_on(
    model: LoopbackServer, hello: Hello, calls: Path
) -> None:
    async def sleep(seconds: float) -> None:
        if seconds == 5.0:  # the call's limit: over once the server is inside the call
            await hello.next()
            return
        await asyncio.sleep(seconds)

    server = stdio(calls=calls, hello=hello, call_timeout_ms=5000)
    model.handlers += [by_request([("t_stall", {}), ("t_add", {"a": 1, "b": 2})])] * 3
    log = MemoryLog()
    async with agent_for(model, log, [server], sleep=sleep) as agent:
        result = await agent.run_turn("s", "go")
    assert result.text == "done: 3"
    stalled = of_type(await log.read("s"), "tool/result")[0]
    assert isinstance(stalled, ToolResultRecord)
    assert stalled.error_code == "TOOL_TIMEOUT"
    assert "did not finish within 5000 ms" in str(tool_messages(model.bodies[2])[0]["content"])
    assert recorded(calls) == ["stall", "add"]


async def test_list_changed_offers_the_new_tool_to_the_next_request(
    model: LoopbackServer,
) -> None:
    server = stdio("--legacy")  # 2025 handshake: the change comes as a notification
    model.handlers += [by_request([("t_grow", {}), ("t_extra", {})])] * 3
    async with agent_for(model, MemoryLog(), [server]) as agent:
        result = await agent.run_turn("s", "grow")
    assert result.text == "done: extra ran"
    offered = [[t["function"]["name"] for t in body["tools"]] for body in model.bodies]
    assert "t_extra" not in offered[0] and "t_extra" in offered[1]


async def test_list_changed_over_a_2026_subscription(model: LoopbackServer) -> None:
    server = stdio()  # 2026 protocol: the change comes as a subscriptions/listen event
    async with agent_for(model, MemoryLog(), [server]) as agent:
        before = server.revision
        model.handlers += [by_request([("t_grow", {})])] * 2
        await agent.run_turn("s", "grow")
        assert await server.next_listing(before) > before
        assert "t_extra" in [tool.name for tool in server.tools]
        model.handlers += [by_request([("t_extra", {})])] * 2
        result = await agent.run_turn("s2", "use it")
    assert result.text == "done: extra ran"


async def test_a_clash_found_when_a_lazy_server_lists_ends_the_turn_naming_both(
    model: LoopbackServer,
) -> None:
    before = children()
    clash = Tool("t_add", "mine", {"type": "object"}, lambda args: 0)
    agent = agent_for(model, MemoryLog(), [stdio()], tools=[clash])  # not started: not known yet
    result = await agent.run_turn("s", "hi")
    assert isinstance(result.reason, TurnErrored)
    failure = result.reason.failure
    assert failure.code == "INVALID_CONFIG"
    assert "'t_add'" in failure.message and "the local tool" in failure.message
    assert "MCP server 't'" in failure.message
    await agent.close()
    assert children() == before


@pytest.mark.parametrize("needs", [True, ("add",)], ids=["all", "by-name"])
async def test_needs_approval_pauses_an_mcp_call_until_a_person_decides(
    model: LoopbackServer, calls: Path, needs: bool | tuple[str, ...]
) -> None:
    log = MemoryLog()
    model.handlers += [by_request([("t_add", {"a": 1, "b": 2})])] * 3
    agent = agent_for(model, log, [stdio(calls=calls, needs_approval=needs)])
    paused = await agent.run_turn("s", "add them")
    assert paused.reason.kind == "paused" and recorded(calls) == []  # nothing ran on the server
    [pending] = paused.pending
    assert (pending.tool, pending.server, pending.arguments) == ("t_add", "t", '{"a": 1, "b": 2}')
    await agent.decide("s", pending.call_id, True)
    done = await agent.resume_turn("s")
    assert done.text == "done: 3" and recorded(calls) == ["add"]  # approved: ran once, for real
    [result] = of_type(await log.read("s"), "tool/result")
    assert isinstance(result, ToolResultRecord) and result.server == "t"
    await agent.close()


async def test_a_denied_mcp_call_never_reaches_the_server(
    model: LoopbackServer, calls: Path
) -> None:
    model.handlers += [by_request([("t_add", {"a": 1, "b": 2})], answer="told")] * 3
    agent = agent_for(model, MemoryLog(), [stdio(calls=calls, needs_approval=True)])
    [pending] = (await agent.run_turn("s", "add them")).pending
    await agent.decide("s", pending.call_id, False, "no arithmetic today")
    done = await agent.resume_turn("s")
    assert done.text.startswith("told: a person denied") and "no arithmetic today" in done.text
    assert recorded(calls) == []
    await agent.close()


async def test_async_with_agent_stops_the_started_servers_when_another_cannot_start(
    model: LoopbackServer,
) -> None:
    before = children()
    good, gone = stdio(), MCPServer.stdio("/nonexistent/mcp-server", name="gone")
    with pytest.raises(HarnessError) as caught:
        async with agent_for(model, MemoryLog(), [good, gone]):
            pass
    assert caught.value.code == "MCP" and "MCP server 'gone'" in caught.value.message
    assert not good.running and children() == before and _session_tasks() == []
