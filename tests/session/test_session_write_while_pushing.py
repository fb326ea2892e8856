"""Group commit: appends keep joining the open transaction while it writes, never while it ends.

A commit with many events pending first writes them (`_tx_write`) while pushes and appends go on
into the same transaction (its locks are held, so the seqs handed out stay the stored truth);
then it seals (`_sealing`: pushes are refused, appends wait) and commits the rest. The reading
side sees every acknowledged chunk once, with contiguous seqs; a failed commit loses the
acknowledged rows of the transaction as a whole and breaks the log, never a part of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from session_helpers import Store, assert_contiguous

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import AssistantChunk, SessionLog, TurnStart
from modelwire.vocab import TextDelta

EARLY = 300  # events pending when the commit starts (above the early-write threshold)


def _pause(log: SessionLog, hook: str) -> tuple[asyncio.Event, asyncio.Event]:
    """Make the log's `hook` wait: (reached, release)."""
    reached, release = asyncio.Event(), asyncio.Event()
    original: Callable[..., Awaitable[Any]] = getattr(log, hook)

    async def paused(*args: Any, **kwargs: Any) -> Any:
        reached.set()
        await release.wait()
        return await original(*args, **kwargs)

    setattr(log, hook, paused)
    return reached, release


def _chunks(start: int, n: int) -> list[TextDelta]:
    return [TextDelta(0, f"c{i} ") for i in range(start, start + n)]


async def _texts(store: Store) -> list[str]:
    """What another instance reads back: the chunk texts, seqs checked contiguous."""
    other = await store.open()
    events = await other.read("s")
    assert_contiguous(events)
    return [e.data.chunk.text for e in events if isinstance(e.data, AssistantChunk)]


async def test_pushes_join_the_transaction_while_a_commit_writes_early(
    durable_store: Store,
) -> None:
    log = await durable_store.open()
    await log.append("s", TurnStart(1))
    writer = log.chunk_writer("s", 1, 1, 1)
    first = _chunks(0, EARLY)
    assert all(writer.push(c) >= 0 for c in first)
    reached, release = _pause(log, "_tx_write")
    flush = asyncio.create_task(log.flush())
    await reached.wait()  # the early write is in flight
    later = _chunks(EARLY, 50)
    seqs = [writer.push(c) for c in later]
    assert seqs == list(range(1 + EARLY, 1 + EARLY + 50))  # joined, not refused
    release.set()
    await flush
    assert await _texts(durable_store) == [c.text for c in first + later]


async def test_pushes_are_refused_while_the_transaction_seals(durable_store: Store) -> None:
    log = await durable_store.open()
    await log.append("s", TurnStart(1))
    writer = log.chunk_writer("s", 1, 1, 1)
    first = _chunks(0, 10)  # below the early-write threshold: the commit seals at once
    assert all(writer.push(c) >= 0 for c in first)
    reached, release = _pause(log, "_tx_finish")
    flush = asyncio.create_task(log.flush())
    await reached.wait()  # the commit is ending
    late = TextDelta(0, "late ")
    assert writer.push(late) == -1  # refused: it would be dropped with the ended transaction
    append = asyncio.create_task(writer.append(late))  # waits for the next transaction
    await asyncio.sleep(0)
    assert not append.done()
    release.set()
    await flush
    assert (await append).seq == 11
    await log.flush()
    assert await _texts(durable_store) == [c.text for c in first] + ["late "]


async def test_a_failed_commit_after_an_early_write_breaks_the_log_and_keeps_the_prefix(
    durable_store: Store,
) -> None:
    log = await durable_store.open()
    await log.append("s", TurnStart(1))
    await log.flush()  # the durable prefix: the turn's start
    writer = log.chunk_writer("s", 1, 1, 1)
    chunks = _chunks(0, EARLY)
    await writer.append(chunks[0])  # opens the next transaction
    assert all(writer.push(c) >= 0 for c in chunks[1:])
    reached, release = _pause(log, "_tx_write")
    original = log._tx_finish  # type: ignore[attr-defined]

    async def failing(*args: Any, **kwargs: Any) -> None:
        raise OSError("the disk went away")

    log._tx_finish = failing  # type: ignore[attr-defined]
    flush = asyncio.create_task(log.flush())
    await reached.wait()
    assert writer.push(TextDelta(0, "joined ")) >= 0  # acknowledged during the early write
    release.set()
    with pytest.raises(HarnessError) as failed:
        await flush
    assert failed.value.code == ErrorCode.LOG_UNAVAILABLE
    log._tx_finish = original  # type: ignore[attr-defined]
    with pytest.raises(HarnessError) as again:
        await log.append("s", TurnStart(2))
    assert again.value.code == ErrorCode.LOG_UNAVAILABLE  # broken until reopened
    assert await _texts(durable_store) == []  # nothing of the lost transaction, not a part
