"""The added latency of one MCP tool call, over stdio and over streamable HTTP, against a plain
Python tool (issue 34; target < 2 ms on loopback).

Standalone: `python benchmarks/bench_mcp.py [--calls 300] [--repeats 5] [--json]` (needs the `mcp`
extra). One FastMCP server (the SDK's own server API, `add(a, b)`) runs as a child process over
stdio and another over streamable HTTP on 127.0.0.1. Each call goes through the agent's own tool
path, `run_tool_call` (arguments decoded and validated, the call, the result made a tool-result
message), exactly as a Step runs it; the plain tool is a Python function doing the same sum. Every
call's answer is checked. Reported per call (wall ms, median of the repeats, each the mean of
`--calls` sequential calls after a warm-up): the plain tool, the SDK's own `Client.call_tool` on
the same session (the floor the SDK and the server set), and modelwire's MCP tool; "added" is
modelwire's MCP call minus the plain tool's. This process's CPU per call (`getrusage`) shows what
modelwire adds to the SDK's own call, apart from the server's time and the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from modelwire.agent import Tool, run_tool_call
from modelwire.mcp import MCPServer
from modelwire.vocab import TextBlock, ToolCallBlock

SERVER = '''
import socket, sys
from mcp.server.mcpserver import MCPServer
app = MCPServer("bench", log_level="ERROR")

@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

if sys.argv[1:] == ["http"]:
    import asyncio, uvicorn
    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted sockets inherit it
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    server = uvicorn.Server(uvicorn.Config(app.streamable_http_app(), log_level="error"))
    asyncio.run(server.serve(sockets=[sock]))
else:
    app.run()
'''


def _plain(args: dict[str, object]) -> int:
    a, b = args["a"], args["b"]
    assert isinstance(a, int) and isinstance(b, int)
    return a + b


PLAIN = Tool(
    "add",
    "Add two integers.",
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    _plain,
)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _per_call_ms(call: Callable[[int], Awaitable[str]], calls: int) -> tuple[float, float]:
    """(wall ms, this process's CPU ms) per call."""
    for i in range(20):  # warm-up
        assert await call(i) == str(i + 1)
    start, cpu = time.perf_counter(), _cpu()
    for i in range(calls):
        assert await call(i) == str(i + 1), "wrong answer"
    return (time.perf_counter() - start) / calls * 1000.0, (_cpu() - cpu) / calls * 1000.0


def _tool_path(tools: dict[str, Tool], name: str) -> Callable[[int], Awaitable[str]]:
    async def call(i: int) -> str:
        block = ToolCallBlock(f"c{i}", name, f'{{"a": {i}, "b": 1}}')
        outcome = await run_tool_call(block, tools)
        assert not outcome.is_error, outcome.message
        (result,) = outcome.message.content
        (text,) = result.content  # type: ignore[union-attr]
        assert isinstance(text, TextBlock)
        return text.text

    return call


def _sdk_path(server: MCPServer) -> Callable[[int], Awaitable[str]]:
    client = server._connection._client  # type: ignore[union-attr]  # the SDK's session, as is
    assert client is not None

    async def call(i: int) -> str:
        result = await client.call_tool("add", {"a": i, "b": 1})
        return str(result.content[0].text)  # type: ignore[union-attr]

    return call


async def _measure(server: MCPServer, calls: int, repeats: int) -> dict[str, float]:
    async with server:
        tools = {t.name: t for t in server.tools}
        paths = {
            "plain": _tool_path({"add": PLAIN}, "add"),
            "sdk": _sdk_path(server),
            "mcp": _tool_path(tools, f"{server.name}_add"),
        }
        samples: dict[str, list[tuple[float, float]]] = {k: [] for k in paths}
        for _ in range(repeats):  # interleaved, so drift hits every path alike
            for key, path in paths.items():
                samples[key].append(await _per_call_ms(path, calls))
    row = {key: statistics.median(wall for wall, _ in values) for key, values in samples.items()}
    row.update(
        {
            f"{key}_cpu": statistics.median(cpu for _, cpu in values)
            for key, values in samples.items()
        }
    )
    row["added"] = row["mcp"] - row["plain"]
    row["over_sdk"] = row["mcp"] - row["sdk"]
    row["over_sdk_cpu"] = row["mcp_cpu"] - row["sdk_cpu"]
    return row


def _http_server(script: Path) -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen([sys.executable, str(script), "http"], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


async def main(calls: int, repeats: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "bench_server.py"
        script.write_text(SERVER, encoding="utf-8")
        rows = {
            "stdio": await _measure(
                MCPServer.stdio(sys.executable, [str(script)], name="b"), calls, repeats
            )
        }
        proc, port = _http_server(script)
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            rows["http"] = await _measure(MCPServer.http(url, name="b"), calls, repeats)
        finally:
            proc.kill()
            proc.wait()
    return rows


def _report(rows: dict[str, dict[str, float]], calls: int, repeats: int) -> None:
    print(f"MCP tool call latency, wall ms per call (median of {repeats} x {calls} calls):")
    print(
        "  transport  plain tool  SDK call_tool  modelwire MCP tool  added  over the SDK"
        "  client CPU ms SDK · modelwire (over)"
    )
    for name, row in rows.items():
        print(
            f"  {name:<9}  {row['plain']:>10.3f}  {row['sdk']:>13.3f}  {row['mcp']:>18.3f}"
            f"  {row['added']:>5.2f}  {row['over_sdk']:>+12.3f}"
            f"  {row['sdk_cpu']:.3f} · {row['mcp_cpu']:.3f} ({row['over_sdk_cpu']:+.3f})"
        )
    for name, row in rows.items():
        verdict = "met" if row["added"] < 2.0 else "missed"
        print(f"  target < 2 ms added over {name}: {row['added']:.2f} ms -> {verdict}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    result = asyncio.run(main(opts.calls, opts.repeats))
    if opts.json:
        print(json.dumps(result))
    else:
        _report(result, opts.calls, opts.repeats)
