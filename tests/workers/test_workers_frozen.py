"""A turn queue and its workers when a database writer stalls, a claim is cancelled, a factory
never returns or a ticket row is corrupt.

Rules pinned: cancelling a SQLite claim at any point leaves the queue object usable and the
database not write-locked; a worker whose agent factory never returns obeys SIGTERM (it exits
at once, naming the factory); a corrupt ticket row is `LOG_CORRUPT` naming the ticket and the
field, never a raw `ValueError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import sys
from pathlib import Path

import pytest
from pgcluster import PgCluster
from test_workers_chaos import RUN_TIMEOUT_S, Pool, model_in_thread

from modelwire.errors import ErrorCode, HarnessError
from modelwire.workers import Ticket, TurnQueue

SRC = Path(__file__).resolve().parents[2] / "src"
GUARD_S = 60.0  # a hang guard only


def _not_write_locked(db: Path) -> None:
    """Another connection takes the write lock at once (a held one fails: database is locked)."""
    other = sqlite3.connect(db, timeout=0.5, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
    finally:
        other.close()


async def test_a_cancelled_sqlite_claim_leaves_the_queue_usable_and_the_database_unlocked(
    tmp_path: Path,
) -> None:
    db = tmp_path / "queue.db"
    queue = await TurnQueue.open(f"sqlite:///{db}")
    try:
        for yields in range(12):  # cancelled at each await point of the claim in turn
            await queue.submit(f"s{yields}", "hi")
            task = asyncio.create_task(queue.claim("worker-a", 60_000))
            for _ in range(yields):
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await asyncio.wait_for(queue.counts(), GUARD_S)  # the object is usable
            await asyncio.to_thread(_not_write_locked, db)
        claim = await asyncio.wait_for(queue.claim("worker-b", 60_000), GUARD_S)
        assert claim is not None  # the same object goes on claiming
    finally:
        await queue.close()
    await asyncio.to_thread(_not_write_locked, db)


FACTORY = """
import asyncio, os, sys

async def never(log):
    open(os.environ["MARKER"], "w").close()
    await asyncio.Event().wait()
"""


async def test_a_worker_whose_agent_factory_never_returns_obeys_sigterm(tmp_path: Path) -> None:
    (tmp_path / "hangs.py").write_text(FACTORY, encoding="utf-8")
    marker = tmp_path / "building"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(SRC), str(tmp_path)]),
        MARKER=str(marker),
        HOME=str(tmp_path),
    )
    db = tmp_path / "jobs.db"
    argv = [sys.executable, "-m", "modelwire", "worker", "--log", str(db), "--agent", "hangs:never"]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env=env,
        cwd=tmp_path,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(GUARD_S):
            while not marker.exists():
                assert proc.returncode is None, await proc.communicate()
                await asyncio.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), GUARD_S)  # it exits: no 2nd signal
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = err.decode()
    assert proc.returncode == 1, text
    assert "factory 'hangs:never' was still building the agent" in text, text
    assert "[ABORTED]" in text, text
    assert "Traceback" not in text, text


@pytest.mark.parametrize(
    ("column", "value", "field"),
    [
        ("submitted_ms", "'yesterday'", "submitted_ms"),
        ("claims", "'many'", "claims"),
        ("state", "'exploded'", "state"),
        ("finished_ms", "x'00ff'", "finished_ms"),
        ("output", "x'00ff'", "output"),
    ],
)
async def test_a_corrupt_ticket_row_is_log_corrupt_naming_the_ticket_and_the_field(
    tmp_path: Path, column: str, value: str, field: str
) -> None:
    db = tmp_path / "queue.db"
    queue = await TurnQueue.open(f"sqlite:///{db}")
    try:
        ticket = await queue.submit("s1", "hi")
        with sqlite3.connect(db) as raw:
            raw.execute(f"UPDATE modelwire_turns SET {column} = {value}")
        for read in (queue.status(ticket), queue.tickets()):
            with pytest.raises(HarnessError) as info:
                await read
            assert info.value.code == ErrorCode.LOG_CORRUPT
            assert repr(ticket.id) in info.value.message and field in info.value.message
    finally:
        await queue.close()


async def test_a_corrupt_claimable_ticket_is_log_corrupt_not_a_silent_str(tmp_path: Path) -> None:
    db = tmp_path / "queue.db"
    queue = await TurnQueue.open(f"sqlite:///{db}")
    try:
        ticket = await queue.submit("s1", "hi")
        with sqlite3.connect(db) as raw:
            raw.execute("UPDATE modelwire_turns SET input = x'00ff'")
        with pytest.raises(HarnessError) as info:
            await queue.claim("worker-a", 60_000)
        assert info.value.code == ErrorCode.LOG_CORRUPT
        assert repr(ticket.id) in info.value.message and "input" in info.value.message
        await asyncio.to_thread(_not_write_locked, db)  # the failed claim rolled back
    finally:
        await queue.close()


# ---- a writer paused mid-stream --------------------------------------------------------------

APPENDER = """
import asyncio, sys
from modelwire.errors import HarnessError
from modelwire.session import UserMessage
from modelwire.session.sqlite import SqliteLog
from modelwire.vocab import user_message

async def main(url):
    log = await SqliteLog.open(url)
    await log.acquire_lease("s1", f"appender:{sys.argv[2]}", 1500)
    print("appending", flush=True)
    try:
        while True:  # a fast stream: 500 chunks a second (an old group transaction: always open)
            await log.append("s1", UserMessage(user_message("chunk")))
            await asyncio.sleep(0.002)
    except HarnessError as exc:
        print(f"stopped: {exc.code}", flush=True)

asyncio.run(main(sys.argv[1]))
"""


async def test_a_paused_sqlite_writer_mid_stream_holds_no_write_lock_and_its_lease_is_taken(
    tmp_path: Path,
) -> None:
    from modelwire.session import UserMessage
    from modelwire.session.sqlite import SqliteLog
    from modelwire.vocab import user_message

    db = tmp_path / "log.db"
    url = f"sqlite:///{db}"
    (tmp_path / "appender.py").write_text(APPENDER, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(tmp_path / "appender.py"),
        url,
        "a",
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), GUARD_S)
        assert line == b"appending\n", line
        await asyncio.sleep(0.2)  # well into the stream
        # Stopped at a random point. Only a stop inside the one call that writes and commits (a
        # millisecond in ten) can catch the lock: then it is continued and stopped again.
        for _ in range(5):
            proc.send_signal(signal.SIGSTOP)
            try:
                await asyncio.to_thread(_not_write_locked, db)
                break
            except sqlite3.OperationalError:
                proc.send_signal(signal.SIGCONT)
                await asyncio.sleep(0.01)
        else:
            raise AssertionError("a writer stopped mid-stream kept the database write-locked")
        # the paused writer's lease expires and is taken over; the taker writes
        taker = await SqliteLog.open(url)
        try:
            async with asyncio.timeout(GUARD_S):
                while True:
                    try:
                        await taker.acquire_lease("s1", "taker", 60_000)
                        break
                    except HarnessError as exc:
                        assert exc.code == ErrorCode.TURN_IN_PROGRESS
                        await asyncio.sleep(0.1)
            mine = UserMessage(user_message("the taker's"))
            await taker.append("s1", mine, barrier=True)
            proc.send_signal(signal.SIGCONT)  # the old writer wakes up: refused, writes nothing
            out = await asyncio.wait_for(proc.stdout.readline(), GUARD_S)
            assert out == b"stopped: LEASE_LOST\n", out
            assert (await taker.read("s1"))[-1].data == mine
        finally:
            await taker.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        await proc.wait()


async def _idle_in_transaction(url: str) -> int:
    """How many sessions of the server sit idle inside a transaction (a stopped client's)."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%%'"
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0


async def _runs(queue: TurnQueue, tickets: list[Ticket], pid: int) -> bool:
    """Whether the worker of process `pid` holds a running ticket."""
    for ticket in tickets:
        status = await queue.status(ticket)
        if status.state == "running" and f":{pid}:" in (status.worker or ""):
            return True
    return False


@pytest.mark.slow
@pytest.mark.postgres
async def test_a_postgres_worker_sigstopped_inside_a_transaction_has_its_tickets_taken_over(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    # The worker is stopped only once the server shows one of its transactions open (it then
    # holds session locks a takeover needs): its own connections end such a transaction after
    # its lease (`idle_in_transaction_session_timeout`), so another worker takes its tickets.
    url = pg_cluster.url
    with model_in_thread(chunk_delay_s=0.002) as server:
        queue = await TurnQueue.open(url)
        pool = Pool(url, server.base_url, tmp_path / "counter", tmp_path, concurrency=2)
        try:
            tickets = [await queue.submit(f"s{n}", f"t{n}") for n in range(20)]
            first = pool.spawn()
            await pool.started([first])
            async with asyncio.timeout(GUARD_S):  # stopped holding a ticket, in a transaction
                while True:
                    first.popen.send_signal(signal.SIGSTOP)
                    if await _idle_in_transaction(url) and await _runs(queue, tickets, first.pid):
                        break
                    first.popen.send_signal(signal.SIGCONT)
                    await asyncio.sleep(0.005)
            second = pool.spawn()
            await pool.started([second])
            async with asyncio.timeout(RUN_TIMEOUT_S):
                while not all([(await queue.status(t)).done for t in tickets]):
                    await asyncio.sleep(0.2)
            statuses = [await queue.status(t) for t in tickets]
            assert {s.state for s in statuses} == {"completed"}, statuses
            assert any(s.claims >= 2 for s in statuses), statuses  # taken over from the first
            assert first.popen.poll() is None  # still stopped: nothing waited for it
        finally:
            pool.stop()
            await queue.close()
