"""Helpers of the MCP tests: the real test server (`mcp_server.py`), a scripted model, processes.

The model is the agent tests' DeepSeek-wire `LoopbackServer` on 127.0.0.1 with the real
`DeepSeekAdapter`; `by_request` answers each request by what it holds (a tool call while the
script has calls left, then a text answer), so concurrent turns need no ordering. Processes are
checked by pid: `children()` lists this process's children from `/proc`, `exited(pid)` waits on a
pidfd (no polling) for any process to end.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from aiohttp import web

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "agent"))  # the agent tests' loopback model

from test_agent_deepseek_scenarios import (  # noqa: E402
    API_KEY,
    MODEL,
    ROUTE,
    USAGE,
    LoopbackServer,
    delta,
    runtime_for,
    sse,
)

from modelwire.agent import Agent  # noqa: E402
from modelwire.mcp import MCPServer  # noqa: E402
from modelwire.session import Event, SessionLog  # noqa: E402

__all__ = [
    "API_KEY",
    "MODEL",
    "ROUTE",
    "SERVER",
    "Call",
    "LoopbackServer",
    "agent_for",
    "by_request",
    "of_type",
    "children",
    "exited",
    "stdio",
    "tool_messages",
]

SERVER = HERE / "mcp_server.py"

Call = tuple[str, dict[str, object]]
"""A tool call the scripted model makes: (tool name, arguments)."""


def stdio(*flags: str, name: str = "t", calls: Path | None = None, **options: object) -> MCPServer:
    """The test server over stdio (`calls`: the file each call is recorded in)."""
    env = {"MCP_TEST_CALLS": str(calls)} if calls is not None else None
    return MCPServer.stdio(sys.executable, [str(SERVER), *flags], env=env, name=name, **options)  # type: ignore[arg-type]


def agent_for(model: LoopbackServer, log: SessionLog, servers: Sequence[MCPServer], **kw: object) -> Agent:
    """An agent on the loopback model offering `servers`' tools."""
    return Agent(runtime=runtime_for(model), log=log, provider=ROUTE, model=MODEL, mcp_servers=servers, **kw)  # type: ignore[arg-type]


def _calls_in(body: dict[str, object]) -> int:
    messages = body["messages"]
    assert isinstance(messages, list)
    return sum(1 for m in messages if m.get("role") == "tool")


def by_request(script: Sequence[Call], answer: str = "done") -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A handler answering a request with the next call of `script` (by how many tool results the
    request carries), then with the text `answer` plus the last tool result's text."""

    async def handle(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        done = _calls_in(body)
        if done < len(script):
            name, arguments = script[done]
            call = {
                "index": 0,
                "id": f"call_{done + 1}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            return await sse(delta(role="assistant", tool_calls=[call]), delta("tool_calls"), USAGE)(request)
        last = body["messages"][-1]
        text = f"{answer}: {last.get('content')}" if last.get("role") == "tool" else answer
        return await sse(delta(role="assistant", content=text), delta("stop"), USAGE)(request)

    return handle


def tool_messages(body: dict[str, object]) -> list[dict[str, object]]:
    """The tool-result messages of a request body."""
    messages = body["messages"]
    assert isinstance(messages, list)
    return [m for m in messages if m.get("role") == "tool"]


def of_type(events: Sequence[Event], name: str) -> list[object]:
    return [e.data for e in events if e.type == name]


def children() -> set[int]:
    """The pids of this process's children (every thread's), from /proc."""
    out: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            out.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return out


async def exited(pid: int, timeout: float = 30.0) -> bool:
    """Wait for process `pid` to end (a pidfd turns readable); False if it is still running
    after `timeout` seconds (a bound, not a measurement). True at once if it is gone."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.add_reader(fd, lambda: done.done() or done.set_result(None))
    try:
        await asyncio.wait_for(done, timeout)
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
        os.close(fd)
