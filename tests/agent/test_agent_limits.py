"""Turn limits: `max_steps` and token `usage_limits` end a turn with `TurnLimit` (a `turn/end`
reason naming the limit, never an exception), counted from the log, so `resume_turn` — also after
a SIGKILL — keeps counting where the dead process stopped; bad limits are refused up front."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import Rig, ScriptedAdapter, of_type, text_script, tool_script
from test_agent_crash_resume import POSTGRES_URL, _durable_backends
from test_agent_resume import _after, _dead, _is

from modelwire.agent import Agent, UsageLimits
from modelwire.errors import HarnessError, TurnLimitError
from modelwire.events import TurnLimit
from modelwire.runtime import LlmRuntime
from modelwire.session import SessionLog, open_log
from modelwire.vocab import StreamChunk, TokenUsage, UsageChunk

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


def _looping(n: int, usage: TokenUsage | None = None) -> list[list[StreamChunk]]:
    scripts = []
    for i in range(n):
        chunks = tool_script(f"c{i}", "work", "{}")
        if usage is not None:
            chunks.insert(-1, UsageChunk(usage))
        scripts.append(chunks)
    return scripts


def work() -> str:
    return "more to do"


def _runtime(adapter: ScriptedAdapter) -> LlmRuntime:
    runtime = LlmRuntime()
    runtime.register_adapter(["scripted"], adapter)
    return runtime


async def test_a_model_looping_on_a_tool_ends_at_max_steps(log: SessionLog, sid: str) -> None:
    adapter = ScriptedAdapter()
    adapter.queue(*_looping(10))
    agent = Agent(_runtime(adapter), log, "scripted", "m1", tools=[work], max_steps=4)
    result = await agent.run_turn(sid, "loop")
    assert result.reason == TurnLimit("max_steps", 4, 4)
    assert (result.reason.kind, result.limit, result.output) == ("limit", result.reason, None)
    events = await log.read(sid)
    assert len(of_type(events, "step/start")) == 4 == len(adapter.requests)
    assert len(of_type(events, "tool/result")) == 4  # the last allowed step ran fully
    assert of_type(events, "turn/end")[-1].reason == TurnLimit("max_steps", 4, 4)
    assert events[-1].type == "turn/end"


async def test_the_default_bounds_a_turn_at_fifty_steps(rig: Rig) -> None:
    rig.adapter.queue(*_looping(60))
    result = await rig.agent(tools=[work]).run_turn("default", "loop")
    assert result.reason == TurnLimit("max_steps", 50, 50)
    assert len(rig.adapter.requests) == 50


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        ({"total_tokens": 250}, TurnLimit("total_tokens", 250, 330)),
        ({"input_tokens": 150}, TurnLimit("input_tokens", 150, 200)),
        ({"output_tokens": 15}, TurnLimit("output_tokens", 15, 20)),
    ],
    ids=["total", "input", "output"],
)
async def test_a_usage_limit_ends_the_turn_mid_way(
    rig: Rig, limits: dict[str, int], expected: TurnLimit
) -> None:
    usage = TokenUsage(80, 10, cache_read_tokens=20)  # billed input 100, total 110 per step
    rig.adapter.queue(*_looping(10, usage))
    result = await rig.agent(tools=[work], usage_limits=limits).run_turn("usage", "loop")
    assert result.reason == expected
    steps = {"total_tokens": 3, "input_tokens": 2, "output_tokens": 2}[expected.limit]
    assert len(rig.adapter.requests) == steps


async def test_a_last_step_past_the_budget_ends_the_turn_with_the_limit_not_completed(
    rig: Rig,
) -> None:
    """Issue 30: a budget of 50 tokens, 86 billed by the only step, is not a plain `completed`:
    the turn ends with the limit (in the log too) and still carries the step's answer."""
    rig.adapter.queue(text_script("done", usage=TokenUsage(70, 16)))
    result = await rig.agent(usage_limits=UsageLimits(total_tokens=50)).run_turn("done", "hi")
    assert result.reason == TurnLimit("total_tokens", 50, 86)
    assert (result.output, result.text, result.usage.total_tokens) == ("done", "done", 86)
    assert of_type(await rig.log.read("done"), "turn/end")[-1].reason == result.reason
    with pytest.raises(TurnLimitError, match=r"86 total tokens, past its budget"):
        result.raise_for_failure()


async def test_a_last_step_within_the_budget_completes(rig: Rig) -> None:
    rig.adapter.queue(text_script("done", usage=TokenUsage(30, 20)))
    result = await rig.agent(usage_limits=UsageLimits(total_tokens=50)).run_turn("done", "hi")
    assert (result.reason.kind, result.output) == ("completed", "done")
    assert result.raise_for_failure() is result


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"max_steps": -1}, "max_steps"),
        ({"max_steps": 0}, "max_steps"),
        ({"max_steps": True}, "max_steps"),
        ({"max_parallel_tools": 0}, "max_parallel_tools"),
        ({"usage_limits": {"total_tokens": -5}}, "usage_limits.total_tokens"),
        ({"usage_limits": UsageLimits(input_tokens=-1)}, "usage_limits.input_tokens"),
        ({"usage_limits": {"tokens": 5}}, "unknown field 'tokens'"),
        ({"usage_limits": 100}, "usage_limits must be"),
        ({"output_retries": 1.5}, "output_retries"),
    ],
    ids=lambda v: str(v),
)
def test_bad_limits_are_refused_at_construction(
    rig: Rig, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(HarnessError) as info:
        rig.agent(**options)
    assert info.value.code == "INVALID_CONFIG"
    assert field in info.value.message


async def test_resume_counts_steps_and_tokens_from_the_log(rig: Rig) -> None:
    rig.adapter.queue(*_looping(3, TokenUsage(100, 10)), text_script("done"))
    await rig.agent(tools=[work]).run_turn("source", "loop")
    events = await rig.log.read("source")
    keep = _after(events, _is("step/end"), nth=2)  # died after its second step
    rig.adapter.requests.clear()
    rig.adapter.queue(*_looping(5, TokenUsage(100, 10)))
    dead = await _dead(events, keep)
    steps = Agent(rig.runtime, dead, "scripted", "m1", tools=[work], max_steps=2)
    assert (await steps.resume_turn("resumed")).reason == TurnLimit("max_steps", 2, 2)
    assert rig.adapter.requests == []
    tokens = Agent(
        rig.runtime,
        await _dead(events, keep),
        "scripted",
        "m1",
        tools=[work],
        usage_limits={"output_tokens": 15},
    )
    assert (await tokens.resume_turn("resumed")).reason == TurnLimit("output_tokens", 15, 20)


@pytest.mark.parametrize("backend", _durable_backends())
async def test_resume_after_sigkill_keeps_counting_steps(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'limits.db'}" if backend == "sqlite" else str(POSTGRES_URL)
    sid = f"limits-{uuid.uuid4()}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)])}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HERE / "limits_child.py"),
        url,
        sid,
        env=env,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line.strip() == b"stuck"
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()
    log = await open_log(url)
    try:
        adapter = ScriptedAdapter()
        adapter.queue(*_looping(10))
        agent = Agent(_runtime(adapter), log, "scripted", "m1", tools=[work], max_steps=5)
        result = await agent.resume_turn(sid)
        assert result.reason == TurnLimit("max_steps", 5, 5)
        events = await log.read(sid)
        assert [e.data.step for e in events if e.type == "step/start"] == [1, 2, 3, 4, 5]
        codes = [r.error_code for r in of_type(events, "tool/result")]
        assert codes == [None, None, "TOOL_INTERRUPTED", None, None]
        assert len(adapter.requests) == 2  # steps 4 and 5: the dead process ran 1-3
    finally:
        await log.close()
