"""One contract suite run on every backend (memory, SQLite, PostgreSQL when configured).

Pins the `SessionLog` interface: contiguous seqs from 0 per session, read/latest/sessions/exists,
group commit visibility, flush and barrier appends, validation errors naming session and seq,
closed logs, reopening a durable store, and several instances appending to one store.
"""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from session_helpers import Store, assert_contiguous

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import (
    AssistantChunk,
    RequestContext,
    SessionLog,
    StepEnd,
    StepStart,
    TurnCompleted,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from modelwire.vocab import Finish, Stop, TextDelta, user_message


def text_chunk(text: str) -> AssistantChunk:
    return AssistantChunk(1, 1, 1, TextDelta(0, text))


def chunk(i: int) -> AssistantChunk:
    return text_chunk(f"delta {i}")


class NotAnEvent(msgspec.Struct, frozen=True):
    value: int


async def test_first_event_of_a_session_gets_seq_zero(store: Store) -> None:
    log = await store.open()
    event = await log.append("s1", TurnStart(1))
    assert (event.seq, event.type, event.data) == (0, "turn/start", TurnStart(1))
    assert await log.read("s1") == [event]


async def test_seqs_are_contiguous_per_session(store: Store) -> None:
    log = await store.open()
    for i in range(5):
        await log.append("a", chunk(i))
        await log.append("b", chunk(i))
    many = await log.append_many("a", [StepEnd(1, 1), TurnEnd(1, TurnCompleted())])
    assert [e.seq for e in many] == [5, 6]
    assert_contiguous(await log.read("a"))
    assert_contiguous(await log.read("b"))
    assert [e.data for e in await log.read("b")] == [chunk(i) for i in range(5)]


async def test_concurrent_tasks_on_one_session_never_collide(store: Store) -> None:
    log = await store.open()

    async def writer(w: int) -> list[tuple[int, str]]:
        placed: list[tuple[int, str]] = []
        for i in range(40):
            if i % 7 == 0:
                pair = [text_chunk(f"w{w}-{i}a"), text_chunk(f"w{w}-{i}b")]
                events = await log.append_many("s", pair)
                placed.extend((e.seq, f"w{w}-{i}{x}") for e, x in zip(events, "ab", strict=True))
            else:
                event = await log.append("s", text_chunk(f"w{w}-{i}"), barrier=i % 13 == 0)
                placed.append((event.seq, f"w{w}-{i}"))
        return placed

    results = await asyncio.gather(*(writer(w) for w in range(4)))
    seqs = sorted(seq for placed in results for seq, _ in placed)
    assert seqs == list(range(len(seqs)))
    events = await log.read("s")
    assert_contiguous(events)
    texts = {e.seq: e.data.chunk.text for e in events}  # type: ignore[attr-defined]
    for placed in results:
        assert [texts[seq] for seq, _ in placed] == [text for _, text in placed]
        assert [seq for seq, _ in placed] == sorted(seq for seq, _ in placed)


async def test_read_ranges_and_unknown_sessions(store: Store) -> None:
    log = await store.open()
    await log.append_many("s", [chunk(i) for i in range(6)])
    assert [e.seq for e in await log.read("s", 2)] == [2, 3, 4, 5]
    assert [e.seq for e in await log.read("s", 1, 3)] == [1, 2]
    assert await log.read("s", 6) == []
    with pytest.raises(HarnessError) as info:
        await log.read("missing")
    assert info.value.code == ErrorCode.SESSION_NOT_FOUND
    assert "missing" in info.value.message
    with pytest.raises(HarnessError) as info:
        await log.read("s", 3, 1)
    assert info.value.code == ErrorCode.INVALID_ARGS


async def test_latest_returns_highest_seq_of_a_type(store: Store) -> None:
    log = await store.open()
    await log.append("s", TurnStart(1))
    await log.append("s", RequestContext("p", "m", 1000))
    await log.append_many("s", [chunk(i) for i in range(3)])
    await log.append("s", RequestContext("p", "m2"))
    await log.append("s", chunk(9))
    latest = await log.latest("s", "request/context")
    assert latest is not None and latest.seq == 5 and latest.data == RequestContext("p", "m2")
    assert await log.latest("s", "turn/end") is None
    assert await log.latest("nobody", "turn/start") is None


async def test_sessions_lists_counts_and_times(store: Store) -> None:
    log = await store.open()
    assert await log.sessions() == []
    await log.append("b", TurnStart(1))
    await log.append_many("a", [TurnStart(1), StepStart(1, 1)])
    await log.append("b", StepStart(1, 1))
    await log.flush()
    await log.append("b", StepEnd(1, 1))
    infos = await log.sessions()
    assert [(i.session_id, i.events) for i in infos] == [("a", 2), ("b", 3)]
    b_events = await log.read("b")
    assert infos[1].first_time == b_events[0].time and infos[1].last_time == b_events[-1].time
    assert await log.exists("a") and not await log.exists("c")


async def test_unflushed_appends_are_readable_immediately(store: Store) -> None:
    log = await store.open(commit_interval_ms=60_000) if store.durable else await store.open()
    await log.append("s", TurnStart(1))
    await log.append("s", chunk(0))
    assert [e.type for e in await log.read("s")] == ["turn/start", "assistant/chunk"]
    assert (await log.latest("s", "assistant/chunk")) is not None
    assert await log.exists("s")
    await log.flush()
    await log.flush()  # nothing buffered: returns promptly


async def test_unregistered_payload_is_refused_with_invalid_event(store: Store) -> None:
    log = await store.open()
    with pytest.raises(HarnessError) as info:
        await log.append("s", NotAnEvent(1))
    assert info.value.code == ErrorCode.INVALID_EVENT
    assert "'s'" in info.value.message and "NotAnEvent" in info.value.message
    assert not await log.exists("s")


async def test_payload_not_matching_its_type_is_refused(store: Store) -> None:
    log = await store.open()
    await log.append("s", TurnStart(1))
    with pytest.raises(HarnessError) as info:
        await log.append_many("s", [StepStart(1, 1), TurnStart("1")])  # type: ignore[arg-type]
    assert info.value.code == ErrorCode.INVALID_EVENT
    assert "turn/start" in info.value.message
    assert_contiguous(await log.read("s"))
    assert len(await log.read("s")) == 1  # all or none
    assert (await log.append("s", StepStart(1, 1))).seq == 1


async def test_empty_session_id_is_refused(store: Store) -> None:
    log = await store.open()
    with pytest.raises(HarnessError) as info:
        await log.append("", TurnStart(1))
    assert info.value.code == ErrorCode.INVALID_SESSION_ID


async def test_closed_log_raises_log_unavailable(store: Store) -> None:
    log = await store.open()
    await log.append("s", TurnStart(1))
    await log.close()
    await log.close()  # idempotent
    for call in (log.read("s"), log.append("s", TurnStart(2)), log.flush(), log.sessions()):
        with pytest.raises(HarnessError) as info:
            await call
        assert info.value.code == ErrorCode.LOG_UNAVAILABLE


async def test_reopen_after_close_keeps_events_and_continues_numbering(
    durable_store: Store,
) -> None:
    store = durable_store
    log = await store.open()
    first = [TurnStart(1), UserMessage(user_message("hi")), chunk(0), chunk(1)]
    await log.append_many("s", first[:2], barrier=True)
    await log.append("s", first[2])
    await log.append("s", first[3])
    await log.close()  # close flushes the buffered chunks
    again = await store.open()
    events = await again.read("s")
    assert [e.data for e in events] == first
    assert (await again.append("s", AssistantChunk(1, 1, 1, Finish(Stop())))).seq == 4


async def test_two_instances_on_one_store_share_numbering(durable_store: Store) -> None:
    store = durable_store
    one = await store.open(commit_interval_ms=5)
    two = await store.open(commit_interval_ms=5)
    await one.append("s", TurnStart(1))
    await one.flush()
    assert (await two.append("s", StepStart(1, 1))).seq == 1
    await two.flush()
    assert (await one.append("s", StepEnd(1, 1))).seq == 2
    await one.flush()

    async def writer(log: SessionLog, tag: str) -> None:
        for i in range(30):
            await log.append("s", text_chunk(f"{tag}-{i}"))
            if i % 10 == 9:
                await log.flush()

    await asyncio.gather(writer(one, "one"), writer(two, "two"))
    await one.flush()
    await two.flush()
    events = await one.read("s")
    assert_contiguous(events)
    assert len(events) == 63
    texts = [e.data.chunk.text for e in events[3:]]  # type: ignore[attr-defined]
    for tag in ("one", "two"):
        assert [t for t in texts if t.startswith(tag)] == [f"{tag}-{i}" for i in range(30)]


async def test_two_instances_locking_sessions_in_opposite_order_do_not_deadlock(
    durable_store: Store,
) -> None:
    store = durable_store
    one = await store.open(commit_interval_ms=50)
    two = await store.open(commit_interval_ms=50)

    async def writer(log: SessionLog, order: tuple[str, str]) -> None:
        for i in range(20):
            for sid in order:
                await log.append(sid, chunk(i))
        await log.flush()

    await asyncio.wait_for(
        asyncio.gather(writer(one, ("x", "y")), writer(two, ("y", "x"))), timeout=30
    )
    for sid in ("x", "y"):
        events = await one.read(sid)
        assert_contiguous(events)
        assert len(events) == 40


async def test_cancelled_append_leaves_the_log_consistent(store: Store) -> None:
    log = await store.open()
    await log.append("s", TurnStart(1))
    tasks = [asyncio.ensure_future(log.append("s", chunk(i), barrier=True)) for i in range(10)]
    await asyncio.sleep(0)
    for task in tasks[::2]:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await log.flush()
    after = await log.append("s", StepEnd(1, 1))
    events = await log.read("s")
    assert_contiguous(events)
    assert events[-1] == after


async def test_commit_rows_batches_commit_without_flush(durable_store: Store) -> None:
    store = durable_store
    log = await store.open(commit_rows=8, commit_interval_ms=60_000)
    await log.append_many("s", [chunk(i) for i in range(20)])
    other = await store.open()
    seen = await other.read("s")  # at least the first full batch was committed
    assert len(seen) >= 8
    assert_contiguous(seen)
    await log.flush()
    assert len(await other.read("s")) == 20


async def test_group_commit_timer_commits_without_flush(durable_store: Store) -> None:
    store = durable_store
    log = await store.open(commit_interval_ms=5)
    other = await store.open()
    await log.append("s", chunk(0))
    for _ in range(200):
        if await other.exists("s"):
            break
        await asyncio.sleep(0.01)
    assert [e.seq for e in await other.read("s")] == [0]
