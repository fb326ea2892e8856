"""`modelwire ui` as a command: the typer function in `modelwire.cli.ui`, registered on a typer
app the way `app.py` registers it, run as a real process against a SQLite log."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any  # JSON decoded from the server: its shape is what these checks check

import aiohttp
from ui_logs import FakeClock, build_sessions, rig_for

from modelwire.session.sqlite import SqliteLog

APP = (
    "import typer\n"
    "from modelwire.cli.ui import ui\n"
    "app = typer.Typer(add_completion=False)\n"
    "app.command('ui')(ui)\n"
    "app.command('other')(lambda: None)\n"  # two commands: `ui` is a subcommand, as in app.py
    "app()\n"
)


async def start(*args: str) -> asyncio.subprocess.Process:
    env = {k: v for k, v in os.environ.items() if k != "MODELWIRE_LOG"}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        APP,
        "ui",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )


async def test_the_command_serves_the_log_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    clock = FakeClock()
    log = await SqliteLog.open(f"sqlite:///{db}", clock=clock)
    ids = await build_sessions(rig_for(log, clock))
    await log.close()
    process = await start("--log", f"sqlite:///{db}", "--port", "0")
    assert process.stdout is not None and process.stderr is not None
    try:
        lines = []
        async with asyncio.timeout(30):
            while not (lines and lines[-1].startswith("http://")):
                lines.append((await process.stdout.readline()).decode().strip())
        url = lines[-1]
        assert url.startswith("http://127.0.0.1:")
        assert str(db) in lines[0]
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{url}api/sessions") as response:
                page: Any = await response.json()
            async with http.get(url) as response:
                assert response.status == 200
        assert {row["session_id"] for row in page["items"]} == set(ids.all())
    finally:
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(30):
            code = await process.wait()
    assert code == 130  # interrupted, the CLI's Ctrl-C exit code
    assert "Traceback" not in (await process.stderr.read()).decode()


async def test_a_remote_host_needs_the_explicit_flag(tmp_path: Path) -> None:
    process = await start("--log", "memory:", "--host", "0.0.0.0", "--port", "0")
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert "--allow-remote" in err.decode() and "Traceback" not in err.decode()


async def test_a_busy_port_is_a_one_line_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        process = await start("--log", "memory:", "--port", str(port))
        _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    text = err.decode()
    assert f"cannot listen on 127.0.0.1:{port}" in text and len(text.strip().splitlines()) == 1


async def _status(port: int, host: str) -> int:
    async with aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{port}/api/sessions"
        async with http.get(url, headers={"Host": host}) as response:
            return response.status


async def test_a_remote_server_keeps_the_host_check_and_answers_only_the_allowed_names() -> None:
    process = await start(
        "--log",
        "memory:",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--allow-remote",
        "--allowed-host",
        "Inspector.Example.",
        "--allowed-host",
        "ops.internal",
    )
    assert process.stdout is not None
    try:
        lines: list[str] = []
        async with asyncio.timeout(30):
            while not (lines and lines[-1].startswith("http://")):
                lines.append((await process.stdout.readline()).decode().strip())
        port = int(lines[-1].rstrip("/").rsplit(":", 1)[1])
        # DNS rebinding: a page of evil.example resolving its name to this server's address
        for foreign in ("evil.example", f"evil.example:{port}", "inspector.example.evil.example"):
            assert await _status(port, foreign) == 421, foreign
        for known in (
            f"inspector.example:{port}",
            "INSPECTOR.example.",
            "ops.internal",
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            f"10.1.2.3:{port}",  # an address: only a page loaded from that address sends it
        ):
            assert await _status(port, known) == 200, known
    finally:
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(30):
            await process.wait()


async def test_an_allowed_host_that_is_no_host_name_is_a_usage_error() -> None:
    for bad in ("*.example", "host:8765", "a/b", "", "ex ample"):
        process = await start("--log", "memory:", "--allowed-host", bad)
        _, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 2, bad
        assert "--allowed-host" in err.decode() and "Traceback" not in err.decode(), bad


async def test_a_loopback_server_answers_an_allowed_name_but_no_address() -> None:
    from modelwire.ui import serve

    async with await serve("memory:", allowed_hosts=["box.lan"]) as server:
        assert await _status(server.port, "box.lan") == 200
        assert await _status(server.port, f"10.1.2.3:{server.port}") == 421
        assert await _status(server.port, "evil.example") == 421
