"""MCP servers over HTTP: streamable HTTP (one server process for the module), the legacy
HTTP+SSE transport, a URL that is not MCP, nothing listening — and the header secrets, which
reach the server and nothing else (not the log, the repr, nor any error)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
import pytest_asyncio
from aiohttp import web
from catchall import serve_all
from mcp_helpers import LoopbackServer, agent_for, by_request, recorded, serve_http, tool_messages

from modelwire.errors import HarnessError
from modelwire.mcp import MCPServer
from modelwire.session import MemoryLog

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOKEN = "mcp-secret-token-0123456789"


@pytest_asyncio.fixture(loop_scope="module")
async def not_mcp() -> AsyncIterator[str]:
    """An HTTP server that answers every request with an HTML page."""

    async def page(request: web.Request) -> web.StreamResponse:
        return web.Response(text="<html><body>not MCP</body></html>", content_type="text/html")

    runner, url = await serve_all(page)
    try:
        yield url
    finally:
        await runner.cleanup()


async def test_a_streamable_http_server_serves_a_turn_with_its_header_secret(
    model: LoopbackServer,
    http_url: str,
    http_calls: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", TOKEN)
    headers = {"X-Token": "${MCP_TEST_TOKEN}", "X-Plain": "literal-secret-value"}
    server = MCPServer.http(http_url, headers=headers, name="web")
    assert TOKEN not in repr(server) and "literal-secret-value" not in repr(server)
    script = [("web_header_length", {"name": "x-token"}), ("web_add", {"a": 20, "b": 22})]
    model.handlers += [by_request(script)] * 3
    log = MemoryLog()
    http_calls.write_text("", encoding="utf-8")
    async with agent_for(model, log, [server]) as agent:
        result = await agent.run_turn("s", "go")
    assert result.text == "done: 42"
    length, _ = tool_messages(model.bodies[2])
    assert int(str(length["content"])) == len(TOKEN)  # the reference resolved, sent as a header
    assert recorded(http_calls) == ["add"]
    raw = b"".join(msgspec.json.encode(event.data) for event in await log.read("s"))
    assert TOKEN.encode() not in raw and b"literal-secret-value" not in raw


async def test_a_url_that_is_not_mcp_fails_naming_the_server_and_no_secret(not_mcp: str) -> None:
    server = MCPServer.http(f"{not_mcp}/mcp", headers={"Authorization": "Bearer sekrit-4242"})
    with pytest.raises(HarnessError) as caught:
        await server.open()
    error = caught.value
    assert error.code == "MCP"
    assert error.message.startswith(f"MCP server '127-0-0-1' (http: {not_mcp}/mcp) did not answer")
    assert "text/html" in error.message
    assert "sekrit-4242" not in repr(error) and error.__cause__ is None


async def test_nothing_listening_is_an_mcp_failure() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    server = MCPServer.http(f"http://127.0.0.1:{port}/mcp", name="away")
    with pytest.raises(HarnessError) as caught:
        await server.open()
    assert caught.value.code == "MCP"
    assert "MCP server 'away'" in caught.value.message
    assert "could not be reached" in caught.value.message


async def test_a_legacy_sse_server_serves_a_call(model: LoopbackServer) -> None:
    proc, port = serve_http("--sse")
    try:
        server = MCPServer.sse(f"http://127.0.0.1:{port}/sse", name="old")
        model.handlers += [by_request([("old_add", {"a": 1, "b": 1})])] * 2
        async with agent_for(model, MemoryLog(), [server]) as agent:
            result = await agent.run_turn("s", "1 + 1")
        assert result.text == "done: 2"
    finally:
        proc.kill()
        proc.wait()


async def test_an_http_server_that_dies_mid_call_is_an_error_result(model: LoopbackServer) -> None:
    proc, port = serve_http("--http")
    try:
        server = MCPServer.http(f"http://127.0.0.1:{port}/mcp", name="web")
        model.handlers += [by_request([("web_die", {}), ("web_add", {"a": 1, "b": 1})])] * 3
        async with agent_for(model, MemoryLog(), [server]) as agent:
            result = await agent.run_turn("s", "die")
        assert result.reason.kind == "completed"
        died, after = (str(m["content"]) for m in tool_messages(model.bodies[2]))
        assert "[MCP]" in died and "MCP server 'web'" in died and "went away" in died
        assert "could not be reached" in after  # the next call tried to connect again
    finally:
        proc.kill()
        proc.wait()
