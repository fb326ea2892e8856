"""SQLite crash safety: a writer process SIGKILLed at seeded random points never damages the log.

After every kill the file opens cleanly, passes `PRAGMA integrity_check`, its seqs are contiguous,
every event decodes (no half-written event), everything the child reported as flushed is still
there, and a new writer continues at the next seq.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import sys
from pathlib import Path

import pytest
from session_helpers import SRC, assert_contiguous

from modelwire.session import AssistantChunk, StepEnd, open_log
from modelwire.vocab import TextDelta

FILES = 12  # x 2 kills each: 24 seeded kill points
PARALLEL = 4

CHILD = r"""
import asyncio, random, sys
from modelwire.session import AssistantChunk, StepEnd, StepStart, TurnStart
from modelwire.session.sqlite import SqliteLog
from modelwire.vocab import TextDelta

async def main(url, seed):
    rng = random.Random(int(seed))
    log = await SqliteLog.open(
        url,
        commit_rows=rng.choice([3, 50, 1024]),
        commit_interval_ms=rng.choice([1.0, 5.0, 40.0]),
    )
    turn = 0
    while True:
        turn += 1
        sid = rng.choice(["s", "s", "t"])
        events = await log.append_many(sid, [TurnStart(turn), StepStart(turn, 1)], barrier=True)
        print(sid, events[-1].seq + 1, flush=True)
        for _ in range(rng.randint(1, 400)):
            text = "x" * rng.randint(1, 1500)
            event = await log.append(sid, AssistantChunk(turn, 1, 1, TextDelta(0, text)))
            if rng.random() < 0.03:
                await log.flush()
                print(sid, event.seq + 1, flush=True)
        await log.append(sid, StepEnd(turn, 1))

asyncio.run(main(*sys.argv[1:]))
"""


async def crash_once(path: Path, seed: int) -> dict[str, int]:
    """Run the child until a seeded kill point, SIGKILL it; returns the flushed counts it reported."""
    rng = random.Random(seed)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        f"sqlite:///{path}",
        str(seed),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
    )
    assert proc.stdout is not None
    durable: dict[str, int] = {}
    try:
        for _ in range(rng.randint(1, 6)):
            line = await asyncio.wait_for(proc.stdout.readline(), 30)
            if not line:
                break
            sid, count = line.decode().split()
            durable[sid] = max(durable.get(sid, 0), int(count))
        await asyncio.sleep(rng.uniform(0.0, 0.03))
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert proc.returncode == -signal.SIGKILL, (await proc.stderr.read()).decode()  # type: ignore[union-attr]
    return durable


async def check_after_crash(path: Path, durable: dict[str, int]) -> None:
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()
    log = await open_log(f"sqlite:///{path}")
    try:
        for sid, flushed in durable.items():
            events = await log.read(sid)  # decodes every payload: nothing half-written
            assert_contiguous(events)
            assert len(events) >= flushed, f"{sid}: flushed {flushed}, found {len(events)}"
            for event in events:
                if event.type == "assistant/chunk":
                    text = event.data.chunk.text  # type: ignore[attr-defined]
                    assert text == "after" or (text and set(text) == {"x"})
            nxt = await log.append(sid, AssistantChunk(99, 1, 1, TextDelta(0, "after")))
            assert nxt.seq == len(events)
            await log.append(sid, StepEnd(99, 1), barrier=True)
            assert_contiguous(await log.read(sid))
    finally:
        await log.close()


@pytest.mark.parametrize("batch", range(FILES // PARALLEL))
async def test_sigkill_at_random_points_leaves_a_consistent_log(tmp_path: Path, batch: int) -> None:
    seeds = [batch * PARALLEL + i for i in range(PARALLEL)]
    paths = [tmp_path / f"crash-{seed}.db" for seed in seeds]
    for round_ in range(2):  # the second round resumes the log the first kill left behind
        reports = await asyncio.gather(
            *(crash_once(p, s + 1000 * round_) for p, s in zip(paths, seeds, strict=True))
        )
        for path, durable in zip(paths, reports, strict=True):
            assert durable, "the child reported no flush before the kill"
            await check_after_crash(path, durable)
