"""A real MCP server for the tests, written with the official SDK's `MCPServer` (FastMCP).

Usage: `python mcp_server.py [--http | --sse] [--legacy] [--stall-start] [--exit-start]`.
Over stdio by default; `--http`/`--sse` serve streamable HTTP / HTTP+SSE on a free loopback port
and print `port N` once it listens. `--legacy` serves only the 2025 `initialize` handshake (the
SDK's handshake loop), so clients fall back to it (list changes are then notifications, not `subscriptions/listen`
events). `--stall-start` never answers anything; `--exit-start` exits at once with status 3.

Each tool call appends one line `<tool> <json arguments>` to the file `$MCP_TEST_CALLS` (when
set), so a test can count exactly what ran on the server. A process that reaches a point a test
waits for (a stalled start, a call that hangs) sends its pid to the Unix socket
`$MCP_TEST_HELLO`, so the test waits on an event, never on time.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import sys
from pathlib import Path


def _hello() -> None:
    """Tell the test this process got there: send its pid to the socket `$MCP_TEST_HELLO`."""
    path = os.environ.get("MCP_TEST_HELLO")
    if path:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(path)
            sock.sendall(str(os.getpid()).encode())


if "--exit-start" in sys.argv:  # before importing the SDK: these two start at once
    raise SystemExit(3)
if "--stall-start" in sys.argv:
    _hello()
    for _ in sys.stdin:  # read, never answer; leave when stdin closes
        pass
    raise SystemExit(0)

from mcp.server.mcpserver import Context, Image  # noqa: E402
from mcp.server.mcpserver import MCPServer as FastMCP  # noqa: E402

LEGACY = "--legacy" in sys.argv
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

app = FastMCP("tests", log_level="ERROR")


def _record(tool: str, arguments: dict[str, object]) -> int:
    """Append the call to `$MCP_TEST_CALLS`; how many calls of `tool` ran (this one included)."""
    path = os.environ.get("MCP_TEST_CALLS")
    if not path:
        return 1
    with open(path, "a", encoding="utf-8") as out:
        out.write(f"{tool} {json.dumps(arguments, sort_keys=True)}\n")
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return sum(1 for line in lines if line.split(" ", 1)[0] == tool)


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    _record("add", {"a": a, "b": b})
    return a + b


@app.tool()
def boom() -> str:
    """Always fails."""
    _record("boom", {})
    raise ValueError("kaboom")


@app.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@app.tool()
def env_length(name: str) -> int:
    """The length of environment variable `name` in the server (-1 when unset)."""
    return len(os.environ[name]) if name in os.environ else -1


@app.tool()
def header_length(name: str, ctx: Context) -> int:
    """The length of HTTP request header `name` (-1 when absent or not over HTTP)."""
    request = getattr(ctx.request_context, "request", None)
    headers = getattr(request, "headers", None)
    return len(headers[name]) if headers is not None and name in headers else -1


@app.tool()
def weather(city: str) -> dict[str, object]:
    """Structured weather of a city."""
    _record("weather", {"city": city})
    return {"city": city, "celsius": 21}


@app.tool()
def picture() -> Image:
    """A one-pixel PNG."""
    return Image(data=PNG, format="png")


@app.tool()
def die() -> str:
    """Exits the server process in the middle of the call."""
    _record("die", {})
    os._exit(3)


@app.tool()
async def stall() -> str:
    """Says hello (`$MCP_TEST_HELLO`), then never answers."""
    _record("stall", {})
    _hello()
    await asyncio.sleep(3600)
    return "never"


@app.tool()
async def slow() -> str:
    """Its first call says hello and never returns; later calls return at once."""
    if _record("slow", {}) > 1:
        return "slow done"
    _hello()
    await asyncio.sleep(3600)
    return "never"


@app.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `extra` and says the tool list changed."""

    def extra() -> str:
        """Added at run time."""
        return "extra ran"

    app.add_tool(extra)
    if LEGACY:
        await ctx.request_context.session.send_tool_list_changed()
    else:
        await ctx.notify_tools_changed()
    return "grown"


@app.tool()
def broken(x: int) -> int:
    """Advertised with an invalid input schema (below)."""
    return x


_tool = app._tool_manager.get_tool("broken")
assert _tool is not None
_tool.parameters = {"type": "object", "properties": {"x": {"type": "no-such-type"}}}


async def _serve_legacy() -> None:
    """Serve the 2025 handshake era only (the SDK's handshake loop), over stdio."""
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    low = app._lowlevel_server
    async with stdio_server() as (read, write), low.lifespan(low) as state:
        options = low.create_initialization_options()
        await serve_loop(low, read, write, lifespan_state=state, init_options=options)


def _serve_http(sse: bool) -> None:
    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # else uvicorn's given socket waits
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"port {sock.getsockname()[1]}", flush=True)
    web = app.sse_app() if sse else app.streamable_http_app()
    server = uvicorn.Server(uvicorn.Config(web, log_level="error", lifespan="on"))
    asyncio.run(server.serve(sockets=[sock]))


def main() -> None:
    if "--http" in sys.argv or "--sse" in sys.argv:
        _serve_http("--sse" in sys.argv)
    elif LEGACY:
        asyncio.run(_serve_legacy())
    else:
        app.run()


if __name__ == "__main__":
    main()
