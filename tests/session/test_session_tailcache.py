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
