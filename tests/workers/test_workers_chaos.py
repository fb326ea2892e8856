"""Worker pools under faults: processes SIGKILLed and paused, a flaky model, a database restart.

Every test runs real worker processes (`chaos_worker.py`) against one log database and a
`ChaosModel` (per-turn keys: each ticket's text plays the two-step script, a `bump` call then
`done <text>`) in a thread of this process, submits tickets with `TurnQueue`, injects its faults
from a controller loop until every ticket ended, stops the workers with SIGTERM and then checks
the log against the rules of the pool:

- every ticket `completed` exactly once: one `turn/start` carries its ticket, in submission order
  per session, and that turn has one `turn/end {completed}` (a ticket taken over from a dead
  worker is *resumed* — `resume_turn` keeps its turn number, it never opens a second turn — or,
  when its turn already ended, just finished; a `turn/end {interrupted}` would be a turn repaired
  and abandoned, which the queue never causes, so none may appear);
- each turn entered its ticket's text once and answered it (`done <text>`, after one `bump`
  call asked for by the model);
- per session the seqs are contiguous from 0, without duplicates;
- per (turn, step) one `assistant/message` (never `interrupted`), of an attempt whose chunks end
  with a `Finish` `Stop` or `ToolCalls`;
- no tool call executed twice (the `bump` counter file has no duplicate call id; every id in it
  is a logged `tool/call`; every call has one result; a call answered normally was executed; one
  a killed worker left unanswered is answered `TOOL_INTERRUPTED` on takeover, never run again);
- per (turn, step) at most 2 `llm/retry` records (the route's normal-mode limit);
- a worker paused past its lease's expiry and taken over prints `lease lost` once continued (its
  fenced writes are refused);
- every worker that stopped on SIGTERM said how each ticket it claimed ended for it (`finished`,
  `lease lost on` or `released`).

The figures (turns, kills, takeovers = sum of claims - 1, fenced writes refused = `lease lost`
lines, ...) are printed (`-s`) and recorded with `record_property`. PostgreSQL tests need
`MODELWIRE_TEST_POSTGRES_URL` (skipped without, as the other PostgreSQL tests are; each uses a
fresh schema) except the restart test, which owns a throwaway cluster (`pg_cluster`). Timeouts
only turn a hang into a failure; nothing asserts on elapsed time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest
from chaos_model import ChaosModel, answer_text, call_id
from pgcluster import PgCluster
from pgschema import PG_URL, create_schema_url, drop_schema, needs_postgres

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import (
    AssistantChunk,
    AssistantMessage,
    Event,
    LlmRetry,
    SessionLog,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
    open_log,
)
from modelwire.session.lease import LeaseRow
from modelwire.vocab import Finish, Message, Stop, TextBlock, ToolCallBlock, ToolCalls
from modelwire.workers import Ticket, TurnQueue

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
CHILD = HERE / "chaos_worker.py"
MAX_RETRIES = 2  # chaos_worker.RETRY_POLICY: the normal-mode limit per (turn, step)
LEASE_MS = 1500
IDLE_TX_TIMEOUT_MS = 2500
START_TIMEOUT_S = 60.0  # a worker process prints its first line by then (a busy machine)
RUN_TIMEOUT_S = 240.0  # every ticket ends by then, or the test fails instead of hanging

pytestmark = pytest.mark.slow


# ---- the pool of worker processes ------------------------------------------------------------


@dataclass
class Proc:
    """One worker process and the file its stdout (and stderr) goes to."""

    popen: subprocess.Popen[bytes]
    out: Path
    handle: IO[bytes]

    @property
    def pid(self) -> int:
        return self.popen.pid

    def text(self) -> str:
        return self.out.read_text(errors="replace")

    def running(self) -> bool:
        """Whether the worker printed its `running` line (it claims tickets)."""
        return "running up to" in self.text()


@dataclass
class Pool:
    """Worker processes of one log and one model (see the module docstring)."""

    log_url: str
    model_url: str
    counter: Path
    workdir: Path
    concurrency: int = 4
    lease_ms: int = LEASE_MS
    procs: dict[int, Proc] = field(default_factory=dict)
    killed: list[int] = field(default_factory=list)

    def spawn(self) -> Proc:
        out = self.workdir / f"worker-{len(self.procs)}.out"
        handle = out.open("wb")
        argv = [sys.executable, str(CHILD), self.log_url, self.model_url, str(self.counter)]
        argv += [str(self.concurrency), str(self.lease_ms)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(HERE)]))
        popen = subprocess.Popen(
            argv, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
        proc = self.procs[popen.pid] = Proc(popen, out, handle)
        return proc

    def live(self) -> list[Proc]:
        return [p for p in self.procs.values() if p.popen.poll() is None]

    def kill(self, proc: Proc) -> None:
        proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait(30)
        self.killed.append(proc.pid)

    async def started(self, procs: list[Proc]) -> None:
        """Wait until every one of `procs` printed its `running` line."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not all(p.running() for p in procs):
            for p in procs:
                if p.popen.poll() is not None:
                    raise AssertionError(f"worker {p.pid} exited at start:\n{p.text()}")
            if time.monotonic() > deadline:
                raise AssertionError("a worker did not start:\n" + self.report())
            await asyncio.sleep(0.05)

    def stop(self) -> None:
        """SIGCONT and SIGTERM every live worker and reap it (SIGKILL past a timeout)."""
        for proc in self.live():
            with contextlib.suppress(ProcessLookupError):
                proc.popen.send_signal(signal.SIGCONT)
                proc.popen.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.popen.wait(30)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait(30)
            proc.handle.close()

    def lines(self) -> list[str]:
        return [line for p in self.procs.values() for line in p.text().splitlines()]

    def report(self) -> str:
        return "\n".join(f"--- worker {p.pid}\n{p.text()[-3000:]}" for p in self.procs.values())


@contextlib.contextmanager
def model_in_thread(
    *, fail_rate: float = 0.0, stall_rate: float = 0.0, chunk_delay_s: float = 0.01
) -> Iterator[ChaosModel]:
    """A per-turn `ChaosModel` in a thread of this process (the workers are other processes)."""
    server = ChaosModel(
        fail_rate=fail_rate, stall_rate=stall_rate, chunk_delay_s=chunk_delay_s, per_turn=True
    )
    _, stop = server.start_in_thread()
    try:
        yield server
    finally:
        stop()


async def submit(queue: TurnQueue, turns: int, sessions: int) -> list[Ticket]:
    """`turns` tickets round-robin over `sessions` sessions, texts `t0`, `t1`, ..."""
    return [await queue.submit(f"s{n % sessions:03d}", f"t{n}") for n in range(turns)]


# ---- the controller --------------------------------------------------------------------------


def _pid_of(owner: str) -> int | None:
    pid = owner.split(":")[1] if owner.count(":") >= 2 else ""
    return int(pid) if pid.isdigit() else None


@dataclass
class Pause:
    """SIGSTOP one worker holding live leases; SIGCONT it once another owner took one over."""

    at: float
    proc: Proc | None = None
    held: dict[str, int] = field(default_factory=dict)  # session -> token when stopped
    since: float = 0.0
    taken: LeaseRow | None = None
    tries: int = 0
    done: bool = False

    async def step(self, pool: Pool, log: SessionLog, now: float) -> None:
        if self.done or now < self.at:
            return
        if self.proc is None:
            wall_ms = time.time_ns() // 1_000_000
            rows = await log.leases()
            for proc in pool.live():
                held = {
                    r.session_id: r.token
                    for r in rows
                    if _pid_of(r.owner) == proc.pid and r.expires_ms > wall_ms + 300
                }
                if held:
                    proc.popen.send_signal(signal.SIGSTOP)
                    self.proc, self.held, self.since = proc, held, now
                    self.tries += 1
                    return
            self.at = now + 0.3  # nobody holds a lease right now: look again soon
            return
        rows = await log.leases()
        for row in rows:
            before = self.held.get(row.session_id)
            if before is not None and row.token > before and _pid_of(row.owner) != self.proc.pid:
                self.taken = row
                self.proc.popen.send_signal(signal.SIGCONT)
                self.done = True
                return
        if now - self.since > 10.0:
            # no takeover (the pool may have been busy elsewhere): continue it and pause another
            # one a little later
            self.proc.popen.send_signal(signal.SIGCONT)
            self.proc = None
            self.held = {}
            self.at = now + 1.0
            self.done = self.tries >= 3


@dataclass
class Chaos:
    """What the controller did."""

    kills: int = 0
    pause: Pause | None = None
    restarted: bool = False


async def drive(
    queue: TurnQueue,
    tickets: list[Ticket],
    pool: Pool,
    *,
    kill_every_s: float = 0.0,
    max_kills: int = 0,
    pause_log: SessionLog | None = None,
    restart: Callable[[], None] | None = None,
    seed: int = 7,
) -> Chaos:
    """Inject the faults until every ticket ended (completed or failed)."""
    rng = random.Random(seed)
    chaos = Chaos(pause=Pause(at=time.monotonic() + 2.5) if pause_log is not None else None)
    started = time.monotonic()
    next_kill = started + kill_every_s
    while True:
        now = time.monotonic()
        try:
            counts = await queue.counts()
        except HarnessError as exc:  # the database restarting: ask again
            if exc.code != ErrorCode.LOG_UNAVAILABLE:
                raise
            await asyncio.sleep(0.2)
            continue
        if counts.completed + counts.failed >= len(tickets):
            break
        if now - started > RUN_TIMEOUT_S:
            raise AssertionError(f"tickets still open after {RUN_TIMEOUT_S} s: {counts}\n")
        if restart is not None and not chaos.restarted and counts.completed >= len(tickets) // 4:
            await asyncio.to_thread(restart)
            chaos.restarted = True
        if chaos.kills < max_kills and now >= next_kill:
            paused = chaos.pause.proc if chaos.pause is not None else None
            # a worker still starting holds nothing yet: kill only running ones
            candidates = [p for p in pool.live() if p is not paused and p.running()]
            if candidates:
                pool.kill(rng.choice(candidates))
                pool.spawn()
                chaos.kills += 1
            next_kill = now + kill_every_s
        if chaos.pause is not None and pause_log is not None:
            await chaos.pause.step(pool, pause_log, now)
        await asyncio.sleep(0.1)
    return chaos


# ---- the checks ------------------------------------------------------------------------------


@dataclass
class Figures:
    """What the log says happened."""

    turns: int = 0
    takeovers: int = 0
    refused: int = 0  # "lease lost" lines: a worker's fenced writes refused
    retries: int = 0
    interrupted_calls: int = 0
    executed_calls: int = 0
    events: int = 0

    def show(self, name: str, chaos: Chaos | None, record: Callable[[str, object], None]) -> None:
        shown = dict(vars(self))
        if chaos is not None:
            shown["kills"] = chaos.kills
            if chaos.pause is not None:
                shown["pause_tries"] = chaos.pause.tries
        print(f"\n{name}: " + ", ".join(f"{k}={v}" for k, v in shown.items()))
        for key, value in shown.items():
            record(key, value)


def _text(message: Message) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextBlock))


@dataclass
class Calls:
    """The `bump` calls of the whole log: asked for by the model (in assistant messages), logged
    as `tool/call` (the loop was about to run them) and answered (`tool/result`)."""

    asked: list[str] = field(default_factory=list)
    logged: list[str] = field(default_factory=list)
    results: dict[str, ToolResultRecord] = field(default_factory=dict)


def check_session(
    sid: str, events: list[Event], ordered: list[Ticket], texts: dict[str, str], calls: Calls
) -> int:
    """The per-session rules of the module docstring; returns the session's `llm/retry` count."""
    assert [e.seq for e in events] == list(range(len(events))), sid
    starts = [e.data for e in events if isinstance(e.data, TurnStart)]
    ends = [e.data for e in events if isinstance(e.data, TurnEnd)]
    assert [s.turn for s in starts] == list(range(1, len(starts) + 1)), (sid, starts)
    # one turn per ticket, in submission order; a taken-over ticket kept its turn
    assert [s.ticket for s in starts] == [t.id for t in ordered], (sid, starts)
    assert [(e.turn, e.reason.kind) for e in ends] == [(s.turn, "completed") for s in starts], (
        sid,
        ends,
    )
    messages: dict[tuple[int, int], list[AssistantMessage]] = defaultdict(list)
    last_chunk: dict[tuple[int, int, int], object] = {}
    retries: Counter[tuple[int, int]] = Counter()
    steps: set[tuple[int, int]] = set()
    said: dict[int, list[str]] = defaultdict(list)  # turn -> its user messages' texts
    turn = 0
    for event in events:
        data = event.data
        if isinstance(data, TurnStart):
            turn = data.turn
        elif isinstance(data, UserMessage):
            said[turn].append(_text(data.message))
        elif isinstance(data, StepStart):
            steps.add((data.turn, data.step))
        elif isinstance(data, AssistantChunk):
            last_chunk[(data.turn, data.step, data.attempt)] = data.chunk
        elif isinstance(data, AssistantMessage):
            messages[(data.turn, data.step)].append(data)
        elif isinstance(data, LlmRetry):
            retries[(data.turn, data.step)] += 1
        elif isinstance(data, ToolCallRecord):
            calls.logged.append(data.call_id)
        elif isinstance(data, ToolResultRecord):
            assert data.call_id not in calls.results, (sid, data)
            calls.results[data.call_id] = data
    assert set(messages) == steps, (sid, sorted(steps), sorted(messages))
    for (turn, step), found in messages.items():
        assert len(found) == 1, (sid, turn, step, found)
        message = found[0]
        assert not message.interrupted, (sid, message)
        last = last_chunk.get((turn, step, message.attempt))
        assert isinstance(last, Finish) and isinstance(last.reason, (Stop, ToolCalls)), (
            sid,
            turn,
            step,
            message.attempt,
            last,
        )
    assert all(n <= MAX_RETRIES for n in retries.values()), (sid, retries)
    for start in starts:  # each turn ran its ticket's text: one bump call, then the answer
        text = texts[str(start.ticket)]
        assert said[start.turn] == [text], (sid, start, said[start.turn])
        ordered_steps = sorted(step for t, step in messages if t == start.turn)
        asked = [
            block.id
            for step in ordered_steps
            for block in messages[(start.turn, step)][0].message.content
            if isinstance(block, ToolCallBlock)
        ]
        assert asked == [call_id(text, 0)], (sid, start, asked)
        calls.asked += asked
        answer = messages[(start.turn, ordered_steps[-1])][0].message
        assert _text(answer) == answer_text(text), (sid, start, answer)
    return sum(retries.values())


async def check_pool(
    url: str, queue: TurnQueue, tickets: list[Ticket], pool: Pool, texts: dict[str, str]
) -> Figures:
    """Every rule of the module docstring, over the log, the queue and the counter file."""
    figures = Figures(turns=len(tickets))
    context = pool.report()
    by_session: dict[str, list[Ticket]] = defaultdict(list)
    for ticket in tickets:
        status = await queue.status(ticket.id)
        assert status.state == "completed" and status.reason == "completed", (status, context)
        assert status.claims >= 1, status
        assert status.output in (None, answer_text(texts[ticket.id])), status
        figures.takeovers += status.claims - 1
        by_session[ticket.session_id].append(ticket)

    calls = Calls()
    log = await open_log(url)
    try:
        for sid, ordered in by_session.items():
            events = await log.read(sid)
            figures.events += len(events)
            figures.retries += check_session(sid, events, ordered, texts, calls)
    finally:
        await log.close()

    executed = pool.counter.read_text().split() if pool.counter.exists() else []
    duplicates = sorted(cid for cid, n in Counter(executed).items() if n > 1)
    assert not duplicates, f"tool calls executed twice: {duplicates}"
    assert len(calls.logged) == len(set(calls.logged)), "a call logged twice"
    # a call whose `tool/call` never landed (its worker died first) was answered on takeover
    assert set(calls.logged) <= set(calls.asked)
    assert set(executed) <= set(calls.logged), "an executed call the log never recorded"
    assert set(calls.results) == set(calls.asked), "every call has one result"
    for cid, result in calls.results.items():
        if result.is_error:
            assert result.error_code == ErrorCode.TOOL_INTERRUPTED, (result, context)
            figures.interrupted_calls += 1
        else:
            assert cid in executed, f"call {cid} answered normally but never executed"
    figures.executed_calls = len(executed)
    figures.refused = sum("lease lost" in line for line in pool.lines())
    for proc in pool.procs.values():
        text = proc.text()
        if proc.pid in pool.killed or "running up to" not in text:
            continue  # SIGKILLed, or SIGTERMed while starting (nothing claimed)
        # a worker that stopped (SIGTERM) said how every ticket it claimed ended for it
        assert proc.popen.returncode == 0 and "exit WorkerStats" in text, text[-3000:]
        claimed = re.findall(r"(?:claimed|took over) (tk_[0-9a-f]+)", text)
        ended = set(re.findall(r"(?:finished|lease lost on|released) (tk_[0-9a-f]+)", text))
        assert set(claimed) <= ended, (sorted(set(claimed) - ended), text[-3000:])
    return figures


async def run_pool(
    url: str,
    tmp_path: Path,
    server: ChaosModel,
    *,
    workers: int,
    turns: int,
    sessions: int,
    kill_every_s: float = 0.0,
    max_kills: int = 0,
    pause_log: SessionLog | None = None,
    restart: Callable[[], None] | None = None,
) -> tuple[Pool, Chaos, Figures]:
    """Submit, run the pool with the faults of `drive`, stop it, check it."""
    pool = Pool(url, server.base_url, tmp_path / "bumps.txt", tmp_path)
    queue = await TurnQueue.open(url)
    try:
        tickets = await submit(queue, turns, sessions)
        texts = {t.id: f"t{n}" for n, t in enumerate(tickets)}
        try:
            await pool.started([pool.spawn() for _ in range(workers)])
            chaos = await drive(
                queue,
                tickets,
                pool,
                kill_every_s=kill_every_s,
                max_kills=max_kills,
                pause_log=pause_log,
                restart=restart,
            )
        finally:
            pool.stop()
        figures = await check_pool(url, queue, tickets, pool, texts)
    finally:
        await queue.close()
    return pool, chaos, figures


# ---- the tests -------------------------------------------------------------------------------


@pytest.mark.postgres
@needs_postgres
async def test_postgres_pool_survives_kills_a_pause_and_a_flaky_model_exactly_once(
    pg_schema_url: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    # A stopped process keeps its open transaction, and the session locks it holds, for ever:
    # a takeover of those sessions would wait for it (by design, see `session/groupleases.py`).
    # Deployments bound that with `idle_in_transaction_session_timeout`; so does this test, on
    # its connections only (a stopped worker's connections are closed after 2.5 s).
    url = f"{pg_schema_url}%20-cidle_in_transaction_session_timeout%3D{IDLE_TX_TIMEOUT_MS}"
    with model_in_thread(fail_rate=0.1, stall_rate=0.05, chunk_delay_s=0.01) as server:
        log = await open_log(url)  # the controller's view of the leases
        try:
            _, chaos, figures = await run_pool(
                url,
                tmp_path,
                server,
                workers=4,
                turns=200,
                sessions=40,
                kill_every_s=2.0,
                max_kills=10,
                pause_log=log,
            )
        finally:
            await log.close()
    figures.show("postgres chaos", chaos, record_property)
    pause = chaos.pause
    assert pause is not None and pause.proc is not None and pause.taken is not None, (
        "no lease of the paused worker was taken over",
        pause,
    )
    assert "lease lost" in pause.proc.text(), pause.proc.text()
    assert chaos.kills >= 1 and figures.takeovers >= 1


async def test_sqlite_pool_survives_kills_exactly_once(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    # No SIGSTOP here: a stopped SQLite writer holding the database write lock stalls every
    # other process until it is continued (there is no per-session lock to take over).
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    with model_in_thread(fail_rate=0.1, stall_rate=0.05, chunk_delay_s=0.01) as server:
        _, chaos, figures = await run_pool(
            url,
            tmp_path,
            server,
            workers=2,
            turns=40,
            sessions=10,
            kill_every_s=1.0,
            max_kills=3,
        )
    figures.show("sqlite chaos", chaos, record_property)
    assert chaos.kills >= 1


@pytest.mark.postgres
async def test_postgres_restart_mid_run_completes_every_ticket(
    pg_cluster: PgCluster, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    """The server restarts (fast shutdown) once a quarter of the tickets completed: the workers'
    calls fail `LOG_UNAVAILABLE`, they reopen the log and continue their turns; every ticket
    still completes exactly once. (Whether a worker noticed depends on where the restart lands:
    the lines are counted, not required.)"""
    url = pg_cluster.url
    with model_in_thread(chunk_delay_s=0.02) as server:
        pool, chaos, figures = await run_pool(
            url,
            tmp_path,
            server,
            workers=2,
            turns=30,
            sessions=10,
            restart=pg_cluster.restart,
        )
    figures.show("postgres restart", chaos, record_property)
    assert chaos.restarted
    noticed = [line for line in pool.lines() if "log unavailable" in line or "reconnected" in line]
    record_property("reconnect_lines", len(noticed))
    print(f"restart noticed by the workers in {len(noticed)} line(s)")


@pytest.mark.postgres
@needs_postgres
async def test_postgres_throughput_with_one_two_and_four_workers(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    """Figures only: turns per second of 40 fault-free turns (20 sessions) per pool size."""
    assert PG_URL is not None
    rates: dict[int, float] = {}
    with model_in_thread(chunk_delay_s=0.0) as server:
        for workers in (1, 2, 4):
            name, url = await create_schema_url(PG_URL)
            workdir = tmp_path / f"w{workers}"
            workdir.mkdir()
            pool = Pool(url, server.base_url, workdir / "bumps.txt", workdir)
            queue = await TurnQueue.open(url)
            try:
                await pool.started([pool.spawn() for _ in range(workers)])
                began = time.monotonic()
                tickets = await submit(queue, 40, 20)
                for ticket in tickets:
                    status = await queue.wait(ticket.id, timeout_s=RUN_TIMEOUT_S)
                    assert status.state == "completed", status
                rates[workers] = len(tickets) / (time.monotonic() - began)
            finally:
                pool.stop()
                await queue.close()
                await drop_schema(PG_URL, name)
    for workers, rate in rates.items():
        print(f"\nthroughput: {workers} worker process(es) x 4 slots: {rate:.1f} turns/s")
        record_property(f"turns_per_s_{workers}", round(rate, 2))
