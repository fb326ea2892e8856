"""An agent's turn holds the session's lease (`modelwire.agent.leasing`): taken before the turn,
fencing every append, released at the end; lost → `LEASE_LOST`, nothing more written.

Two log instances on one SQLite file stand for two processes; their shared, settable clock is
the only time that passes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_helpers import Hang, ScriptedAdapter, of_type, text_script, types

from modelwire.agent import Agent
from modelwire.errors import HarnessError
from modelwire.runtime import LlmRuntime
from modelwire.session import MemoryLog, SessionLog, StepStart, TurnStart, UserMessage
from modelwire.session.sqlite import SqliteLog
from modelwire.vocab import user_message


class Clock:
    def __init__(self) -> None:
        self.now = 5_000_000

    def __call__(self) -> int:
        return self.now


def _agent(log: SessionLog, adapter: ScriptedAdapter, **options: object) -> Agent:
    runtime = LlmRuntime()
    runtime.register_adapter(["scripted"], adapter)
    return Agent(runtime, log, "scripted", "m1", **options)  # type: ignore[arg-type]


async def _two_logs(tmp_path: Path, clock: Clock) -> tuple[SqliteLog, SqliteLog]:
    url = f"sqlite:///{tmp_path / 'leases.db'}"
    return await SqliteLog.open(url, clock=clock), await SqliteLog.open(url, clock=clock)


async def test_lease_run_turn_takes_the_lease_and_releases_it_when_the_turn_ends(
    tmp_path: Path,
) -> None:
    clock = Clock()
    log, other = await _two_logs(tmp_path, clock)
    adapter = ScriptedAdapter()
    adapter.queue(text_script("hi"))
    agent = _agent(log, adapter, owner="agent-a")
    result = await agent.run_turn("s1", "hello", ticket="t-1")
    assert result.reason.kind == "completed"
    (row,) = await other.leases()
    assert (row.owner, row.token, row.expires_ms) == ("agent-a", 1, 0)  # released
    assert of_type(await other.read("s1"), "turn/start") == [TurnStart(1, "t-1")]
    assert log.fence("s1") is None
    await other.acquire_lease("s1", "agent-b", 1_000)  # free at once
    for opened in (log, other):
        await opened.close()


async def test_lease_a_live_holder_refuses_another_agent_turn_in_progress_writing_nothing(
    tmp_path: Path,
) -> None:
    clock = Clock()
    log, other = await _two_logs(tmp_path, clock)
    await other.acquire_lease("s1", "worker-b", 30_000)
    agent = _agent(log, ScriptedAdapter(), owner="agent-a")
    for call in (agent.run_turn("s1", "hello"), agent.resume_turn("s1")):
        with pytest.raises(HarnessError) as caught:
            await call
        assert caught.value.code == "TURN_IN_PROGRESS" and "'worker-b'" in caught.value.message
    assert not await log.exists("s1")
    for opened in (log, other):
        await opened.close()


async def test_lease_lost_mid_turn_raises_lease_lost_and_the_old_writer_writes_nothing_more(
    tmp_path: Path,
) -> None:
    clock = Clock()
    log, other = await _two_logs(tmp_path, clock)
    hang = Hang()
    adapter = ScriptedAdapter()
    adapter.queue([*text_script("partial")[:3], hang])
    agent = _agent(log, adapter, owner="agent-a", lease_ms=10_000)
    task = asyncio.ensure_future(agent.run_turn("s1", "hello"))
    await hang.reached.wait()
    await log.flush()
    clock.now += 10_000  # the lease expired (a paused process: no renewal ran)
    taken = await other.acquire_lease("s1", "worker-b", 10_000)
    assert taken.token == 2
    seen = len(await other.read("s1"))
    agent.cancel("s1")
    with pytest.raises(HarnessError) as caught:
        await task
    assert caught.value.code == "LEASE_LOST" and "worker-b" in caught.value.message
    after = await other.read("s1")
    assert len(after) == seen  # no turn/end, nothing else from the fenced-out writer
    assert "turn/end" not in types(after)
    for opened in (log, other):
        await opened.close()


async def test_lease_taken_over_from_a_gone_holder_repairs_its_open_turn_at_once(
    tmp_path: Path,
) -> None:
    """A lease whose holder is gone (expired) proves its open turn dead: no silence rule wait."""
    clock = Clock()
    log, dead = await _two_logs(tmp_path, clock)
    await dead.acquire_lease("s1", "worker-dead", 1_000)
    await dead.append_many("s1", [TurnStart(1), StepStart(1, 1), UserMessage(user_message("lost"))])
    await dead.flush()
    clock.now += 1_000
    adapter = ScriptedAdapter()
    adapter.queue(text_script("fresh"))
    agent = _agent(log, adapter, owner="agent-a", repair_after_ms=3_600_000)
    result = await agent.run_turn("s1", "again")
    assert (result.turn, result.reason.kind) == (2, "completed")
    ended = [e.data.reason.kind for e in await log.read("s1") if e.type == "turn/end"]
    assert ended == ["interrupted", "completed"]
    for opened in (log, dead):
        await opened.close()


async def test_lease_given_by_the_caller_is_held_not_released() -> None:
    log = MemoryLog()
    lease = await log.acquire_lease("s1", "worker-a", 60_000)
    adapter = ScriptedAdapter()
    adapter.queue(text_script("ok"))
    agent = _agent(log, adapter, owner="agent-a")
    result = await agent.run_turn("s1", "hello", lease=lease)
    assert result.reason.kind == "completed"
    (row,) = await log.leases()
    assert row.expires_ms == lease.expires_ms and log.fence("s1") == 1
    other = await log.acquire_lease("s2", "worker-a", 60_000)
    with pytest.raises(HarnessError) as caught:
        await agent.run_turn("s1", "hello", lease=other)
    assert caught.value.code == "INVALID_ARGS" and "'s2'" in caught.value.message


async def test_lease_off_takes_no_lease() -> None:
    log = MemoryLog()
    adapter = ScriptedAdapter()
    adapter.queue(text_script("ok"))
    await _agent(log, adapter, lease_ms=None).run_turn("s1", "hello")
    assert await log.leases() == []


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"lease_ms": 1_000, "lease_renew_ms": 1_000}, "longer than its renewal interval"),
        ({"lease_ms": -1}, "lease_ms must be a positive number"),
    ],
)
def test_lease_duration_shorter_than_its_renewal_interval_is_invalid_config(
    options: dict[str, object], needle: str
) -> None:
    with pytest.raises(HarnessError) as caught:
        _agent(MemoryLog(), ScriptedAdapter(), **options)
    assert caught.value.code == "INVALID_CONFIG" and needle in caught.value.message


async def test_lease_one_keeper_renews_the_running_turns_and_reports_each_lost_lease(
    tmp_path: Path,
) -> None:
    from modelwire.agent.leasing import TurnLeases

    clock = Clock()
    log, other = await _two_logs(tmp_path, clock)
    ticks: asyncio.Queue[None] = asyncio.Queue()
    rounds: list[int] = []

    async def sleep(_: float) -> None:
        await ticks.get()
        rounds.append(clock.now)

    leases = TurnLeases(log, owner="agent-a", lease_ms=1_000, renew_ms=300, sleep=sleep)
    lost: dict[str, str] = {}
    async with (
        leases.turn("s1", None, lambda e: lost.setdefault("s1", e.message)),
        leases.turn("s2", None, lambda e: lost.setdefault("s2", e.message)),
    ):
        clock.now += 900
        ticks.put_nowait(None)
        async with asyncio.timeout(30):
            while {r.expires_ms for r in await other.leases()} != {clock.now + 1_000}:
                await asyncio.sleep(0.01)
        clock.now += 1_000  # both expire; another writer takes s2 over
        await other.acquire_lease("s2", "worker-b", 1_000)
        ticks.put_nowait(None)
        async with asyncio.timeout(30):
            while len(lost) < 2:
                await asyncio.sleep(0.01)
    assert "expired" in lost["s1"] and "taken over by 'worker-b'" in lost["s2"]
    assert len(rounds) == 2  # one task for both turns
    for opened in (log, other):
        await opened.close()
