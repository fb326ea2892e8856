"""Sync calls for scripts and notebooks: `Agent.run_sync` and `LlmRuntime.generate_sync` work from a
plain script, from inside a running loop (a notebook's), and `Ctrl-C` cancels the turn cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from agent_helpers import Rig, of_type, text_script

from modelwire.errors import HarnessError
from modelwire.session import TurnAborted
from modelwire.vocab import GenerateOptions, TextBlock, user_message

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


async def _child(*args: str) -> asyncio.subprocess.Process:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)])}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(HERE / "sync_child.py"),
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_run_sync_and_generate_sync_from_a_plain_script(tmp_path: Path) -> None:
    proc = await _child("plain", f"sqlite:///{tmp_path / 'sync.db'}")
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode().splitlines() == ["hello from run_sync", "hello from generate"]
    assert err.decode() == ""  # the log and the loop closed at exit, nothing left unclosed


async def test_run_sync_inside_a_running_loop_does_not_deadlock(rig: Rig) -> None:
    """As in a notebook cell: the caller's loop is running (this test's) and blocked meanwhile."""
    rig.adapter.queue(text_script("from a notebook"), text_script("generated"))
    agent = rig.agent()
    result = agent.run_sync("nb", "hi")
    assert (result.reason.kind, result.output) == ("completed", "from a notebook")
    generated = rig.runtime.generate_sync(GenerateOptions("scripted", "m1", (user_message("x"),)))
    assert generated.message.content == (TextBlock("generated"),)
    assert of_type(await rig.log.read("nb"), "turn/end")[-1].reason.kind == "completed"


async def test_run_sync_from_the_loop_that_serves_it_is_refused(rig: Rig) -> None:
    rig.adapter.queue(text_script("never"))
    agent = rig.agent()

    async def nested() -> object:
        return agent.run_sync("nested", "hi")

    from modelwire.runtime.sync import run_sync

    with pytest.raises(HarnessError) as info:
        run_sync(nested)
    assert info.value.code == "INVALID_ARGS"


@pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")
async def test_ctrl_c_cancels_the_turn_cleanly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sync.db'}"
    proc = await _child("ctrl-c", url)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert line.strip() == b"streaming"
    proc.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode().splitlines() == ["interrupted", TurnAborted.kind]
    assert "Traceback" not in err.decode()
