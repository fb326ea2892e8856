"""Issue 35 in `modelwire chat --agent MODULE:FACTORY`: a tool that needs approval asks y/N on a
terminal (a real pty: answered `n` with a reason, then `y`); off a terminal the turn pauses and
chat prints how to decide, never running the tool; `modelwire sessions decide` decides, and
chat on the session resumes the turn.

The agent is `approval_agent:make_agent` (tests/support) against `ApprovalModel` on 127.0.0.1;
its tools count what they ran in a file, so "never ran" and "ran once" are observed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from approval_agent import counted
from approval_model import ApprovalModel, plan_text
from cli_helpers import cli_env, run_cli_async
from pty_helpers import POSIX_ONLY, PtyCli

SUPPORT = Path(__file__).resolve().parents[1] / "support"
SRC = Path(__file__).resolve().parents[2] / "src"
PLAN = plan_text([("pay", {"amount": 5}), ("look", {}), ("wire", {"amount": 500})])
AGENT = "approval_agent:make_agent"


@pytest.fixture
async def model() -> AsyncIterator[ApprovalModel]:
    server = ApprovalModel()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def _extra(model: ApprovalModel, counter: Path) -> dict[str, str]:
    return {
        "PYTHONPATH": f"{SRC}:{SUPPORT}",
        "APPROVAL_MODEL_URL": model.base_url,
        "APPROVAL_COUNTER": str(counter),
    }


@pytest.mark.skipif(POSIX_ONLY, reason="needs a POSIX pty")
async def test_on_a_terminal_chat_asks_y_n_for_each_call_needing_approval(
    tmp_path: Path, model: ApprovalModel
) -> None:
    counter = tmp_path / "ran.txt"
    db = tmp_path / "log.db"
    args = ["chat", "--agent", AGENT, "--log", str(db), PLAN]
    async with PtyCli(tmp_path, args, env=_extra(model, counter)) as cli:
        at = await cli.until('Run tool pay with {"amount": 5}? [y/N]')
        assert counted(str(counter)) == ["look call_1"]  # the free call ran; pay waits
        cli.send(b"n\r")
        at = await cli.until("Why not? (Enter: no reason)", after=at)
        cli.send(b"too much for today\r")
        at = await cli.until('Run tool wire with {"amount": 500}? [y/N]', after=at)
        cli.send(b"y\r")
        await cli.until("results: ", after=at)
        code = await cli.exit_code()
    assert code == 0, cli.text
    assert "results: " in cli.text and "too much for today" in cli.text and "wired 500" in cli.text
    assert sorted(counted(str(counter))) == ["look call_1", "wire call_2"]  # pay never ran


async def test_off_a_terminal_the_turn_pauses_prints_how_to_decide_and_runs_nothing_unasked(
    tmp_path: Path, model: ApprovalModel
) -> None:
    counter = tmp_path / "ran.txt"
    db = str(tmp_path / "log.db")
    env = cli_env(tmp_path, _extra(model, counter))
    paused = await run_cli_async(tmp_path, ["chat", "--agent", AGENT, "--log", db, PLAN], env)
    assert paused.code == 1, paused.err
    assert "the turn is paused" in paused.err
    assert (
        'call_0: pay {"amount": 5}' in paused.err and 'call_2: wire {"amount": 500}' in paused.err
    )
    sid = paused.err.split("session ", 1)[1].split()[0]
    assert f"modelwire sessions decide {sid} CALL_ID --approve" in paused.err
    assert f"modelwire chat --agent {AGENT} --session {sid}" in paused.err
    assert counted(str(counter)) == ["look call_1"]

    again = await run_cli_async(
        tmp_path, ["chat", "--agent", AGENT, "--log", db, "--session", sid, "--json"], env
    )
    report = json.loads(again.out)
    assert again.code == 1 and report["finish"] == "paused"  # still undecided: nothing ran
    assert report["error"]["code"] == "TURN_PAUSED"
    decide = ["sessions", "decide", sid, "--log", db]
    approved = await run_cli_async(tmp_path, [*decide[:3], "call_0", "--approve", *decide[3:]], env)
    assert (approved.code, approved.out) == (0, "call_0 approved\n"), approved.err
    assert "still waiting for a decision: call_2 (wire)" in approved.err
    changed = await run_cli_async(tmp_path, [*decide[:3], "call_0", "--deny", *decide[3:]], env)
    assert changed.code == 2 and "already approved" in changed.err
    unknown = await run_cli_async(tmp_path, [*decide[:3], "call_9", "--deny", *decide[3:]], env)
    assert unknown.code == 2 and "'call_9'" in unknown.err
    denied = await run_cli_async(
        tmp_path, [*decide[:3], "call_2", "--deny", "--reason", "no wires", *decide[3:]], env
    )
    assert denied.code == 0 and "every call is decided" in denied.err

    done = await run_cli_async(
        tmp_path, ["chat", "--agent", AGENT, "--log", db, "--session", sid], env
    )
    assert done.code == 0, done.err
    assert done.out.startswith("results: paid 5 | looked | ") and "no wires" in done.out
    assert sorted(counted(str(counter))) == ["look call_1", "pay call_0"]
    shown = await run_cli_async(tmp_path, ["sessions", "show", sid, "--log", db], env)
    assert shown.code == 0, shown.err
    assert "turn 1 paused" in shown.out and "turn 1 resumed" in shown.out
    assert "pay [call_0] approved by" in shown.out and "wire [call_2] denied by" in shown.out


async def test_agent_refuses_the_options_it_brings_itself(tmp_path: Path) -> None:
    result = await run_cli_async(
        tmp_path, ["chat", "--agent", AGENT, "-m", "deepseek:x", "hi"], cli_env(tmp_path)
    )
    assert result.code == 2 and "drop -m" in result.err


@pytest.mark.skipif(POSIX_ONLY, reason="needs a POSIX pty")
async def test_the_interactive_chat_asks_between_its_prompts(
    tmp_path: Path, model: ApprovalModel
) -> None:
    counter = tmp_path / "ran.txt"
    args = ["chat", "--agent", AGENT, "--log", str(tmp_path / "log.db")]
    async with PtyCli(tmp_path, args, env=_extra(model, counter)) as cli:
        at = await cli.prompt()
        cli.send(PLAN.encode() + b"\r")
        at = await cli.until("Run tool pay with", after=at)
        cli.send(b"y\r")
        at = await cli.until("Run tool wire with", after=at)
        cli.send(b"n\r")
        at = await cli.until("Why not?", after=at)
        cli.send(b"\r")  # no reason
        at = await cli.until("results: paid 5 | looked | ", after=at)
        at = await cli.prompt(after=at)
        cli.send(b"\x04")
        code = await cli.exit_code()
    assert code == 0, cli.text
    assert sorted(counted(str(counter))) == ["look call_1", "pay call_0"]
