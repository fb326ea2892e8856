"""Fixtures of the MCP tests: the loopback model (one per module), an MCP server over streamable
HTTP (one process per module), and the record of calls each test's servers write."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web
from mcp_helpers import SERVER, LoopbackServer

from modelwire.wire.http import close_sessions


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def model_server() -> AsyncIterator[LoopbackServer]:
    """The scripted model on 127.0.0.1 (its handlers and bodies are reset by `model`)."""
    srv = LoopbackServer()
    app = web.Application()
    app.router.add_post("/chat/completions", srv.dispatch)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    srv.url = f"http://127.0.0.1:{port}"
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


def recorded(path: Path) -> list[str]:
    """The tool names of the calls recorded in `path`, in order."""
    return [line.split(" ", 1)[0] for line in path.read_text(encoding="utf-8").splitlines()]


def serve_http(*flags: str, calls: Path | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """Start `mcp_server.py` over HTTP; returns the process and its port (read from its first
    line: it listens before it prints)."""
    env = dict(os.environ)
    if calls is not None:
        env["MCP_TEST_CALLS"] = str(calls)
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), *flags], stdout=subprocess.PIPE, env=env
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    if not line.startswith("port "):
        proc.kill()
        proc.wait()
        raise AssertionError(f"the MCP test server did not start: {line!r}")
    return proc, int(line.split()[1])


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
