"""A turn queue and its workers when a database writer stalls, a claim is cancelled, a factory
never returns or a ticket row is corrupt.

Rules pinned: cancelling a SQLite claim at any point leaves the queue object usable and the
database not write-locked; a worker whose agent factory never returns obeys SIGTERM (it exits
at once, naming the factory); a corrupt ticket row is `LOG_CORRUPT` naming the ticket and the
field, never a raw `ValueError`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from modelwire.errors import ErrorCode, HarnessError
from modelwire.workers import TurnQueue

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
