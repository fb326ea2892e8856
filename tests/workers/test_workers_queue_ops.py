"""The queue operations a user reaches for (issue 30), on a SQLite file and on PostgreSQL:
`cancel` (a queued ticket never runs; a running one is cancelled by its worker and ends
`cancelled`; a dead worker's is ended at once), `tickets` (the list), `counts` that drop a dead
worker from "running" once its leases expired, and `status`/`wait` taking the `Ticket` that
`submit` returns as well as its id."""

from __future__ import annotations

import asyncio

import pytest
from chaos_model import ChaosModel, answer_text
from test_workers_queue import WAIT_S, agent_factory, bump_tool, quiet, started

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import TurnEnd, open_log
from modelwire.workers import QueueCounts, TurnQueue, Worker


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


async def test_a_cancelled_queued_ticket_never_runs(queue_url: str) -> None:
    ran: list[str] = []
    bump, _ = bump_tool(ran)
    async with ChaosModel(chunk_delay_s=0, per_turn=True) as server:
        async with await TurnQueue.open(queue_url) as queue:
            first = await queue.submit("s-cancelled", "never")
            second = await queue.submit("s-kept", "kept")
            cancelled = await queue.cancel(first)
            assert (cancelled.state, cancelled.reason) == ("cancelled", "cancelled")
            worker = Worker(queue_url, agent_factory(server, bump), poll_ms=50, say=quiet)
            async with started(worker):
                done = await queue.wait(second, timeout_s=WAIT_S, poll_s=0.05)
            status = await queue.status(first)
            for ticket, what in ((first, "already cancelled"), ("tk_nope", "no ticket")):
                with pytest.raises(HarnessError, match=what) as info:
                    await queue.cancel(ticket)
                assert info.value.code == ErrorCode.INVALID_ARGS
            assert (await queue.status(first)) == status  # nothing changed
        log = await open_log(queue_url)
        try:
            assert not await log.exists("s-cancelled")
        finally:
            await log.close()
    assert (done.state, done.output) == ("completed", answer_text("kept"))
    assert (status.state, status.claims, status.worker) == ("cancelled", 0, None)
    assert ran == ["kept"]


async def test_a_cancelled_running_ticket_is_stopped_by_its_worker_and_ends_cancelled(
    queue_url: str,
) -> None:
    ran: list[str] = []
    hold = {"slow": asyncio.Event()}
    bump, entered = bump_tool(ran, hold=hold)
    async with ChaosModel(chunk_delay_s=0, per_turn=True) as server:
        async with await TurnQueue.open(queue_url) as queue:
            ticket = await queue.submit("s1", "slow")
            worker = Worker(queue_url, agent_factory(server, bump), poll_ms=50, say=quiet)
            async with started(worker):
                await asyncio.wait_for(entered.wait(), WAIT_S)  # the turn waits in its tool
                asked = await queue.cancel(ticket.id)
                assert (asked.state, asked.worker) == ("cancelling", worker.owner)
                ended = await queue.wait(ticket, timeout_s=WAIT_S, poll_s=0.05)
                after = await queue.submit("s1", "after")  # the session goes on
                next_turn = await queue.wait(after, timeout_s=WAIT_S, poll_s=0.05)
            counts = await queue.counts()
        log = await open_log(queue_url)
        try:
            ends = [e.data for e in await log.read("s1") if isinstance(e.data, TurnEnd)]
        finally:
            await log.close()
    assert (ended.state, ended.reason, ended.claims) == ("cancelled", "aborted", 1)
    assert [(end.turn, end.reason.kind) for end in ends] == [(1, "aborted"), (2, "completed")]
    assert next_turn.state == "completed"
    assert (counts.cancelled, counts.completed, counts.running) == (1, 1, 0)


async def test_a_dead_workers_ticket_leaves_running_once_its_lease_expired(
    queue_url: str,
) -> None:
    clock = Clock()
    async with await TurnQueue.open(queue_url, clock=clock) as queue:
        first = await queue.submit("s1", "one")
        second = await queue.submit("s2", "two")
        assert await queue.claim("dead-worker", 1_000) is not None
        assert await queue.claim("dead-worker", 1_000) is not None
        assert await queue.counts() == QueueCounts(
            queued=0,
            running=2,
            completed=0,
            failed=0,
            by_worker={"dead-worker": 2},
            expired=0,
        )
        assert (await queue.cancel(first)).state == "cancelling"  # its worker is alive yet
        clock.now += 1_001  # the worker died: its leases expired
        assert await queue.counts() == QueueCounts(
            queued=0, running=0, completed=0, failed=0, by_worker={}, expired=2
        )
        assert (await queue.cancel(second)).state == "cancelled"  # nobody left to stop it
        assert (await queue.status(first)).state == "cancelling"
        assert await queue.claim("next-worker", 1_000) is None  # ... nor this one: swept
        assert (await queue.status(first)).state == "cancelled"
        listed = await queue.tickets()
    assert [(t.id, t.state) for t in listed] == [(first.id, "cancelled"), (second.id, "cancelled")]


async def test_tickets_lists_the_most_recent_oldest_first_by_state_and_session(
    queue_url: str,
) -> None:
    async with await TurnQueue.open(queue_url) as queue:
        tickets = [await queue.submit(f"s{n % 2}", f"t{n}") for n in range(5)]
        await queue.cancel(tickets[1])
        everything = await queue.tickets()
        recent = await queue.tickets(limit=2)
        of_s0 = await queue.tickets(session_id="s0")
        queued = await queue.tickets(states=("queued",), session_id="s1")
        status = await queue.status(tickets[0])  # the Ticket itself, not only its id
        waited = await queue.wait(tickets[1], timeout_s=1)
    assert [t.id for t in everything] == [t.id for t in tickets]
    assert [t.id for t in recent] == [t.id for t in tickets[-2:]]
    assert [t.id for t in of_s0] == [tickets[n].id for n in (0, 2, 4)]
    assert [t.id for t in queued] == [tickets[3].id]
    assert (status.id, status.state) == (tickets[0].id, "queued")
    assert waited.state == "cancelled"


async def test_until_idle_runs_the_queue_dry_and_stops(queue_url: str) -> None:
    ran: list[str] = []
    bump, _ = bump_tool(ran)
    async with ChaosModel(chunk_delay_s=0, per_turn=True) as server:
        async with await TurnQueue.open(queue_url) as queue:
            tickets = [await queue.submit("s1", f"t{n}") for n in range(3)]
            worker = Worker(
                queue_url, agent_factory(server, bump), poll_ms=50, say=quiet, until_idle=True
            )
            stats = await asyncio.wait_for(worker.run(), WAIT_S)
            statuses = [await queue.status(t) for t in tickets]
    assert [s.state for s in statuses] == ["completed"] * 3
    assert (stats.claimed, stats.finished) == (3, 3)
