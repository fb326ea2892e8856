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
import subprocess
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
    "Hello",
    "LoopbackServer",
    "agent_for",
    "by_request",
    "children",
    "exited",
    "of_type",
    "recorded",
    "serve_http",
    "stdio",
    "tool_messages",
]

SERVER = HERE / "mcp_server.py"

Call = tuple[str, dict[str, object]]
"""A tool call the scripted model makes: (tool name, arguments)."""


def stdio(
    *flags: str,
    name: str = "t",
    calls: Path | None = None,
    hello: Hello | None = None,
    **options: object,
) -> MCPServer:
    """The test server over stdio (`calls`: the file each call is recorded in; `hello`: where it
    says it reached a waited-for point)."""
    env = {"MCP_TEST_CALLS": str(calls)} if calls is not None else {}
    env.update(hello.env if hello is not None else {})
    return MCPServer.stdio(sys.executable, [str(SERVER), *flags], env=env, name=name, **options)  # type: ignore[arg-type]


def agent_for(
    model: LoopbackServer, log: SessionLog, servers: Sequence[MCPServer], **kw: object
) -> Agent:
    """An agent on the loopback model offering `servers`' tools."""
    return Agent(
        runtime=runtime_for(model), log=log, provider=ROUTE, model=MODEL, mcp_servers=servers, **kw
    )  # type: ignore[arg-type]


def _calls_in(body: dict[str, object]) -> int:
    messages = body["messages"]
    assert isinstance(messages, list)
    return sum(1 for m in messages if m.get("role") == "tool")


def by_request(
    script: Sequence[Call], answer: str = "done"
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
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
            return await sse(
                delta(role="assistant", tool_calls=[call]), delta("tool_calls"), USAGE
            )(request)
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


def recorded(path: Path) -> list[str]:
    """The tool names of the calls recorded in `path`, in order."""
    return [line.split(" ", 1)[0] for line in path.read_text(encoding="utf-8").splitlines()]


def serve_http(*flags: str, calls: Path | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """Start `mcp_server.py` over HTTP; returns the process and its port (read from its first
    line: it listens before it prints)."""
    env = dict(os.environ)
    if calls is not None:
        env["MCP_TEST_CALLS"] = str(calls)
    proc = subprocess.Popen([sys.executable, str(SERVER), *flags], stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    if not line.startswith("port "):
        proc.kill()
        proc.wait()
        raise AssertionError(f"the MCP test server did not start: {line!r}")
    return proc, int(line.split()[1])


class Hello:
    """A Unix socket the test server sends its pid to (`$MCP_TEST_HELLO`) when it reaches a point a
    test waits for; `await hello.next()` is that pid."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pids: asyncio.Queue[int] = asyncio.Queue()
        self._server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> Hello:
        async def greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._pids.put_nowait(int((await reader.read()).decode()))
            writer.close()

        self._server = await asyncio.start_unix_server(greet, str(self.path))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    @property
    def env(self) -> dict[str, str]:
        return {"MCP_TEST_HELLO": str(self.path)}

    async def next(self, timeout: float = 60.0) -> int:
        """The pid of the next hello (`timeout` bounds a broken test, it measures nothing)."""
        return await asyncio.wait_for(self._pids.get(), timeout)
