"""Session leases with fencing tokens, on every backend (rules in `modelwire.session.lease`).

Time is the logs' injected clock (`Clock`): a lease expires when the test moves the clock, never
by waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from session_helpers import Store, backend_params, make_store

from modelwire.errors import HarnessError
from modelwire.session import MemoryLog, SessionLog, UserMessage
from modelwire.session.lease import check_lease_ms
from modelwire.session.sqlite import SqliteLog
from modelwire.vocab import user_message


class Clock:
    """A settable epoch-ms clock shared by every log instance of a test."""

    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture(params=backend_params(memory=False))
async def durable(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async for opened in make_store(request.param, tmp_path):
        yield opened


async def _open(store: Store, clock: Clock) -> SessionLog:
    return await store.open(clock=clock)


def _msg(text: str) -> UserMessage:
    return UserMessage(user_message(text))


async def test_lease_first_holder_gets_token_1_and_fences_its_appends_with_it(
    durable: Store,
) -> None:
    clock = Clock()
    log = await _open(durable, clock)
    lease = await log.acquire_lease("s1", "worker-a", 5_000)
    assert (lease.token, lease.owner, lease.expires_ms, lease.prior) == (
        1,
        "worker-a",
        clock.now + 5_000,
        None,
    )
    assert log.fence("s1") == 1
    await log.append("s1", _msg("hello"))
    await log.flush()
    assert [row.token for row in await log.leases()] == [1]


async def test_lease_held_live_by_another_owner_is_refused_turn_in_progress(
    durable: Store,
) -> None:
    clock = Clock()
    a, b = await _open(durable, clock), await _open(durable, clock)
    await a.acquire_lease("s1", "worker-a", 5_000)
    clock.now += 4_999
    with pytest.raises(HarnessError) as caught:
        await b.acquire_lease("s1", "worker-b", 5_000)
    assert caught.value.code == "TURN_IN_PROGRESS"
    assert "'worker-a'" in caught.value.message and "1 ms" in caught.value.message
    assert b.fence("s1") is None


async def test_lease_expired_is_taken_over_and_the_old_writer_gets_lease_lost_writing_nothing(
    durable: Store,
) -> None:
    clock = Clock()
    a, b = await _open(durable, clock), await _open(durable, clock)
    await a.acquire_lease("s1", "worker-a", 1_000)
    await a.append("s1", _msg("one"))
    await a.flush()
    clock.now += 1_000  # expired: expires_ms <= now
    taken = await b.acquire_lease("s1", "worker-b", 1_000)
    assert taken.token == 2 and taken.prior is not None and taken.prior.owner == "worker-a"
    with pytest.raises(HarnessError) as caught:
        await a.append("s1", _msg("stale"))
    assert caught.value.code == "LEASE_LOST"
    assert "taken over by 'worker-b' (token 2)" in caught.value.message
    await b.append("s1", _msg("two"))
    await b.flush()
    texts = [e.data.message.content[0].text for e in await b.read("s1")]  # type: ignore[attr-defined]
    assert texts == ["one", "two"]
    with pytest.raises(HarnessError) as again:  # still fenced: never falls back to unfenced
        await a.append("s1", _msg("stale again"))
    assert again.value.code == "LEASE_LOST"


async def test_lease_expired_without_takeover_refuses_appends_and_renewal(durable: Store) -> None:
    clock = Clock()
    log = await _open(durable, clock)
    lease = await log.acquire_lease("s1", "worker-a", 1_000)
    clock.now += 1_500
    with pytest.raises(HarnessError) as caught:
        await log.append("s1", _msg("late"))
    assert caught.value.code == "LEASE_LOST" and "expired 500 ms ago" in caught.value.message
    with pytest.raises(HarnessError) as renewal:
        await log.renew_lease(lease, 1_000)
    assert renewal.value.code == "LEASE_LOST"
    assert not await log.exists("s1")


async def test_lease_renewal_extends_under_the_same_token(durable: Store) -> None:
    clock = Clock()
    log = await _open(durable, clock)
    lease = await log.acquire_lease("s1", "worker-a", 1_000)
    clock.now += 900
    renewed = await log.renew_lease(lease, 1_000)
    assert (renewed.token, renewed.expires_ms) == (1, clock.now + 1_000)
    clock.now += 900  # past the first expiry, within the renewed one
    await log.append("s1", _msg("still mine"))
    await log.flush()


async def test_lease_same_owner_reacquires_under_its_token(durable: Store) -> None:
    clock = Clock()
    log = await _open(durable, clock)
    first = await log.acquire_lease("s1", "worker-a", 1_000)
    again = await log.acquire_lease("s1", "worker-a", 2_000)
    assert again.token == first.token and again.expires_ms == clock.now + 2_000


async def test_lease_release_lets_another_writer_take_it_at_once(durable: Store) -> None:
    clock = Clock()
    a, b = await _open(durable, clock), await _open(durable, clock)
    lease = await a.acquire_lease("s1", "worker-a", 60_000)
    await a.append("s1", _msg("one"))
    await a.flush()
    await a.release_lease(lease)
    assert a.fence("s1") is None
    taken = await b.acquire_lease("s1", "worker-b", 60_000)
    assert taken.token == 2 and taken.prior is not None and taken.prior.expires_ms == 0
    await a.release_lease(lease)  # already gone: no error, and b keeps it
    assert [(r.owner, r.token) for r in await b.leases()] == [("worker-b", 2)]


async def test_lease_hold_fences_appends_with_a_lease_taken_elsewhere(durable: Store) -> None:
    clock = Clock()
    queue, writer, taker = [await _open(durable, clock) for _ in range(3)]
    lease = await queue.acquire_lease("s1", "worker-a", 1_000)
    await writer.hold(lease)
    await writer.append("s1", _msg("one"))
    await writer.flush()
    clock.now += 1_000
    await taker.acquire_lease("s1", "worker-b", 1_000)
    with pytest.raises(HarnessError) as caught:
        await writer.append("s1", _msg("stale"))
    assert caught.value.code == "LEASE_LOST"


async def test_lease_takeover_waits_for_the_open_group_transaction_and_sees_its_rows(
    durable: Store,
) -> None:
    """The fence holds inside a group-commit transaction: a takeover needs the session's write
    lock, so it lands after the old writer's buffered rows commit and reads them all.
    (PostgreSQL; SQLite holds no lock across an await: the next test.)"""
    if durable.kind == "sqlite":
        pytest.skip("SQLite: a takeover does not wait (test_lease_takeover_on_sqlite_...)")
    clock = Clock()
    a = await _open(durable, clock)
    b = await _open(durable, clock)
    await a.acquire_lease("s1", "worker-a", 1_000)
    await a.append("s1", _msg("buffered"))  # no flush: the group transaction stays open
    clock.now += 1_000
    await asyncio.wait_for(b.acquire_lease("s1", "worker-b", 1_000), 30)
    assert len(await b.read("s1")) == 1
    with pytest.raises(HarnessError) as caught:
        await a.append("s1", _msg("stale"))
    assert caught.value.code == "LEASE_LOST"
    writer = a.chunk_writer("s1", 1, 1, 1)
    from modelwire.vocab import TextDelta

    if writer.push(TextDelta(0, "x")) == -1:
        with pytest.raises(HarnessError) as pushed:
            await writer.append(TextDelta(0, "x"))
        assert pushed.value.code == "LEASE_LOST"
    assert len(await b.read("s1")) == 1


async def test_lease_takeover_on_sqlite_never_waits_for_a_paused_writer_whose_rows_never_land(
    tmp_path: Path,
) -> None:
    """SQLite holds no write lock across an await for leased sessions (a paused process must not
    freeze the file): a takeover lands at once, even while the old writer has rows buffered, and
    those rows are left out of its next commit (its lease is lost: it was presumed dead); its
    next append is refused `LEASE_LOST`; its other sessions' rows still commit."""
    clock = Clock()
    url = f"sqlite:///{tmp_path / 'log.db'}"
    a = await SqliteLog.open(url, clock=clock, commit_interval_ms=600_000.0)  # no timed commit
    b = await SqliteLog.open(url, clock=clock)
    try:
        await a.acquire_lease("s1", "worker-a", 1_000)
        await a.acquire_lease("s2", "worker-a", 60_000)
        await a.append("s1", _msg("buffered"))  # no flush: the group transaction stays open
        kept = _msg("kept")
        await a.append("s2", kept)
        clock.now += 1_000
        await asyncio.wait_for(b.acquire_lease("s1", "worker-b", 1_000), 30)  # at once
        assert not await b.exists("s1")  # nothing of the paused writer's was committed
        await a.flush()  # the commit leaves s1's rows out, writes s2's
        with pytest.raises(HarnessError) as caught:
            await a.append("s1", _msg("stale"))
        assert caught.value.code == "LEASE_LOST"
        assert not await b.exists("s1") and not await a.exists("s1")
        assert [e.data for e in await b.read("s2")] == [kept]
    finally:
        await a.close()
        await b.close()


async def test_lease_memory_log_fences_appends_and_chunk_pushes() -> None:
    clock = Clock()
    log = MemoryLog(clock=clock)
    await log.acquire_lease("s1", "worker-a", 1_000)
    writer = log.chunk_writer("s1", 1, 1, 1)
    from modelwire.vocab import TextDelta

    assert writer.push(TextDelta(0, "ok")) == 0
    clock.now += 1_000
    with pytest.raises(HarnessError) as caught:
        writer.push(TextDelta(0, "late"))
    assert caught.value.code == "LEASE_LOST"
    with pytest.raises(HarnessError):
        await log.append("s1", _msg("late"))
    assert len(await log.read("s1")) == 1


@pytest.mark.parametrize(
    ("lease_ms", "renew_ms", "needle"),
    [
        (1_000, 1_000, "must be longer than its renewal interval"),
        (1_000, 2_000, "must be longer than its renewal interval"),
        (0, None, "lease_ms must be a positive number"),
        (float("nan"), None, "lease_ms must be a positive number"),
        (1_000, -5, "renewal interval must be a positive number"),
    ],
)
def test_lease_duration_not_longer_than_its_renewal_interval_is_invalid_config(
    lease_ms: float, renew_ms: float | None, needle: str
) -> None:
    with pytest.raises(HarnessError) as caught:
        check_lease_ms(lease_ms, renew_ms)
    assert caught.value.code == "INVALID_CONFIG" and needle in caught.value.message


@pytest.mark.parametrize("kind", backend_params())
async def test_lease_bad_owner_and_duration_are_refused_storing_nothing(
    kind: str, tmp_path: Path
) -> None:
    async for store in make_store(kind, tmp_path):
        log = await store.open()
        for owner, ttl in (("", 1_000), ("w", 0), ("w", float("inf"))):
            with pytest.raises(HarnessError) as caught:
                await log.acquire_lease("s1", owner, ttl)
            assert caught.value.code == "INVALID_ARGS"
        assert await log.leases() == []
