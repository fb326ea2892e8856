"""Several writers on one session, until leases land: every decision the loop derives from the
log (the turn number, the repair of a dead turn, the retry count) is appended only if the log
still ends where it was read (`expect_seq`), so a stale writer is refused with a clear code
instead of corrupting the chain; and `run_turn` repairs another writer's open turn only once that
turn has been silent for `repair_after_ms` by the agent's (injected) clock."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from agent_helpers import Rig, ScriptedAdapter, error_script, of_type, text_script

from modelwire.agent import Agent
from modelwire.errors import ErrorCode, HarnessError
from modelwire.policy import RetryPolicy, policy_key, resolve_retry_policy
from modelwire.retry import RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import Event, LlmRetry, MemoryLog, StepStart, TurnStart, open_log
from modelwire.vocab import LlmFailure

SID = "shared-session"


class _RetryingAdapter(ScriptedAdapter):
    def provider_retry_policy(self, provider: str) -> RetryPolicy | None:
        return resolve_retry_policy({"mode": "normal", "max_retries": 1})


class _Interloper(MemoryLog):
    """Another worker appends `foreign` right after this writer read the retry chain."""

    def __init__(self, clock: int) -> None:
        super().__init__(clock=lambda: clock)
        self.foreign: list[LlmRetry] = []

    async def read(
        self, session_id: str, from_seq: int = 0, to_seq: int | None = None, *, chunks: bool = True
    ) -> list[Event]:
        events = await super().read(session_id, from_seq, to_seq, chunks=chunks)
        if self.foreign and any(e.type == "assistant/chunk" for e in events):
            await self.append(session_id, self.foreign.pop())  # the other worker's decision
        return events


async def test_a_stale_retry_decision_is_refused_and_the_budget_is_not_double_spent() -> None:
    runtime = LlmRuntime()
    adapter = _RetryingAdapter()
    runtime.register_adapter(["scripted"], adapter)
    policy = adapter.provider_retry_policy("scripted")
    assert policy is not None
    log = _Interloper(clock=1_000)
    log.foreign.append(
        LlmRetry(
            retry_id="other-worker",
            turn=1,
            step=1,
            provider="scripted",
            policy_key=policy_key(policy),
            mode="normal",
            failure=LlmFailure("busy", "SERVER"),
            retry=1,
            max_retries=1,
            delay_ms=0,
        )
    )
    adapter.queue(error_script("SERVER", "busy"), text_script("never sent"))
    agent = Agent(runtime, log, "scripted", "m1", plugins=[RetryPlugin()])
    result = await agent.run_turn(SID, "hi")
    assert result.failure is not None
    assert result.failure.code == ErrorCode.STALE_WRITE
    retries = of_type(await log.read(SID), "llm/retry")
    assert [(r.retry_id, r.retry) for r in retries] == [("other-worker", 1)]  # one retry 1 only
    assert len(adapter.requests) == 1


_PG = os.environ.get("MODELWIRE_TEST_POSTGRES_URL")


@pytest.mark.parametrize(
    "backend",
    [
        "sqlite",
        pytest.param(
            "postgres",
            marks=[
                pytest.mark.postgres,
                pytest.mark.skipif(not _PG, reason="MODELWIRE_TEST_POSTGRES_URL is not set"),
            ],
        ),
    ],
)
async def test_two_log_instances_never_collide_turn_numbers(
    tmp_path: Path, backend: str, sid: str
) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}" if backend == "sqlite" else str(_PG)
    logs = [await open_log(url), await open_log(url)]
    runtime = LlmRuntime()
    adapter = ScriptedAdapter()
    runtime.register_adapter(["scripted"], adapter)
    adapter.queue(*(text_script("ok") for _ in range(40)))
    agents = [Agent(runtime, log, "scripted", "m1") for log in logs]
    outcomes: list[str] = []

    async def worker(agent: Agent) -> None:
        for _ in range(10):
            try:
                result = await agent.run_turn(sid, "hi")
                outcomes.append(result.reason.kind)
            except HarnessError as exc:  # refused: another writer got there first
                assert exc.code in (ErrorCode.STALE_WRITE, ErrorCode.TURN_IN_PROGRESS)
                outcomes.append(exc.code)
            await asyncio.sleep(0)

    try:
        await asyncio.gather(*(worker(a) for a in agents))
        events = await logs[0].read(sid)
    finally:
        for log in logs:
            await log.close()
    starts = [e.data.turn for e in events if isinstance(e.data, TurnStart)]
    assert starts == list(range(1, len(starts) + 1))  # unique, in order, no gap
    assert outcomes.count("completed") + outcomes.count("interrupted") <= len(starts)
    assert "completed" in outcomes


async def _dangling(rig: Rig, at_ms: int) -> MemoryLog:
    log = MemoryLog(clock=lambda: at_ms)
    await log.append_many(SID, [TurnStart(1), StepStart(1, 1)])
    rig.log = log
    return log


@pytest.mark.parametrize("silent_ms", [0, 1, 59_999])
async def test_run_turn_refuses_to_repair_a_recent_open_turn_of_another_writer(
    rig: Rig, silent_ms: int
) -> None:
    log = await _dangling(rig, 1_000_000)
    agent = rig.agent(clock=lambda: 1_000_000 + silent_ms)
    with pytest.raises(HarnessError) as info:
        await agent.run_turn(SID, "hi")
    assert info.value.code == ErrorCode.TURN_IN_PROGRESS
    assert "turn 1 is still open" in info.value.message
    assert len(await log.read(SID)) == 2  # nothing written
    assert rig.adapter.requests == []


@pytest.mark.parametrize("silent_ms", [60_000, 3_600_000])
async def test_run_turn_repairs_an_open_turn_silent_for_repair_after_ms(
    rig: Rig, silent_ms: int
) -> None:
    await _dangling(rig, 1_000_000)
    rig.adapter.queue(text_script("fresh"))
    result = await rig.agent(clock=lambda: 1_000_000 + silent_ms).run_turn(SID, "hi")
    assert (result.turn, result.text) == (2, "fresh")
    ends = of_type(await rig.log.read(SID), "turn/end")
    assert [e.reason.kind for e in ends] == ["interrupted", "completed"]


async def test_an_agent_repairs_its_own_dead_turn_at_once(rig: Rig) -> None:
    """A turn this instance opened and could not close (its turn/end never landed) is known
    dead: the instance holds the session's lock, so that turn is not running."""
    log = MemoryLog(clock=lambda: 5)
    rig.log = log
    agent = rig.agent(clock=lambda: 5)
    rig.adapter.queue(text_script("one"), text_script("two"))
    await agent.run_turn(SID, "first")
    agent._opened[SID] = 2  # as if turn 2 had been opened here and its turn/end had been lost
    await log.append(SID, TurnStart(2))
    result = await agent.run_turn(SID, "again")
    assert result.turn == 3


def test_repair_after_ms_must_be_a_non_negative_number(rig: Rig) -> None:
    for bad in (-1, float("nan"), "10"):
        with pytest.raises(HarnessError) as info:
            rig.agent(repair_after_ms=bad)
        assert info.value.code == ErrorCode.INVALID_CONFIG
