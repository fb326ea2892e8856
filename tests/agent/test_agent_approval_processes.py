"""Issue 35 across processes: a paused turn is decided and resumed by other processes, on SQLite
and PostgreSQL logs, with a side-effect counter showing each tool ran exactly once.

Every child (`approval_child.py`) is a fresh Python process with its own `Agent`
(`approval_agent.py`) that talks HTTP to `ApprovalModel` on 127.0.0.1 (in this test process).
Its tools append one line per executed call to a counter file (fsynced), so a call run twice
would show twice. Nothing of a paused turn is in any process's memory: the child that paused is
SIGKILLed while it waits, and two more children decide and resume.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from approval_agent import counted
from approval_model import ApprovalModel, plan_text

from modelwire.agent import approval
from modelwire.session import open_log

HERE = Path(__file__).resolve().parent
SUPPORT = HERE.parent / "support"
SRC = HERE.parents[1] / "src"
CHILD = HERE / "approval_child.py"
POSTGRES_URL = os.environ.get("MODELWIRE_TEST_POSTGRES_URL")
PLAN = plan_text([("pay", {"amount": 5}), ("look", {}), ("wire", {"amount": 500})])


def _backends() -> list[Any]:
    skip = pytest.mark.skipif(not POSTGRES_URL, reason="MODELWIRE_TEST_POSTGRES_URL is not set")
    return ["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, skip])]


@pytest.fixture(params=_backends())
def log_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'approval.db'}"
    assert POSTGRES_URL
    return POSTGRES_URL


@pytest.fixture
async def model() -> AsyncIterator[ApprovalModel]:
    server = ApprovalModel()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


class Children:
    """Spawns children on one log and session, sharing the model and the counter file."""

    def __init__(self, url: str, sid: str, model: ApprovalModel, counter: Path) -> None:
        self.url, self.sid, self.counter = url, sid, counter
        self.env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join((str(SRC), str(SUPPORT), str(HERE))),
            APPROVAL_MODEL_URL=model.base_url,
            APPROVAL_COUNTER=str(counter),
        )

    async def spawn(self, *args: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            str(CHILD),
            self.url,
            self.sid,
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
        )

    async def line(self, proc: asyncio.subprocess.Process) -> dict[str, Any]:
        assert proc.stdout is not None and proc.stderr is not None
        raw = await asyncio.wait_for(proc.stdout.readline(), 60)  # a hang guard only
        if not raw:
            await proc.wait()
            raise AssertionError(f"child said nothing: {(await proc.stderr.read()).decode()}")
        return dict(json.loads(raw))

    async def run(self, *args: str) -> dict[str, Any]:
        proc = await self.spawn(*args)
        try:
            report = await self.line(proc)
        finally:
            if proc.returncode is None:
                await asyncio.wait_for(proc.wait(), 60)
        assert proc.returncode == 0
        return report


async def test_a_paused_turn_is_decided_and_resumed_by_new_processes(
    log_url: str, sid: str, model: ApprovalModel, tmp_path: Path
) -> None:
    kids = Children(log_url, sid, model, tmp_path / "ran.txt")
    paused = await kids.run("run", PLAN)
    assert (paused["reason"], paused["pending"]) == ("paused", ["call_0", "call_2"])
    assert counted(str(kids.counter)) == ["look call_1"]  # the free call ran at the pause
    decided = (await kids.run("decide", "call_0=yes"))["decided"]
    assert decided[0][:2] == ["call_0", True] and decided[0][2].startswith("child-")
    log = await open_log(log_url)  # this process decides the other call, with no agent at all
    try:
        state = await approval.approval_state(log, sid)
        assert [p.call_id for p in state.undecided] == ["call_2"]
        await approval.decide(log, sid, "call_2", False, "over the limit", by="test")
    finally:
        await log.close()
    done = await kids.run("resume")
    assert (done["reason"], done["turn"]) == ("completed", 1)
    assert done["text"].startswith("results: paid 5 | looked | ")
    assert "over the limit" in done["text"]  # the model was told the reason, in call order
    assert sorted(counted(str(kids.counter))) == ["look call_1", "pay call_0"]


async def test_sigkill_while_paused_then_decide_and_resume_elsewhere_runs_each_tool_once(
    log_url: str, sid: str, model: ApprovalModel, tmp_path: Path
) -> None:
    kids = Children(log_url, sid, model, tmp_path / "ran.txt")
    holder = await kids.spawn("run", PLAN, "hold")
    try:
        paused = await kids.line(holder)
        assert paused["pending"] == ["call_0", "call_2"]
        assert holder.stdout is not None
        assert await asyncio.wait_for(holder.stdout.readline(), 60) == b"holding\n"
    finally:
        if holder.returncode is None:
            holder.send_signal(signal.SIGKILL)
        await holder.wait()
    assert holder.returncode == -signal.SIGKILL
    early = await kids.run("resume")
    assert early["code"] == "APPROVAL_PENDING" and "call_0 (pay" in early["message"]
    assert len((await kids.run("decide", "call_0=yes", "call_2=yes"))["decided"]) == 2
    done = await kids.run("resume")
    assert done["reason"] == "completed"
    assert done["text"] == "results: paid 5 | looked | wired 500"
    log = await open_log(log_url)
    try:
        state = await approval.approval_state(log, sid)
        assert (state.paused_turn, state.waiting, len(state.decisions)) == (None, (), 2)
    finally:
        await log.close()
    ran = counted(str(kids.counter))
    assert sorted(ran) == ["look call_1", "pay call_0", "wire call_2"]  # each exactly once
