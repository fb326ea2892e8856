"""A real MCP server for the tests, written with the official SDK's `MCPServer` (FastMCP).

Usage: `python mcp_server.py [--http | --sse] [--legacy] [--stall-start] [--exit-start]`.
Over stdio by default; `--http`/`--sse` serve streamable HTTP / HTTP+SSE on a free loopback port
and print `port N` once it listens. `--legacy` drops `server/discover`, so clients fall back to
the 2025 `initialize` handshake (list changes are then notifications, not `subscriptions/listen`
events). `--stall-start` never answers anything; `--exit-start` exits at once with status 3.

Each tool call appends one line `<tool> <json arguments>` to the file `$MCP_TEST_CALLS` (when
set), so a test can count exactly what ran on the server.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import sys
from pathlib import Path

if "--exit-start" in sys.argv:  # before importing the SDK: these two start at once
    raise SystemExit(3)
if "--stall-start" in sys.argv:
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
    """Never answers."""
    _record("stall", {})
    await asyncio.sleep(3600)
    return "never"


@app.tool()
async def slow(marker: str) -> str:
    """Its first call writes its pid to file `marker` and never returns; later calls return."""
    if _record("slow", {"marker": marker}) > 1:
        return "slow done"
    Path(marker).write_text(str(os.getpid()), encoding="utf-8")
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
if LEGACY:
    app._lowlevel_server._request_handlers.pop("server/discover")


def _serve_http(sse: bool) -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"port {sock.getsockname()[1]}", flush=True)
    web = app.sse_app() if sse else app.streamable_http_app()
    server = uvicorn.Server(uvicorn.Config(web, log_level="error", lifespan="on"))
    asyncio.run(server.serve(sockets=[sock]))


def main() -> None:
    if "--http" in sys.argv or "--sse" in sys.argv:
        _serve_http("--sse" in sys.argv)
    else:
        app.run()


if __name__ == "__main__":
    main()
