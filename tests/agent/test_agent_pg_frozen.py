"""A real PostgreSQL server SIGSTOPped (postmaster and backends) or killed -9 under a running
agent: the test owns a throwaway cluster (`pgcluster.py`), never the shared servers.

Rules pinned: cancelling a turn whose log server is frozen returns within `cancel_grace_ms`
(not `io_timeout_s`); a turn whose log server freezes ends within `io_timeout_s` with
`LOG_UNAVAILABLE` naming the stall, and what was already durable is still there once the server
answers again; after the server is killed and restarted, the same agent takes its own dead
turn's lease back at once (no `TURN_IN_PROGRESS` naming itself), and the dropped connection is
closed (no fd leak, no psycopg "connection was deleted while still open" warning).

No test measures elapsed time: a hang guard far above the configured deadline, and far below
the deadline the rule forbids waiting for, decides (see each test).
"""

from __future__ import annotations

import asyncio
import gc
import os
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator

import pytest
from agent_helpers import Hang, ScriptedAdapter, text_script, tool_script
from pgcluster import PgCluster, find_pgbin

from modelwire.agent import Agent, Tool
from modelwire.errors import ErrorCode, HarnessError
from modelwire.runtime import LlmRuntime
from modelwire.session import TurnEnd, TurnStart
from modelwire.session.postgres import PostgresLog

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

GUARD_S = 20.0  # a hang guard: far above the small deadlines configured, far below the 60 s
# `io_timeout_s` / lease the rules forbid waiting for
LONG_IO_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgCluster]:
    """One throwaway cluster for this module (each test uses fresh session ids)."""
    if find_pgbin() is None:
        pytest.fail("PostgreSQL binaries not found (install the Debian package `postgresql`)")
    # relaxed commits stay in the WAL buffers (a crash loses them) until a durable commit
    settings = ("max_connections=300", "wal_writer_delay=10000")
    made = PgCluster.create(tmp_path_factory.mktemp("pg"), settings=settings)
    try:
        yield made
    finally:
        made.destroy()


@pytest.fixture
def running(cluster: PgCluster) -> Iterator[PgCluster]:
    """The module's cluster, running and thawed before and after the test."""
    cluster.thaw()
    if not cluster.is_running():
        cluster.start()
    try:
        yield cluster
    finally:
        cluster.thaw()
        if not cluster.is_running():
            cluster.start()


@pytest.fixture
def sid() -> str:
    return f"frozen-{uuid.uuid4().hex[:12]}"


def _rig(agent_log: PostgresLog, **kw: object) -> tuple[ScriptedAdapter, Agent[str]]:
    runtime = LlmRuntime()
    adapter = ScriptedAdapter()
    runtime.register_adapter(["scripted"], adapter)
    agent: Agent[str] = Agent(runtime, agent_log, "scripted", "m1", **kw)  # type: ignore[arg-type]
    return adapter, agent


@pytest.fixture
async def durable(running: PgCluster) -> AsyncIterator[PostgresLog]:
    """A second log on the same server for checking what is durable (opened while it runs)."""
    log = await PostgresLog.open(running.url, io_timeout_s=GUARD_S)
    try:
        yield log
    finally:
        running.thaw()
        await asyncio.wait_for(log.close(), GUARD_S)


async def _cancel_while_frozen(
    cluster: PgCluster, sid: str, freeze_at: str
) -> tuple[asyncio.Task[object], PostgresLog]:
    # io_timeout_s and the lease are far above the guard: only cancel_grace_ms can end it in time
    log = await PostgresLog.open(cluster.url, io_timeout_s=LONG_IO_S)
    adapter, agent = _rig(log, cancel_grace_ms=300, lease_ms=LONG_IO_S * 1000)
    hang = Hang()
    adapter.queue([*text_script("partial answer")[:-2], hang])
    if freeze_at == "stream":  # the answer's chunks meet a frozen log
        adapter.on_stream = lambda _: cluster.freeze()
    else:  # the turn meets a frozen log while it takes its lease
        cluster.freeze()
    task: asyncio.Task[object] = asyncio.create_task(agent.run_turn(sid, "hi"))
    try:
        async with asyncio.timeout(GUARD_S):
            while sid not in agent._signals or not cluster._frozen:
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # let it reach the stalled write
        assert agent.cancel(sid)
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(GUARD_S):
                await asyncio.shield(task)
        assert task.cancelled()
    finally:
        cluster.thaw()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return task, log


@pytest.mark.parametrize("freeze_at", ["stream", "lease"])
async def test_cancel_of_a_turn_returns_within_cancel_grace_while_postgres_is_sigstopped(
    running: PgCluster, durable: PostgresLog, sid: str, freeze_at: str
) -> None:
    _, log = await _cancel_while_frozen(running, sid, freeze_at)
    # the instance goes on once the server answers: nothing acknowledged was lost
    try:
        await asyncio.wait_for(log.flush(), GUARD_S)
    finally:
        await asyncio.wait_for(log.close(), GUARD_S)
    if freeze_at == "stream":  # turn/start was durable before the freeze
        events = [e.data for e in await durable.read(sid)]
        assert isinstance(events[0], TurnStart) and events[0].turn == 1
    else:  # cancelled before its turn opened: nothing of it was written
        assert not await durable.exists(sid)


async def test_a_turn_whose_postgres_is_sigstopped_ends_within_io_timeout_as_log_unavailable(
    running: PgCluster, durable: PostgresLog, sid: str
) -> None:
    # the lease is far above the guard; io_timeout_s is small: it alone ends the turn in time
    log = await PostgresLog.open(running.url, io_timeout_s=0.5)
    adapter, agent = _rig(log, cancel_grace_ms=300, lease_ms=LONG_IO_S * 1000)
    adapter.queue(text_script("one"), text_script("two"))
    try:
        first = await asyncio.wait_for(agent.run_turn(sid, "one"), GUARD_S)
        assert first.text == "one"  # durable: its turn/end was flushed
        adapter.on_stream = lambda _: running.freeze()  # frozen while the answer streams in
        with pytest.raises(HarnessError) as info:
            async with asyncio.timeout(GUARD_S):
                await agent.run_turn(sid, "two")
        assert info.value.code == ErrorCode.LOG_UNAVAILABLE
        assert "no answer within 0.5 s" in str(info.value)
        assert "stalled" in str(info.value)
    finally:
        running.thaw()
        await asyncio.gather(asyncio.wait_for(log.close(), GUARD_S), return_exceptions=True)
    events = [e.data for e in await durable.read(sid)]
    ends = [e for e in events if isinstance(e, TurnEnd)]
    assert isinstance(events[0], TurnStart) and ends and ends[0].turn == 1  # intact


async def test_a_turn_whose_log_stalls_gives_its_remaining_writes_only_the_cancel_grace(
    running: PgCluster, durable: PostgresLog, sid: str
) -> None:
    # Frozen while a tool runs, with nothing buffered: the tool result's append stalls for
    # io_timeout_s; step/end and turn/end then get cancel_grace_ms, not io_timeout_s each (three
    # stalls would pass the guard).
    io_s = 3.0
    log = await PostgresLog.open(running.url, io_timeout_s=io_s)

    def freeze() -> str:
        running.freeze()
        return "frozen"

    adapter, agent = _rig(
        log,
        cancel_grace_ms=300,
        lease_ms=LONG_IO_S * 1000,
        tools=[Tool("freeze", "f", {"type": "object"}, lambda _: freeze())],
    )
    adapter.queue(tool_script("c1", "freeze", "{}"), text_script("never"))
    try:
        with pytest.raises(HarnessError) as info:
            async with asyncio.timeout(2.5 * io_s):
                await agent.run_turn(sid, "go")
        assert info.value.code == ErrorCode.LOG_UNAVAILABLE
        assert f"no answer within {io_s:g} s" in str(info.value)
    finally:
        running.thaw()
        await asyncio.gather(asyncio.wait_for(log.close(), GUARD_S), return_exceptions=True)
    names = [e.type for e in await durable.read(sid)]
    assert names[0] == "turn/start" and "tool/call" in names  # durable before the freeze


def _open_fds() -> int:
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


async def _crash_mid_turn(
    cluster: PgCluster, agent: Agent[str], adapter: ScriptedAdapter, sid: str
) -> None:
    """Run a turn of `sid` into a hanging answer, kill -9 the server, cancel the turn (it ends
    at once: the server refuses connections), start the server again."""
    hang = Hang()
    adapter.queue([*text_script("lost answer")[:-2], hang])
    task = asyncio.create_task(agent.run_turn(sid, "two"))
    try:
        await asyncio.wait_for(hang.reached.wait(), GUARD_S)
        async with asyncio.timeout(GUARD_S):  # the answer's chunks are committed, relaxed (a
            while agent.log._txn_open:  # type: ignore[attr-defined]  # crash in an open
                await asyncio.sleep(0.01)  # transaction breaks the instance: reopen the log)
        cluster.crash()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(GUARD_S):
                await asyncio.shield(task)
    finally:
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    cluster.start()


async def test_after_postgres_is_killed_and_restarted_the_same_agent_goes_on_at_once(
    running: PgCluster, sid: str
) -> None:
    # The crash loses the relaxed commits of the interrupted turn: the agent's view of the
    # session is ahead of the log; its next turn must not fail `STALE_WRITE` (nor wait for its
    # own 60 s lease), and the broken connection is closed, not dropped.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = await PostgresLog.open(running.url, io_timeout_s=5.0)
        adapter, agent = _rig(log, cancel_grace_ms=300, lease_ms=LONG_IO_S * 1000)
        try:
            adapter.queue(text_script("one"))
            assert (await asyncio.wait_for(agent.run_turn(sid, "one"), GUARD_S)).text == "one"
            before = _open_fds()
            await _crash_mid_turn(running, agent, adapter, sid)
            adapter.queue(text_script("three"))
            result = await asyncio.wait_for(agent.run_turn(sid, "three"), GUARD_S)
            assert result.text == "three"
            assert _open_fds() <= before  # the dead connection's socket was closed
            events = [e.data for e in await log.read(sid)]
        finally:
            await asyncio.gather(asyncio.wait_for(log.close(), GUARD_S), return_exceptions=True)
            del log
            gc.collect()
    starts = [e.turn for e in events if isinstance(e, TurnStart)]
    ends = [e.turn for e in events if isinstance(e, TurnEnd)]
    assert starts == sorted(set(starts)) and starts[0] == 1 and ends[-1] == starts[-1]
    leaked = [w for w in caught if "deleted while still open" in str(w.message)]
    assert not leaked, leaked


async def test_a_dead_turns_lease_held_by_this_process_is_taken_back_at_once_after_a_restart(
    running: PgCluster, durable: PostgresLog, sid: str
) -> None:
    # The interrupted turn's lease (60 s) is durable and live when the server dies; its release
    # is lost. Another agent of this very process takes it at once (its holder's turn is not
    # running here), repairs the open turn and runs its own, with no `TURN_IN_PROGRESS`.
    log = await PostgresLog.open(running.url, io_timeout_s=5.0)
    adapter, agent = _rig(log, cancel_grace_ms=300, lease_ms=LONG_IO_S * 1000)
    try:
        adapter.queue(text_script("one"))
        await asyncio.wait_for(agent.run_turn(sid, "one"), GUARD_S)
        hang = Hang()
        adapter.queue([*text_script("partial")[:-2], hang])
        task = asyncio.create_task(agent.run_turn(sid, "two"))
        await asyncio.wait_for(hang.reached.wait(), GUARD_S)
        await durable.append(f"{sid}-sync", TurnStart(1), barrier=True)  # all WAL on disk
        (row,) = [r for r in await durable.leases() if r.session_id == sid]
        assert row.owner == agent.leases.owner and row.expires_ms > 0
        running.crash()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        running.start()
        fresh = await PostgresLog.open(running.url, io_timeout_s=5.0)
        try:
            other_adapter, other = _rig(fresh, cancel_grace_ms=300, lease_ms=LONG_IO_S * 1000)
            other_adapter.queue(text_script("three"))
            result = await asyncio.wait_for(other.run_turn(sid, "three"), GUARD_S)
            assert result.text == "three"
            events = [e.data for e in await fresh.read(sid)]
        finally:
            await asyncio.wait_for(fresh.close(), GUARD_S)
    finally:
        await asyncio.gather(asyncio.wait_for(log.close(), GUARD_S), return_exceptions=True)
    ends = [e for e in events if isinstance(e, TurnEnd)]
    assert [e.turn for e in ends] == [1, 2, 3]
    assert type(ends[1].reason).__name__ == "TurnInterrupted"  # the dead turn, repaired
