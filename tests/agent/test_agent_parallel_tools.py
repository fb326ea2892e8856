"""The tool calls of one step run concurrently (at most `max_parallel_tools`), their results are
committed in call order, `timeout_ms` answers `TOOL_TIMEOUT`, and cancelling the turn cancels the
running calls (nothing outlives it; the calls are answered `TOOL_INTERRUPTED` later). Time is a
`FakeClock`: delays overlap in virtual time, no test waits in real time."""

from __future__ import annotations

import asyncio

import pytest
from agent_helpers import Rig, of_type, text_script
from fake_clock import FakeClock

from modelwire.agent import Agent, RunContext, Tool
from modelwire.session import TurnAborted
from modelwire.vocab import BlockEnd, BlockStart, Finish, StreamChunk, ToolCallBlock, ToolCalls

SID = "parallel"
DELAYS = {"a": 0.3, "b": 0.1, "c": 0.2}


def _calls(*names: str) -> list[StreamChunk]:
    """One response calling `wait` once per name, in that order."""
    chunks: list[StreamChunk] = []
    for index, name in enumerate(names):
        call = ToolCallBlock(f"call-{name}", "wait", f'{{"name": "{name}"}}')
        chunks += [BlockStart(index, "tool-call"), BlockEnd(index, call)]
    return [*chunks, Finish(ToolCalls())]


class Waits:
    """A `wait(name)` tool sleeping `DELAYS[name]` on the fake clock, recording when it ran."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.cancelled: list[str] = []

    def tool(self, **options: float) -> Tool:
        async def wait(name: str) -> str:
            self.started[name] = self.clock.now
            try:
                await self.clock.sleep(DELAYS.get(name, 5.0))
            except asyncio.CancelledError:
                self.cancelled.append(name)
                raise
            self.ended[name] = self.clock.now
            return f"{name} done"

        return Tool.from_function(wait, **options)  # type: ignore[arg-type]


def _agent(rig: Rig, clock: FakeClock, waits: Waits, **options: object) -> Agent:
    timeout = options.pop("timeout_ms", None)
    tool = waits.tool(timeout_ms=timeout) if timeout is not None else waits.tool()  # type: ignore[arg-type]
    return rig.agent(tools=[tool], sleep=clock.sleep, clock=clock.ms, **options)


async def test_three_tools_take_the_slowest_ones_time_results_in_call_order(rig: Rig) -> None:
    clock = FakeClock()
    waits = Waits(clock)
    rig.adapter.queue(_calls("a", "b", "c"), text_script("done"))
    async with clock.running():
        result = await _agent(rig, clock, waits).run_turn(SID, "go")
    assert result.reason.kind == "completed"
    assert waits.started == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert waits.ended == DELAYS
    assert clock.now == pytest.approx(0.3)  # the slowest, not the sum (0.6)
    events = await rig.log.read(SID)
    assert [r.call_id for r in of_type(events, "tool/result")] == ["call-a", "call-b", "call-c"]
    order = [e.type for e in events]
    assert order.index("tool/result") > max(i for i, t in enumerate(order) if t == "tool/call")
    answered = [m.source.call_id for m in rig.adapter.requests[1].messages[-3:]]  # type: ignore[union-attr]
    assert answered == ["call-a", "call-b", "call-c"]


async def test_max_parallel_tools_bounds_the_calls_running_at_once(rig: Rig) -> None:
    clock = FakeClock()
    waits = Waits(clock)
    rig.adapter.queue(_calls("a", "b", "c"), text_script("done"))
    async with clock.running():
        await _agent(rig, clock, waits, max_parallel_tools=1).run_turn(SID, "go")
    assert waits.started == {"a": 0.0, "b": pytest.approx(0.3), "c": pytest.approx(0.4)}
    assert clock.now == pytest.approx(0.6)


async def test_a_slow_tool_times_out_by_the_agents_clock(rig: Rig) -> None:
    clock = FakeClock()
    waits = Waits(clock)
    rig.adapter.queue(_calls("a", "slow"), text_script("done"))
    async with clock.running():
        result = await _agent(rig, clock, waits, timeout_ms=500).run_turn(SID, "go")
    assert result.reason.kind == "completed"
    fast, slow = of_type(await rig.log.read(SID), "tool/result")
    assert (fast.is_error, fast.error_code) == (False, None)
    assert (slow.is_error, slow.error_code) == (True, "TOOL_TIMEOUT")
    assert "500 ms" in slow.message.content[0].content[0].text
    assert waits.cancelled == ["slow"] and "slow" not in waits.ended
    assert clock.now == pytest.approx(0.5)


async def test_cancelling_the_turn_cancels_running_tools_and_leaves_no_task(rig: Rig) -> None:
    clock = FakeClock()
    waits = Waits(clock)
    rig.adapter.queue(_calls("x", "y", "z"), text_script("done"))  # unknown names sleep 5 s
    async with clock.running():
        agent = _agent(rig, clock, waits)
        task = asyncio.create_task(agent.run_turn(SID, "go"))
        while len(waits.started) < 3:
            await asyncio.sleep(0)
        assert clock.now == 0.0
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        driver_and_me = 2
        assert len([t for t in asyncio.all_tasks() if not t.done()]) == driver_and_me
    assert sorted(waits.cancelled) == ["x", "y", "z"] and waits.ended == {}
    events = await rig.log.read(SID)
    assert len(of_type(events, "tool/call")) == 3 and of_type(events, "tool/result") == []
    assert isinstance(of_type(events, "turn/end")[-1].reason, TurnAborted)
    result = await agent.run_turn(SID, "again")
    records = of_type(await rig.log.read(SID), "tool/result")
    assert [(r.call_id, r.error_code) for r in records] == [
        ("call-x", "TOOL_INTERRUPTED"),
        ("call-y", "TOOL_INTERRUPTED"),
        ("call-z", "TOOL_INTERRUPTED"),
    ]
    assert result.reason.kind == "completed"


async def test_a_tool_that_cancels_the_turn_ends_it_aborted(rig: Rig) -> None:
    """Through its `RunContext` a tool is inside the turn, as a hook is: the turn ends `aborted`
    (returned), and the other running call is cancelled."""
    clock = FakeClock()
    waits = Waits(clock)

    async def stop(ctx: RunContext) -> str:
        ctx.signal.cancel("user", "the tool gave up")
        return "stopping"

    stop_call = ToolCallBlock("call-stop", "stop", "{}")
    both = [
        *_calls("x")[:-1],
        BlockStart(5, "tool-call"),
        BlockEnd(5, stop_call),
        Finish(ToolCalls()),
    ]
    rig.adapter.queue(both, text_script("never"))
    async with clock.running():
        agent = rig.agent(tools=[waits.tool(), stop], sleep=clock.sleep, clock=clock.ms)
        result = await agent.run_turn(SID, "go")
    assert isinstance(result.reason, TurnAborted)
    assert result.reason.reason.reason == "the tool gave up"
    assert waits.cancelled == ["x"] and len(rig.adapter.requests) == 1
