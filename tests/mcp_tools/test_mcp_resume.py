"""A turn whose process is SIGKILLed during a long MCP call, resumed by `resume_turn` in a new
process: the call is answered `TOOL_INTERRUPTED` (never run twice), or run again when the
server is declared idempotent — and the killed process's server does not outlive it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from mcp_helpers import Hello, LoopbackServer, by_request, exited, recorded, tool_messages

from modelwire.events import ToolCallRecord, ToolResultRecord
from modelwire.session import open_log

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


@pytest_asyncio.fixture(loop_scope="module")
async def hello(tmp_path: Path) -> AsyncIterator[Hello]:
    async with Hello(tmp_path / "hello.sock") as greeter:
        yield greeter


async def _child(
    url: str, base: str, mode: str, idempotent: bool, env: dict[str, str]
) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HERE / "mcp_child.py"),
        url,
        "s",
        base,
        mode,
        *(["idempotent"] if idempotent else []),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(SRC), **env),
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert line == b"running\n", (line, await proc.stderr.read() if proc.stderr else b"")
    return proc


@pytest.mark.parametrize("idempotent", [False, True], ids=["interrupted", "idempotent"])
async def test_sigkill_during_a_long_call_then_resume_turn_in_a_new_process(
    model: LoopbackServer, tmp_path: Path, hello: Hello, calls: Path, idempotent: bool
) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    env = {"MCP_TEST_CALLS": str(calls), **hello.env}
    model.handlers += [by_request([("t_slow", {})])] * 2
    killed = await _child(url, model.url, "run", idempotent, env)
    server_pid = await hello.next()  # the server is inside the call
    killed.send_signal(signal.SIGKILL)
    await killed.wait()
    assert await exited(server_pid)  # its stdin closed with its parent: the server left too
    async with await open_log(url) as log:
        events = await log.read("s")
    assert [e.data for e in events if e.type == "tool/call"] == [
        ToolCallRecord(1, 1, "call_1", "t_slow", "{}", "t")
    ]
    assert [e for e in events if e.type in ("tool/result", "turn/end")] == []

    resumed = await _child(url, model.url, "resume", idempotent, env)
    out, err = await asyncio.wait_for(resumed.communicate(), 120)
    assert resumed.returncode == 0, err.decode()
    report = json.loads(out.decode().splitlines()[-1])
    assert report["reason"] == "completed" and report["turn"] == 1
    async with await open_log(url) as log:
        results = [e.data for e in await log.read("s") if e.type == "tool/result"]
    (outcome,) = results
    assert isinstance(outcome, ToolResultRecord)
    (answer,) = tool_messages(model.bodies[-1])
    if idempotent:  # run again: the server answered the new call
        assert (outcome.is_error, outcome.server, recorded(calls)) == (False, "t", ["slow"] * 2)
        assert answer["content"] == "slow done"
    else:  # may have had effects: never run twice
        assert (outcome.error_code, recorded(calls)) == ("TOOL_INTERRUPTED", ["slow"])
        assert outcome.is_error and "interrupted" in str(answer["content"]).lower()
