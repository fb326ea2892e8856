"""Session-log throughput: chunk events appended per second with group commit, beside flush cost.

Standalone script: `python benchmarks/bench_session_log.py [--quick]`. Runs on SQLite (a file in a
temporary directory) and, when `MODELWIRE_TEST_POSTGRES_URL` is set, on PostgreSQL (in a
temporary schema that is dropped afterwards). For each backend it prints:

- `chunks/s`: `assistant/chunk` events appended back to back by one task, group-committed, with
  the closing `flush()` included in the time (target on SQLite: >= 20,000/s);
- `flush`: the cost of one durable barrier after a model call's request facts (median and p95) —
  what the checkpoint barrier adds before every provider call;
- `loop chunks/s`: the realistic mix — per model call 3 request facts, one flush, 200 chunks;
- `16 streams chunks/s`: 16 sessions streaming concurrently into one log;
- `writer chunks/s`: chunks pushed through a `ChunkWriter` (the agent's path: no await per
  chunk, stored as runs), flush included.

Every run reads the events back and checks count and contiguity, so a fast but lossy log fails.
Exit status 1 when the SQLite chunk rate misses the target.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from modelwire.session import (
    AssistantChunk,
    RequestContext,
    SessionLog,
    StepStart,
    UserMessage,
    open_log,
)
from modelwire.vocab import TextDelta, user_message

TARGET_CHUNKS_PER_S = 20_000
CHUNK = AssistantChunk(1, 1, 1, TextDelta(0, "a typical streamed token or two"))


async def verify(log: SessionLog, session_id: str, expected: int) -> None:
    events = await log.read(session_id)
    if len(events) != expected or any(e.seq != i for i, e in enumerate(events)):
        raise SystemExit(f"{session_id}: expected {expected} contiguous events, got {len(events)}")


async def chunk_rate(log: SessionLog, count: int) -> float:
    sid = f"bench-{uuid.uuid4().hex}"
    await log.append(sid, StepStart(1, 1), barrier=True)
    start = time.perf_counter()
    for _ in range(count):
        await log.append(sid, CHUNK)
    await log.flush()
    elapsed = time.perf_counter() - start
    await verify(log, sid, count + 1)
    return count / elapsed


async def writer_rate(log: SessionLog, count: int) -> float:
    """Chunk events pushed through a `ChunkWriter` (what the agent does), flush included."""
    sid = f"bench-{uuid.uuid4().hex}"
    await log.append(sid, StepStart(1, 1), barrier=True)
    writer = log.chunk_writer(sid, 1, 1, 1)
    chunk = CHUNK.chunk
    start = time.perf_counter()
    for i in range(count):
        if writer.push(chunk) < 0:
            await writer.append(chunk)
        if i % 64 == 63:
            await asyncio.sleep(0)  # as a stream's reads yield to the loop
    await log.flush()
    elapsed = time.perf_counter() - start
    await verify(log, sid, count + 1)
    return count / elapsed


async def flush_cost(log: SessionLog, calls: int) -> tuple[float, float]:
    sid = f"bench-{uuid.uuid4().hex}"
    costs: list[float] = []
    for step in range(1, calls + 1):
        await log.append(sid, StepStart(1, step))
        await log.append(sid, UserMessage(user_message("next question")))
        await log.append(sid, RequestContext("deepseek", "deepseek-chat", 65536))
        start = time.perf_counter()
        await log.flush()
        costs.append(time.perf_counter() - start)
        for _ in range(5):
            await log.append(sid, CHUNK)
    await log.flush()
    await verify(log, sid, calls * 8)
    costs.sort()
    return statistics.median(costs) * 1e3, costs[int(len(costs) * 0.95) - 1] * 1e3


async def loop_rate(log: SessionLog, calls: int, chunks_per_call: int = 200) -> float:
    sid = f"bench-{uuid.uuid4().hex}"
    start = time.perf_counter()
    for step in range(1, calls + 1):
        await log.append(sid, StepStart(1, step))
        await log.append(sid, UserMessage(user_message("next question")))
        await log.append(sid, RequestContext("deepseek", "deepseek-chat", 65536))
        await log.flush()  # the checkpoint barrier before the provider call
        for _ in range(chunks_per_call):
            await log.append(sid, CHUNK)
    await log.flush()
    elapsed = time.perf_counter() - start
    await verify(log, sid, calls * (3 + chunks_per_call))
    return calls * chunks_per_call / elapsed


async def streams_rate(log: SessionLog, streams: int, count: int) -> float:
    sids = [f"bench-{uuid.uuid4().hex}" for _ in range(streams)]

    async def stream(sid: str) -> None:
        for i in range(count):
            await log.append(sid, CHUNK)
            if i % 64 == 63:
                await asyncio.sleep(0)  # other streams interleave, as with real network reads

    start = time.perf_counter()
    await asyncio.gather(*(stream(sid) for sid in sids))
    await log.flush()
    elapsed = time.perf_counter() - start
    for sid in sids:
        await verify(log, sid, count)
    return streams * count / elapsed


async def measure(name: str, url: str, quick: bool) -> dict[str, float]:
    scale = 10 if quick else 1
    log = await open_log(url)
    try:
        rates = [await chunk_rate(log, 100_000 // scale) for _ in range(3)]
        pushed = max([await writer_rate(log, 100_000 // scale) for _ in range(3)])
        median_flush, p95_flush = await flush_cost(log, 200 // scale)
        mixed = await loop_rate(log, 200 // scale)
        streams = await streams_rate(log, 16, 5_000 // scale)
    finally:
        await log.close()
    result = {
        "chunks/s": max(rates),
        "flush median ms": median_flush,
        "flush p95 ms": p95_flush,
        "loop chunks/s": mixed,
        "16 streams chunks/s": streams,
        "writer chunks/s": pushed,
    }
    print(
        f"{name:<10} {result['chunks/s']:>12,.0f} {median_flush:>10.3f} {p95_flush:>9.3f} "
        f"{mixed:>14,.0f} {streams:>20,.0f} {pushed:>18,.0f}"
    )
    return result


async def with_pg_schema(base: str, run: Callable[[str], Awaitable[dict[str, float]]]) -> None:
    import psycopg

    schema = f"mwbench_{uuid.uuid4().hex[:12]}"
    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
    try:
        joiner = "&" if "?" in base else "?"
        await run(f"{base}{joiner}options=-csearch_path%3D{schema}")
    finally:
        async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    args = parser.parse_args()
    print(
        f"{'backend':<10} {'chunks/s':>12} {'flush ms':>10} {'p95 ms':>9} "
        f"{'loop chunks/s':>14} {'16 streams chunks/s':>20} {'writer chunks/s':>18}"
    )
    with tempfile.TemporaryDirectory(prefix="modelwire-bench-") as tmp:
        sqlite = await measure("sqlite", f"sqlite:///{Path(tmp) / 'bench.db'}", args.quick)
    pg = os.environ.get("MODELWIRE_TEST_POSTGRES_URL")
    if pg:
        await with_pg_schema(pg, lambda url: measure("postgres", url, args.quick))
    else:
        print("postgres   skipped (set MODELWIRE_TEST_POSTGRES_URL to include it)")
    ok = sqlite["chunks/s"] >= TARGET_CHUNKS_PER_S
    verdict = "meets" if ok else "MISSES"
    print(
        f"\nSQLite group commit: {sqlite['chunks/s']:,.0f} chunk events/s ({verdict} the "
        f"{TARGET_CHUNKS_PER_S:,}/s target); one durable flush before a model call costs "
        f"{sqlite['flush median ms']:.3f} ms (median)."
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
