"""Fixtures of the MCP tests: the loopback model (one per module), an MCP server over streamable
HTTP (one process per module), and the record of calls each test's servers write."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from catchall import serve_all
from mcp_helpers import LoopbackServer, serve_http

from modelwire.wire.http import close_sessions


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def model_server() -> AsyncIterator[LoopbackServer]:
    """The scripted model on 127.0.0.1 (its handlers and bodies are reset by `model`)."""
    srv = LoopbackServer()
    runner, srv.url = await serve_all(srv.dispatch)
    try:
        yield srv
    finally:
        await close_sessions()
        await runner.cleanup()


@pytest.fixture
def model(model_server: LoopbackServer) -> LoopbackServer:
    """The module's model server, with no handler queued and no request seen yet."""
    model_server.handlers.clear()
    model_server.bodies.clear()
    return model_server


@pytest.fixture
def calls(tmp_path: Path) -> Path:
    """The file the test's servers append each tool call to (`mcp_server.py`)."""
    path = tmp_path / "calls.txt"
    path.touch()
    return path


@pytest.fixture(scope="module")
def http_calls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("http") / "calls.txt"
    path.touch()
    return path


@pytest.fixture(scope="module")
def http_url(http_calls: Path) -> Iterator[str]:
    """The MCP endpoint of one streamable-HTTP test server for the module."""
    proc, port = serve_http("--http", calls=http_calls)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()
