"""Issue 35 with the turn queue: a ticket whose turn pauses is `paused`, decided while no worker
is alive (`modelwire queue approve|deny`), and a new worker resumes and finishes it.

Real processes throughout: `modelwire worker --until-idle` with the agent
`approval_agent:make_agent` (tools that count their runs in a file) against `ApprovalModel`
on 127.0.0.1, and the `modelwire queue` commands, on a SQLite file and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from approval_agent import counted
from approval_model import ApprovalModel, plan_text

from modelwire.workers import TurnQueue

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = ROOT / "tests" / "support"
PLAN = plan_text(
    [("pay", {"amount": 5}), ("look", {}), ("wire", {"amount": 500}), ("wire", {"amount": 200})]
)

pytestmark = pytest.mark.slow


@pytest.fixture
async def model() -> AsyncIterator[ApprovalModel]:
    server = ApprovalModel()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def cli(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "modelwire",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)  # a hang guard only
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_a_paused_ticket_is_decided_with_no_worker_alive_and_a_new_worker_finishes_it(
    queue_url: str, model: ApprovalModel, tmp_path: Path
) -> None:
    counter = tmp_path / "ran.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODELWIRE_")} | {
        "PYTHONPATH": os.pathsep.join((str(ROOT / "src"), str(SUPPORT))),
        "APPROVAL_MODEL_URL": model.base_url,
        "APPROVAL_COUNTER": str(counter),
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "COLUMNS": "200",
    }
    worker = ("worker", "--log", queue_url, "--agent", "approval_agent:make_agent", "--until-idle")
    async with await TurnQueue.open(queue_url) as queue:
        first = await queue.submit("s-approval", PLAN)
        second = await queue.submit("s-approval", "after the payment")
        code, _, err = await cli(env, *worker)
        assert code == 0, err
        assert (await queue.status(first)).state == "paused"
        assert (await queue.status(second)).state == "queued"  # it waits behind the pause
        assert counted(str(counter)) == ["look call_1"]
        assert (await queue.counts()).paused == 1

        code, out, err = await cli(env, "queue", "wait", first.id, "--log", queue_url)
        assert code == 1
        assert "call_0: pay" in err and "call_2: wire" in err and "call_3: wire" in err
        assert f"modelwire queue approve --log {queue_url} {first.id} CALL_ID" in err
        code, out, _ = await cli(env, "queue", "status", "--log", queue_url)
        assert code == 0 and any(line.split()[:2] == ["paused", "1"] for line in out.splitlines())
        code, out, _ = await cli(env, "queue", "list", "--state", "paused", "--log", queue_url)
        assert code == 0 and first.id in out and second.id not in out

        code, _, err = await cli(env, "queue", "cancel", first.id, "--log", queue_url)
        assert code == 2 and "deny them" in err  # a paused ticket ends by its decisions

        # no worker is alive: the decisions go to the log and the queue alone
        code, out, err = await cli(env, "queue", "approve", first.id, "call_0", "--log", queue_url)
        assert (code, out) == (0, "call_0 approved\n"), err
        assert (await queue.status(first)).state == "paused"
        code, out, err = await cli(
            env, "queue", "deny", first.id, "call_2", "--reason", "too much", "--log", queue_url
        )
        assert (code, out) == (0, "call_2 denied\n"), err
        assert (await queue.status(first)).state == "paused"  # call_3 still waits
        code, out, err = await cli(
            env, "sessions", "decide", "s-approval", "call_3", "--approve", "--log", queue_url
        )
        assert (code, out) == (0, "call_3 approved\n"), err
        assert f"a worker resumes ticket {first.id}" in err
        assert (await queue.status(first)).state == "queued"  # the last decision queued it
        code, _, err = await cli(env, "queue", "approve", first.id, "call_2", "--log", queue_url)
        assert code == 2 and "already denied" in err
        code, _, err = await cli(env, "queue", "approve", first.id, "nope", "--log", queue_url)
        assert code == 2 and "'nope'" in err

        code, _, err = await cli(env, *worker)  # a new worker resumes and finishes the ticket
        assert code == 0, err
        done = await queue.status(first)
        assert done.state == "completed" and done.claims == 2
        assert done.output is not None and done.output.startswith("results: paid 5 | looked | ")
        assert "too much" in done.output and done.output.endswith(" | wired 200")
        later = await queue.status(second)
        assert (later.state, later.output) == ("completed", "echo after the payment")
    ran = sorted(counted(str(counter)))
    assert ran == ["look call_1", "pay call_0", "wire call_3"]  # each ran once
    code, out, _ = await cli(env, "queue", "status", "--json", "--log", queue_url)
    assert json.loads(out)["paused"] == 0
