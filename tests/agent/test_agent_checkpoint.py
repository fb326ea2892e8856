"""G.17: the checkpoint barrier — request facts are durable before the adapter is invoked."""

from __future__ import annotations

from collections.abc import Sequence

from agent_helpers import (
    FlakyFlushLog,
    RetryTimes,
    Rig,
    error_script,
    of_type,
    text_script,
    tool_script,
    types,
)

from modelwire.agent import Agent, Tool
from modelwire.session import MemoryLog
from modelwire.session.log import Row
from modelwire.vocab import BlockStart, TextDelta

SID = "s1"


class TracingLog(FlakyFlushLog):
    """Also records the types of every store, so flushes can be placed between appends."""

    async def _store(
        self,
        session_id: str,
        rows: Sequence[Row],
        *,
        barrier: bool,
        expect_seq: int | None = None,
    ) -> int:
        self.trace.extend(f"store:{name}" for name, _, _ in rows)
        return await super()._store(session_id, rows, barrier=barrier, expect_seq=expect_seq)


def _agent(rig: Rig, log: FlakyFlushLog, **kwargs: object) -> Agent:
    return Agent(runtime=rig.runtime, log=log, provider="scripted", model="m1", **kwargs)  # type: ignore[arg-type]


async def test_g17_01_the_model_stream_starts_only_after_the_flush_completed(rig: Rig) -> None:
    log = TracingLog(MemoryLog())
    rig.adapter.on_stream = lambda options: log.trace.append("adapter")
    rig.adapter.queue(text_script("ok"))
    await _agent(rig, log).run_turn(SID, "hi")
    trace = log.trace
    adapter_at = trace.index("adapter")
    assert trace[adapter_at - 2 : adapter_at] == ["flush-start", "flush-end"]
    # every request fact was stored before that flush
    facts = trace[:adapter_at]
    for fact in ("store:step/start", "store:user/message", "store:request/header"):
        assert fact in facts
    assert facts.index("store:request/context") < adapter_at - 2


async def test_g17_01_each_retry_attempt_is_behind_its_own_flush(rig: Rig) -> None:
    log = TracingLog(MemoryLog())
    rig.adapter.on_stream = lambda options: log.trace.append("adapter")
    rig.adapter.queue(
        [BlockStart(0, "text"), TextDelta(0, "x"), *error_script("SERVER")], text_script("ok")
    )
    await _agent(rig, log, plugins=[RetryTimes(1)]).run_turn(SID, "hi")
    trace = log.trace
    adapter_calls = [i for i, t in enumerate(trace) if t == "adapter"]
    assert len(adapter_calls) == 2
    second = adapter_calls[1]
    assert trace[second - 2 : second] == ["flush-start", "flush-end"]
    # the failed attempt's chunks were stored before the second barrier
    assert "store:assistant/chunk" in trace[adapter_calls[0] : second - 2]


async def test_g17_04_a_rejected_flush_prevents_dispatch_and_surfaces_the_error(rig: Rig) -> None:
    log = FlakyFlushLog(MemoryLog(), fail_at={2})  # 1 = pre-step checkpoint, 2 = the barrier
    rig.adapter.queue(text_script("never"))
    plugin = RetryTimes(5)
    result = await _agent(rig, log, plugins=[plugin]).run_turn(SID, "hi")
    assert result.reason.kind == "error"
    assert result.failure is not None
    assert (result.failure.code, result.failure.message) == ("LOG_UNAVAILABLE", "disk on fire")
    assert rig.adapter.requests == []
    assert plugin.calls == []  # F20: never offered to request recovery
    events = await log.read(SID)
    assert "assistant/chunk" not in types(events)
    assert types(events)[-2:] == ["step/end", "turn/end"]


async def test_g17_05_pre_step_flushes_the_session(rig: Rig) -> None:
    log = TracingLog(MemoryLog())
    rig.adapter.queue(tool_script("c1", "t", "{}"), text_script("done"))
    tool = Tool("t", "d", {"type": "object"}, lambda a: "r")
    await _agent(rig, log, tools=[tool]).run_turn(SID, "hi")
    trace = log.trace
    result_at = trace.index("store:tool/result")
    second_step = [i for i, t in enumerate(trace) if t == "store:step/start"][1]
    between = trace[result_at:second_step]
    assert "flush-end" in between
    events = await log.read(SID)
    assert len(of_type(events, "step/start")) == 2
