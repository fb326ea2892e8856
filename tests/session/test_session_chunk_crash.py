"""A writer process SIGKILLed in the middle of bursts of pushed chunks never leaves a torn batch.

The child streams "turns" into a real SQLite file: each opens with one `append_many` batch
(`turn/start`, `step/start`, `user/message`, barrier), then pushes a burst of chunks through a
`ChunkWriter` (stored as run rows), sometimes flushing, and closes with a batch of `step/end`
and `turn/end`. Chunk texts number every chunk of the process, so a reader can tell a prefix from
a hole. It is killed at seeded random points. A reader then sees a prefix of what was streamed:
contiguous seqs, chunk numbers 0, 1, 2, ... with none missing, every batch whole (never a
`turn/start` without its `step/start` and message, never a `step/end` without its `turn/end`),
everything the child reported flushed, and a new writer continuing at the next seq.
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

from modelwire.session import StepStart, open_log

KILLS = 8

CHILD = r"""
import asyncio, random, sys
from modelwire.session import StepEnd, StepStart, TurnCompleted, TurnEnd, TurnStart, UserMessage
from modelwire.session.sqlite import SqliteLog
from modelwire.vocab import TextDelta, user_message

async def main(url, seed, start):
    rng = random.Random(int(seed))
    log = await SqliteLog.open(
        url, commit_rows=rng.choice([4, 64, 1024]), commit_interval_ms=rng.choice([1.0, 5.0, 40.0])
    )
    n, turn = int(start), 0
    while True:
        turn += 1
        opened = [TurnStart(turn), StepStart(turn, 1), UserMessage(user_message(f"q{turn}"))]
        await log.append_many("s", opened, barrier=True)
        writer = log.chunk_writer("s", turn, 1, 1)
        for _ in range(rng.randint(50, 3000)):
            chunk = TextDelta(0, f"{n}:" + "x" * rng.randint(0, 300))
            if writer.push(chunk) < 0:
                await writer.append(chunk)
            n += 1
            if rng.random() < 0.002:
                await log.flush()
                print(n, flush=True)
            if rng.random() < 0.01:
                await asyncio.sleep(0)  # let the group-commit timer run
        await log.append_many("s", [StepEnd(turn, 1), TurnEnd(turn, TurnCompleted())])
        await log.flush()
        print(n, flush=True)

asyncio.run(main(*sys.argv[1:]))
"""


async def kill_during_burst(path: Path, seed: int, start: int) -> int:
    """Run the child until a seeded kill point; the chunk count it last reported flushed."""
    rng = random.Random(seed)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        f"sqlite:///{path}",
        str(seed),
        str(start),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
    )
    assert proc.stdout is not None
    flushed = start
    try:
        for _ in range(rng.randint(1, 4)):
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            if not line:
                break
            flushed = int(line)
        await asyncio.sleep(rng.uniform(0.0, 0.05))  # mid-burst, most of the time
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert proc.returncode == -signal.SIGKILL, (await proc.stderr.read()).decode()  # type: ignore[union-attr]
    return flushed


async def check_prefix(path: Path, flushed: int) -> int:
    """The reader's view after a kill: a whole prefix; returns the chunks it holds."""
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()
    log = await open_log(f"sqlite:///{path}")
    try:
        events = await log.read("s")
        assert_contiguous(events)
        numbers = [
            int(e.data.chunk.text.split(":")[0]) for e in events if e.type == "assistant/chunk"
        ]  # type: ignore[attr-defined]
        assert numbers == list(range(len(numbers))), "a chunk is missing or out of order"
        assert len(numbers) >= flushed, f"flushed {flushed} chunks, found {len(numbers)}"
        types = [e.type for e in events]
        for i, name in enumerate(types):
            if name == "turn/start":
                assert types[i + 1 : i + 3] == ["step/start", "user/message"], "torn batch"
            if name == "step/end":
                assert types[i + 1 : i + 2] == ["turn/end"], "torn batch"
        nxt = await log.append("s", StepStart(9_999, 1), barrier=True)  # a new writer goes on
        assert nxt.seq == len(events)
    finally:
        await log.close()
    return len(numbers)


@pytest.mark.parametrize("seed", range(KILLS))
async def test_a_reader_sees_a_whole_prefix_after_a_kill_mid_burst(
    tmp_path: Path, seed: int
) -> None:
    path = tmp_path / "burst.db"
    held = 0
    for round_ in range(2):  # the second writer resumes the log the first kill left behind
        flushed = await kill_during_burst(path, seed + 100 * round_, held)
        held = await check_prefix(path, flushed)
        assert held > 0
    with sqlite3.connect(path) as raw:  # the bursts were stored as runs, not row by row
        assert raw.execute("SELECT max(event_count) FROM modelwire_events").fetchone()[0] > 1
    raw.close()
