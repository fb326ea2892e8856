"""Hardening of the session log on every backend (memory, SQLite, PostgreSQL when configured).

Rules pinned:
- session ids are checked at the API edge (1..256 printable characters): a lone surrogate, NUL,
  a control character, an over-long or empty id is refused with INVALID_SESSION_ID naming the
  problem (never echoing a huge id), before any seq is handed out — so one caller's bad id never
  fails the group commit that holds another caller's acknowledged events, and a read with such an
  id leaves the instance usable;
- conditional appends (`expect_seq`): a decision derived from a stale view of the session is
  refused with STALE_WRITE and writes nothing, atomically with respect to other instances.
"""

from __future__ import annotations

import asyncio

import pytest
from session_helpers import Store, assert_contiguous

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import StepEnd, StepStart, TurnStart

BAD_IDS = [
    pytest.param("x\ud800", "lone surrogate", id="lone-surrogate"),
    pytest.param("x\x00y", "control character", id="nul"),
    pytest.param("a\nb", "control character", id="newline"),
    pytest.param("tab\there", "control character", id="tab"),
    pytest.param("x\u200by", "format character", id="zero-width-space"),
    pytest.param("x" * 257, "257 characters long", id="too-long"),
    pytest.param("", "must not be empty", id="empty"),
]


@pytest.mark.parametrize(("bad", "problem"), BAD_IDS)
async def test_bad_session_id_never_loses_other_sessions_events(
    store: Store, bad: str, problem: str
) -> None:
    log = await store.open()
    await log.append("good", TurnStart(1))  # acknowledged, still buffered in the group commit
    with pytest.raises(HarnessError) as info:
        await log.append(bad, TurnStart(1))
    assert info.value.code == ErrorCode.INVALID_SESSION_ID
    assert problem in info.value.message
    await log.append("good", StepStart(1, 1))  # the instance is not broken
    await log.flush()
    if store.durable:
        await log.close()
        log = await store.open()
    assert [e.data for e in await log.read("good")] == [TurnStart(1), StepStart(1, 1)]


@pytest.mark.parametrize(("bad", "problem"), BAD_IDS)
async def test_reading_with_a_bad_session_id_is_refused_and_the_log_keeps_working(
    store: Store, bad: str, problem: str
) -> None:
    log = await store.open()
    await log.append("good", TurnStart(1))
    for call in (log.read(bad), log.latest(bad, "turn/start"), log.exists(bad)):
        with pytest.raises(HarnessError) as info:
            await call
        assert info.value.code == ErrorCode.INVALID_SESSION_ID
    assert len(await log.read("good")) == 1
    await log.append("good", StepStart(1, 1), barrier=True)


async def test_invalid_session_id_message_never_echoes_a_huge_id(store: Store) -> None:
    log = await store.open()
    huge = "secret-looking-" * 10_000
    with pytest.raises(HarnessError) as info:
        await log.append(huge, TurnStart(1))
    assert info.value.code == ErrorCode.INVALID_SESSION_ID
    assert "150000 characters long (at most 256)" in info.value.message
    assert "secret-looking-secret-looking" not in info.value.message


async def test_documented_alphabet_accepts_printable_unicode_ids(store: Store) -> None:
    log = await store.open()
    for sid in ("a", "user 42/thread#7", "会话-一", "émoji-🙂", "x" * 256):
        await log.append(sid, TurnStart(1))
        assert (await log.read(sid))[0].data == TurnStart(1)


async def test_conditional_append_refuses_a_writer_with_a_stale_view(store: Store) -> None:
    first = await store.open()
    second = await store.open()  # another instance on the same store (memory: the same one)
    await first.append("s", TurnStart(1), barrier=True)
    seen = len(await first.read("s"))  # the view a decision is derived from: 1 event
    await second.append("s", StepStart(1, 1), barrier=True)  # another writer moves on
    with pytest.raises(HarnessError) as info:
        await first.append_many("s", [StepEnd(1, 1)], expect_seq=seen)
    assert info.value.code == ErrorCode.STALE_WRITE
    assert "seq 1" in info.value.message and "2 event(s)" in info.value.message
    await first.flush()
    assert [e.data for e in await first.read("s")] == [TurnStart(1), StepStart(1, 1)]
    event = await first.append("s", StepEnd(1, 1), expect_seq=2)  # a fresh view is accepted
    assert event.seq == 2


async def test_conditional_append_inside_an_open_group_commit(store: Store) -> None:
    log = await store.open()
    await log.append("s", TurnStart(1))  # buffered: the session is locked by this instance
    assert (await log.append("s", StepStart(1, 1), expect_seq=1)).seq == 1
    with pytest.raises(HarnessError) as info:
        await log.append("s", StepEnd(1, 1), expect_seq=1)
    assert info.value.code == ErrorCode.STALE_WRITE
    await log.append("brand-new", TurnStart(1), expect_seq=0)
    with pytest.raises(HarnessError) as info:
        await log.append("never-seen", TurnStart(1), expect_seq=3)
    assert info.value.code == ErrorCode.STALE_WRITE
    assert not await log.exists("never-seen")


async def test_racing_conditional_appends_give_each_seq_to_exactly_one_writer(
    store: Store,
) -> None:
    logs = [await store.open(), await store.open()]
    await logs[0].append("race", TurnStart(1), barrier=True)

    async def writer(index: int) -> int:
        log = logs[index % 2]
        won = 0
        for _ in range(10):
            seen = len(await log.read("race"))
            try:
                await log.append("race", StepStart(1, index), expect_seq=seen, barrier=True)
                won += 1
            except HarnessError as exc:
                assert exc.code == ErrorCode.STALE_WRITE
        return won

    wins = await asyncio.gather(*(writer(i) for i in range(4)))
    events = await logs[0].read("race")
    assert_contiguous(events)
    assert len(events) == 1 + sum(wins)


async def test_expect_seq_must_be_a_non_negative_integer(store: Store) -> None:
    log = await store.open()
    for bad in (-1, "1", 1.0, True):
        with pytest.raises(HarnessError) as info:
            await log.append("s", TurnStart(1), expect_seq=bad)  # type: ignore[arg-type]
        assert info.value.code == ErrorCode.INVALID_ARGS
