"""`TurnQueue` and `Worker` in this process, on a SQLite file and on PostgreSQL (a fresh schema;
skipped without `MODELWIRE_TEST_POSTGRES_URL`), with agents on a `ChaosModel` (per-turn keys,
no faults): tickets in submission order per session; refusals (an unknown ticket, a newer queue
schema); configuration errors (a failing factory, a lease not longer than its renewal); turns
handed over by a graceful stop; turns continuing over a reopened log; a takeover of a turn whose
first Step never landed; a lost lease reported; and a tool call durable before its tool runs.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from chaos_model import ChaosModel, answer_text

from modelwire.agent import Agent, RunContext, Tool, open_runtime, tool
from modelwire.errors import ErrorCode, HarnessError
from modelwire.retry import RetryPlugin
from modelwire.session import (
    SessionLog,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
    open_log,
)
from modelwire.session.sqlite import sqlite_path_from_url
from modelwire.vocab import TextBlock
from modelwire.workers import Ticket, TicketStatus, TurnQueue, Worker, WorkerStats

ROUTE, MODEL = "chaos", "chaos-1"
WAIT_S = 60.0  # generous: a hang fails instead of blocking the suite
Factory = Callable[[SessionLog], Agent[str]]


# ---- helpers ---------------------------------------------------------------------------------


def bump_tool(
    ran: list[str], *, hold: dict[str, asyncio.Event] | None = None
) -> tuple[Tool, asyncio.Event]:
    """The script's `bump` tool: appends each key it runs for to `ran`. A key in `hold` waits
    for its event (setting the returned `entered` event first)."""
    entered = asyncio.Event()

    @tool
    async def bump(key: str, ctx: RunContext) -> str:
        """Bump the counter of a conversation.

        Args:
            key: The conversation key.
        """
        ran.append(key)
        if hold is not None and key in hold:
            entered.set()
            await hold[key].wait()
        return f"bumped {key}"

    return bump, entered


def agent_factory(server: ChaosModel, bump: Tool, **route: object) -> Factory:
    """Agents on the keyless route to `server` with `bump` and `RetryPlugin`; `route`: more
    route settings."""
    profile = {
        "api": "openai-completions",
        "base_url": server.base_url,
        "auth": "none",
        "models": [{"id": MODEL}],
        "retry_policy": {"mode": "normal", "max_retries": 2, "initial_delay_ms": 10},
        **route,
    }
    runtime = open_runtime(config={"providers": {ROUTE: profile}})

    def factory(log: SessionLog) -> Agent[str]:
        return Agent(runtime, log, ROUTE, MODEL, tools=[bump], plugins=[RetryPlugin()])

    return factory


@asynccontextmanager
async def started(worker: Worker) -> AsyncIterator[asyncio.Task[WorkerStats]]:
    """`worker.run()` in a task; stopped (and its failure raised) on exit."""
    task = asyncio.ensure_future(worker.run())
    try:
        yield task
    finally:
        worker.stop()
        await asyncio.wait_for(asyncio.shield(task), WAIT_S)


async def until(condition: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(WAIT_S):
        while not condition():
            await asyncio.sleep(0.02)
    assert condition(), what


def quiet(line: str) -> None:
    """A worker's `say` that keeps nothing."""


def text_of(message: Any) -> str:  # Any: a vocab Message
    return "".join(b.text for b in message.content if isinstance(b, TextBlock))


async def raw(url: str, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
    """Run one statement on the queue's database directly (`%s` parameters); its rows."""
    if url.startswith("sqlite:"):

        def run() -> list[tuple[Any, ...]]:
            conn = sqlite3.connect(sqlite_path_from_url(url), timeout=30, isolation_level=None)
            try:
                return conn.execute(sql.replace("%s", "?"), tuple(params)).fetchall()
            finally:
                conn.close()

        # off the loop: waiting for the write lock must not stop the worker that holds it
        return await asyncio.to_thread(run)
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as pg:
        cur = await pg.execute(sql, tuple(params))
        return list(await cur.fetchall()) if cur.description is not None else []


async def tables(url: str) -> list[str]:
    if url.startswith("sqlite:"):
        rows = await raw(url, "SELECT name FROM sqlite_master ORDER BY name")
    else:
        rows = await raw(
            url,
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() ORDER BY table_name",
        )
    return [str(r[0]) for r in rows]


async def wait_all(queue: TurnQueue, tickets: Sequence[Ticket]) -> list[TicketStatus]:
    return [await queue.wait(t.id, timeout_s=WAIT_S, poll_s=0.05) for t in tickets]


# ---- ordering and refusals -------------------------------------------------------------------


async def test_tickets_complete_in_submission_order_per_session(queue_url: str) -> None:
    ran: list[str] = []
    bump, _ = bump_tool(ran)
    async with ChaosModel(chunk_delay_s=0, per_turn=True) as server:
        queue = await TurnQueue.open(queue_url)
        try:
            tickets = [await queue.submit(f"s{n % 3}", f"t{n}") for n in range(12)]
            worker = Worker(
                queue_url, agent_factory(server, bump), concurrency=4, poll_ms=50, say=quiet
            )
            async with started(worker) as task:
                statuses = await wait_all(queue, tickets)
            stats = task.result()
            log = await open_log(queue_url)
            try:
                logged = {sid: await log.read(sid) for sid in ("s0", "s1", "s2")}
            finally:
                await log.close()
        finally:
            await queue.close()
    for n, status in enumerate(statuses):
        assert (status.state, status.reason, status.claims) == ("completed", "completed", 1)
        assert status.output == answer_text(f"t{n}")
    for sid, events in logged.items():
        order = [t for t in tickets if t.session_id == sid]
        starts = [e.data for e in events if isinstance(e.data, TurnStart)]
        assert [s.ticket for s in starts] == [t.id for t in order]  # one turn each, in order
        assert [s.turn for s in starts] == [1, 2, 3, 4]
        finished = [s.finished_ms for s in statuses if s.session_id == sid]
        assert finished == sorted(finished)  # type: ignore[type-var]
        user = [text_of(e.data.message) for e in events if isinstance(e.data, UserMessage)]
        assert user == [f"t{tickets.index(t)}" for t in order]
    assert sorted(ran) == sorted(f"t{n}" for n in range(12))
    assert (stats.claimed, stats.finished, stats.takeovers, stats.lost) == (12, 12, 0, 0)


async def test_the_status_of_an_unknown_ticket_is_invalid_args_naming_it(queue_url: str) -> None:
    async with await TurnQueue.open(queue_url) as queue:
        await queue.submit("s1", "known")
        with pytest.raises(HarnessError) as info:
            await queue.status("tk_no_such_ticket")
    assert info.value.code == ErrorCode.INVALID_ARGS
    assert "tk_no_such_ticket" in info.value.message


async def test_a_newer_queue_schema_is_refused_as_log_corrupt_and_left_untouched(
    queue_url: str,
) -> None:
    async with await TurnQueue.open(queue_url) as queue:
        ticket = await queue.submit("s1", "before the upgrade")
    await raw(
        queue_url,
        "UPDATE modelwire_meta SET value = %s WHERE key = %s",
        ("99", "workers_schema_version"),
    )
    meta = "SELECT key, value FROM modelwire_meta ORDER BY key"
    turns = "SELECT ticket, state, claims, input FROM modelwire_turns ORDER BY ticket"
    before = (await tables(queue_url), await raw(queue_url, meta), await raw(queue_url, turns))

    with pytest.raises(HarnessError) as info:
        await TurnQueue.open(queue_url)

    assert info.value.code == ErrorCode.LOG_CORRUPT
    assert "'99'" in info.value.message and "workers_schema_version" in info.value.message
    after = (await tables(queue_url), await raw(queue_url, meta), await raw(queue_url, turns))
    assert after == before
    assert (ticket.id, "queued", 0, "before the upgrade") in before[2]


# ---- configuration errors --------------------------------------------------------------------


async def test_a_factory_that_raises_stops_the_worker_before_it_claims_anything(
    queue_url: str,
) -> None:
    def broken_factory(log: SessionLog) -> Agent[str]:
        raise RuntimeError("no model route configured")

    async with await TurnQueue.open(queue_url) as queue:
        ticket = await queue.submit("s1", "never claimed")
        worker = Worker(queue_url, broken_factory, poll_ms=50, say=quiet)
        with pytest.raises(HarnessError) as info:
            await asyncio.wait_for(worker.run(), WAIT_S)
        status = await queue.status(ticket.id)
        counts = await queue.counts()
    assert info.value.code == ErrorCode.INVALID_CONFIG
    assert "broken_factory" in info.value.message
    assert "no model route configured" in info.value.message
    assert (status.state, status.claims, status.worker) == ("queued", 0, None)
    assert (counts.queued, counts.running) == (1, 0)
    assert worker.stats.claimed == 0


@pytest.mark.parametrize(("lease_ms", "renew_ms"), [(1000, 1000), (1000, 1500)])
def test_a_lease_not_longer_than_its_renewal_interval_is_invalid_config(
    lease_ms: float, renew_ms: float
) -> None:
    with pytest.raises(HarnessError) as info:
        Worker("sqlite:///unused.db", lambda log: None, lease_ms=lease_ms, renew_ms=renew_ms)  # type: ignore[arg-type, return-value]
    assert info.value.code == ErrorCode.INVALID_CONFIG
    assert "lease_ms (1000 ms)" in info.value.message and f"({renew_ms:g} ms)" in info.value.message


# ---- handing turns over ----------------------------------------------------------------------


async def test_a_graceful_stop_releases_overrunning_turns_to_another_worker_at_once(
    queue_url: str,
) -> None:
    """Past `grace_ms` the stopping worker gives each running turn's lease up (once, saying so):
    the next worker takes the turns over without waiting for the leases (120 s, far longer than
    the test may wait) to expire, resumes them and completes them."""
    first_ran: list[str] = []
    second_ran: list[str] = []
    hold = {"slow-a": asyncio.Event(), "slow-b": asyncio.Event()}  # never set
    first_bump, _ = bump_tool(first_ran, hold=hold)
    second_bump, _ = bump_tool(second_ran)
    said: list[str] = []
    async with ChaosModel(chunk_delay_s=0, per_turn=True) as server:
        queue = await TurnQueue.open(queue_url)
        try:
            tickets = [await queue.submit(f"s-{k}", f"slow-{k}") for k in ("a", "b")]
            first = Worker(
                queue_url,
                agent_factory(server, first_bump),
                concurrency=2,
                lease_ms=120_000,
                grace_ms=200,
                poll_ms=50,
                say=said.append,
            )
            async with started(first) as first_task:
                await until(lambda: len(first_ran) == 2, "both turns inside their tool")
            first_stats = first_task.result()
            handed = [await queue.status(t.id) for t in tickets]
            second = Worker(
                queue_url,
                agent_factory(server, second_bump),
                concurrency=2,
                lease_ms=120_000,
                poll_ms=50,
                say=said.append,
            )
            async with started(second) as second_task:
                done = await wait_all(queue, tickets)
            second_stats = second_task.result()
            log = await open_log(queue_url)
            try:
                logged = [await log.read(t.session_id) for t in tickets]
            finally:
                await log.close()
        finally:
            await queue.close()
    assert [(h.state, h.claims) for h in handed] == [("running", 1)] * 2
    for ticket in tickets:
        released = [line for line in said if line.startswith(f"released {ticket.id} ")]
        assert len(released) == 1, said
    assert (first_stats.claimed, first_stats.finished) == (2, 0)
    assert [(d.state, d.reason, d.claims) for d in done] == [("completed", "completed", 2)] * 2
    assert [d.output for d in done] == [answer_text("slow-a"), answer_text("slow-b")]
    assert (second_stats.takeovers, second_stats.finished) == (2, 2)
    for ticket, events in zip(tickets, logged, strict=True):
        # one turn, resumed under its number; the call cut by the stop is never run again
        starts = [e.data for e in events if isinstance(e.data, TurnStart)]
        assert starts == [TurnStart(1, ticket.id)]
        assert [e.data.reason.kind for e in events if isinstance(e.data, TurnEnd)] == ["completed"]
        results = [e.data for e in events if isinstance(e.data, ToolResultRecord)]
        assert [r.error_code for r in results] == [ErrorCode.TOOL_INTERRUPTED]
    assert (sorted(first_ran), second_ran) == (["slow-a", "slow-b"], [])


async def test_a_log_reopened_under_running_turns_lets_them_continue(queue_url: str) -> None:
    """When one call fails `LOG_UNAVAILABLE` the worker reopens the log and rebuilds the agent
    (`Worker._reopen`, driven here directly while two turns wait in their tools): the turns
    still running on the old agent are not cancelled (no `turn/end {aborted}`); they fail on the
    closed log, continue on the new one and complete under their own claims."""
    ran: list[str] = []
    hold = {"wait-a": asyncio.Event(), "wait-b": asyncio.Event()}
    bump, _ = bump_tool(ran, hold=hold)
    said: list[str] = []
    async with ChaosModel(chunk_delay_s=0, per_turn=True) as server:
        queue = await TurnQueue.open(queue_url)
        try:
            tickets = [await queue.submit(f"s-{k}", f"wait-{k}") for k in ("a", "b")]
            worker = Worker(
                queue_url,
                agent_factory(server, bump),
                concurrency=2,
                lease_ms=120_000,
                poll_ms=50,
                say=said.append,
            )
            async with started(worker):
                await until(lambda: len(ran) == 2, "both turns inside their tool")
                await worker._reopen(worker._log)  # what a LOG_UNAVAILABLE call does
                for event in hold.values():
                    event.set()
                done = await wait_all(queue, tickets)
            log = await open_log(queue_url)
            try:
                logged = [await log.read(t.session_id) for t in tickets]
            finally:
                await log.close()
        finally:
            await queue.close()
    assert [(d.state, d.reason, d.claims) for d in done] == [("completed", "completed", 1)] * 2
    assert [d.output for d in done] == [answer_text("wait-a"), answer_text("wait-b")]
    assert (worker.stats.reconnects, worker.stats.finished, worker.stats.takeovers) == (1, 2, 0)
    for events in logged:
        assert [e.data.reason.kind for e in events if isinstance(e.data, TurnEnd)] == ["completed"]
    assert sorted(ran) == ["wait-a", "wait-b"]  # run once each (their results were cut)


async def test_a_taken_over_turn_whose_first_step_never_landed_runs_the_ticket_text(
    queue_url: str,
) -> None:
    """A worker died after its `turn/start` was durable, before its first Step: the worker
    taking the ticket over resumes that turn with the ticket's text (it is nowhere in the log)."""
    ran: list[str] = []
    bump, _ = bump_tool(ran)
    async with ChaosModel(chunk_delay_s=0, per_turn=True) as server:
        queue = await TurnQueue.open(queue_url)
        try:
            ticket = await queue.submit("s-cut", "cut short")
            claim = await queue.claim("a-dead-worker", 500)
            assert claim is not None and claim.ticket == ticket.id
            log = await open_log(queue_url)
            try:
                await log.hold(claim.lease)
                await log.append("s-cut", TurnStart(1, ticket.id), barrier=True)
            finally:
                await log.close()
            async with asyncio.timeout(WAIT_S):
                while (await queue.counts()).expired != 1:  # the dead worker's lease ran out
                    await asyncio.sleep(0.05)
            worker = Worker(queue_url, agent_factory(server, bump), poll_ms=50, say=quiet)
            async with started(worker):
                done = await queue.wait(ticket.id, timeout_s=WAIT_S, poll_s=0.05)
            log = await open_log(queue_url)
            try:
                events = await log.read("s-cut")
            finally:
                await log.close()
        finally:
            await queue.close()
    assert (done.state, done.reason, done.claims) == ("completed", "completed", 2)
    assert done.output == answer_text("cut short")
    assert [e.data for e in events if isinstance(e.data, TurnStart)] == [TurnStart(1, ticket.id)]
    user = [text_of(e.data.message) for e in events if isinstance(e.data, UserMessage)]
    assert user == ["cut short"]
    assert ran == ["cut short"]


@pytest.mark.parametrize("waiting_in", ["tool", "stream"])
async def test_a_lease_lost_while_a_turn_waits_is_reported_and_counted(
    queue_url: str, waiting_in: str
) -> None:
    """Another owner takes the lease while the turn waits in a tool, or in a model stream that
    stalls: the renewal finds the lease lost and cancels the turn (its writes would be refused);
    the worker says `lease lost` once and counts it, and leaves the ticket to the new holder."""
    ran: list[str] = []
    bump, entered = bump_tool(ran, hold={"stuck": asyncio.Event()})
    said: list[str] = []
    stall = 1.0 if waiting_in == "stream" else 0.0  # every first attempt stalls
    async with ChaosModel(chunk_delay_s=0, stall_rate=stall, per_turn=True) as server:
        queue = await TurnQueue.open(queue_url)
        try:
            ticket = await queue.submit("s-stolen", "stuck")
            worker = Worker(
                queue_url,
                agent_factory(server, bump, stream_idle_timeout_ms=120_000),
                concurrency=1,
                lease_ms=900,
                poll_ms=50,
                say=said.append,
            )
            async with started(worker):
                if waiting_in == "tool":
                    await asyncio.wait_for(entered.wait(), WAIT_S)
                else:
                    await until(lambda: server.in_flight == 1, "the stream stalls")
                await raw(
                    queue_url,
                    "UPDATE modelwire_leases SET token = token + 1, owner = %s, expires_ms = %s "
                    "WHERE session_id = %s",
                    ("another-owner", 2**62, "s-stolen"),
                )
                await until(lambda: any("lease lost on" in line for line in said), "lease lost")
            status = await queue.status(ticket.id)
        finally:
            await queue.close()
    lost = [line for line in said if line.startswith(f"lease lost on {ticket.id}")]
    assert len(lost) == 1 and "another-owner" in lost[0], said
    assert (worker.stats.lost, worker.stats.finished) == (1, 0)
    assert (status.state, status.claims) == ("running", 1)  # left to the lease's new holder


class ParkedAgent(Agent[str]):
    """An agent whose turn waits until cancelled; `cancel` cancels the turn's task, so
    `run_turn` raises `CancelledError`, as `Agent.run_turn` does when its task is cancelled from
    outside (`TurnSignal.cancel`) — whether a real turn ends that way or by `LEASE_LOST` depends
    on where the cancel finds it."""

    parked: asyncio.Task[Any] | None = None

    async def run_turn(self, session_id: str, user_input: object, **options: Any) -> Any:
        self.parked = asyncio.current_task()
        await asyncio.Event().wait()

    def cancel(self, session_id: str, kind: object = None) -> bool:
        if self.parked is None:
            return False
        self.parked.cancel()
        return True


async def test_a_turn_cancelled_for_its_lost_lease_is_reported_not_dropped(queue_url: str) -> None:
    said: list[str] = []
    async with ChaosModel(chunk_delay_s=0, per_turn=True) as server:
        factory = agent_factory(server, bump_tool([])[0])
        parked: list[ParkedAgent] = []

        def park(log: SessionLog) -> Agent[str]:
            agent = factory(log)
            parked.append(ParkedAgent(agent.runtime, log, ROUTE, MODEL))
            return parked[-1]

        queue = await TurnQueue.open(queue_url)
        try:
            ticket = await queue.submit("s-parked", "parked")
            worker = Worker(
                queue_url, park, concurrency=1, lease_ms=900, poll_ms=50, say=said.append
            )
            async with started(worker):
                await until(lambda: bool(parked) and parked[0].parked is not None, "turn parked")
                await raw(
                    queue_url,
                    "UPDATE modelwire_leases SET token = token + 1, owner = %s, expires_ms = %s "
                    "WHERE session_id = %s",
                    ("another-owner", 2**62, "s-parked"),
                )
                await until(lambda: any("lease lost on" in line for line in said), "lease lost")
            status = await queue.status(ticket.id)
        finally:
            await queue.close()
    assert [line for line in said if line.startswith(f"lease lost on {ticket.id}")], said
    assert (worker.stats.lost, worker.stats.finished) == (1, 0)
    assert (status.state, status.claims) == ("running", 1)


async def test_a_tool_call_is_durable_before_the_tool_runs(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'durable.db'}"
    seen: list[bool] = []

    @tool
    async def bump(key: str, ctx: RunContext) -> str:
        """Bump the counter of a conversation.

        Args:
            key: The conversation key.
        """
        other = await open_log(url)  # what a successor process would find now
        try:
            events = await other.read(ctx.session_id)
        finally:
            await other.close()
        seen.append(
            any(
                isinstance(e.data, ToolCallRecord) and e.data.call_id == ctx.call_id for e in events
            )
        )
        return f"bumped {key}"

    async with ChaosModel(chunk_delay_s=0, per_turn=True) as server:
        log = await open_log(url)
        agent = agent_factory(server, bump)(log)
        try:
            result = await agent.run_turn("s-durable", "k-durable")
        finally:
            await agent.close()
            await log.close()
    assert result.reason.kind == "completed"
    assert seen == [True]


class BrokenAgent(Agent[str]):
    """An agent whose turn raises for the text `boom` (a bug in the user's agent or plugin)."""

    async def run_turn(self, session_id: str, user_input: object, **options: Any) -> Any:
        if user_input == "boom":
            raise RuntimeError("the agent broke")
        return await super().run_turn(session_id, user_input, **options)  # type: ignore[arg-type]


async def test_a_turn_that_raises_fails_its_ticket_and_the_worker_goes_on(queue_url: str) -> None:
    ran: list[str] = []
    bump, _ = bump_tool(ran)
    async with ChaosModel(chunk_delay_s=0, per_turn=True) as server:
        plain = agent_factory(server, bump)

        def factory(log: SessionLog) -> Agent[str]:
            agent = plain(log)
            assert isinstance(agent, Agent)
            return BrokenAgent(agent.runtime, log, ROUTE, MODEL, tools=[bump])

        queue = await TurnQueue.open(queue_url)
        try:
            bad = await queue.submit("s1", "boom")
            good = await queue.submit("s1", "t-after")
            worker = Worker(queue_url, factory, concurrency=2, poll_ms=50, say=quiet)
            async with started(worker):
                failed, done = await wait_all(queue, [bad, good])
        finally:
            await queue.close()
    assert (failed.state, failed.reason) == ("failed", "error")
    assert failed.error == "RuntimeError: the agent broke"
    assert (done.state, done.output) == ("completed", answer_text("t-after"))
