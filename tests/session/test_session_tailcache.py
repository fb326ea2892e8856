"""The tail cache of a durable log: bounded, and never the reason a read differs from storage.

A durable log keeps what it appended last for its own reads (`tailcache.py`). With a tiny bound
the cache drops whole sessions and the front of a long one; every read, inside, across and
before what is cached, must still equal what a fresh instance reads from storage.
"""

from __future__ import annotations

from session_helpers import Store

from modelwire.session import StepStart, TurnStart
from modelwire.session.tailcache import TailCache
from modelwire.vocab import TextDelta


async def test_reads_equal_storage_whatever_the_cache_dropped(durable_store: Store) -> None:
    log = await durable_store.open(commit_rows=8)
    log._cache = TailCache(limit=40)  # type: ignore[attr-defined]
    sessions = ["a", "b", "c"]
    for sid in sessions:
        await log.append(sid, TurnStart(1))
    writers = {sid: log.chunk_writer(sid, 1, 1, 1) for sid in sessions}
    for i in range(120):
        for sid, writer in writers.items():
            chunk = TextDelta(0, f"{sid}{i}")
            if writer.push(chunk) < 0:
                await writer.append(chunk)
        if i % 25 == 0:
            await log.append("a", StepStart(1, i))
    assert log._cache.size <= 40  # type: ignore[attr-defined]
    mine = {sid: await log.read(sid) for sid in sessions}
    parts = [await log.read("a", lo, hi) for lo, hi in ((0, 5), (60, 130), (100, None))]
    await log.flush()
    other = await durable_store.open()
    for sid in sessions:
        assert mine[sid] == await other.read(sid)
    whole = mine["a"]
    assert parts == [whole[0:5], whole[60:130], whole[100:]]
    assert await log.latest("a", "step/start") == await other.latest("a", "step/start")


async def test_an_open_run_longer_than_the_bound_is_cut_inside_and_reads_stay_exact(
    durable_store: Store,
) -> None:
    # One attempt's pushes stay one pending run (one cache entry) until the transaction is
    # written; the cache bound then starts the tail inside that run.
    log = await durable_store.open(commit_rows=10_000)
    log._cache = TailCache(limit=40)  # type: ignore[attr-defined]
    await log.append("s", TurnStart(1))
    writer = log.chunk_writer("s", 1, 1, 1)
    for i in range(200):
        chunk = TextDelta(0, f"t{i}")
        if writer.push(chunk) < 0:
            await writer.append(chunk)
    assert log._cache.size <= 40  # type: ignore[attr-defined]
    inside = await log.read("s", 180, 190)
    tail = await log.read("s", 170)
    early = await log.read("s", 5, 9)  # before the cached tail: from storage
    latest = await log.latest("s", "assistant/chunk")
    await log.flush()
    other = await durable_store.open()
    whole = await other.read("s")
    assert [e.seq for e in whole] == list(range(201))
    assert inside == whole[180:190] and tail == whole[170:] and early == whole[5:9]
    assert latest == whole[-1]
