"""`SessionLog.delete` on every backend (issue 30: `modelwire sessions rm` on PostgreSQL too):
every event of the session goes, in one transaction, the others stay; buffered events are made
durable first; an unknown session is `SESSION_NOT_FOUND` and one a live writer leases is
`TURN_IN_PROGRESS`, nothing deleted; the id starts again from seq 0, its fencing tokens on."""

from __future__ import annotations

import pytest
from session_helpers import Store

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import TurnStart, UserMessage
from modelwire.vocab import TextDelta, user_message


async def test_delete_removes_one_session_and_leaves_the_others(store: Store) -> None:
    log = await store.open()
    for sid in ("gone", "kept"):
        await log.append_many(sid, [TurnStart(1), UserMessage(user_message(f"hi {sid}"))])
    writer = log.chunk_writer("gone", 1, 1, 1)
    for text in ("a", "b", "c"):
        if writer.push(TextDelta(0, text)) < 0:
            await log.append("gone", writer.data(TextDelta(0, text)))
    assert await log.delete("gone") == 5
    assert not await log.exists("gone")
    assert [s.session_id for s in await log.sessions()] == ["kept"]
    with pytest.raises(HarnessError) as info:
        await log.read("gone")
    assert info.value.code == ErrorCode.SESSION_NOT_FOUND
    assert len(await log.read("kept")) == 2
    again = await log.append("gone", TurnStart(1))  # the id starts afresh
    assert again.seq == 0 and len(await log.read("gone")) == 1
    if store.durable:  # what another instance reads: the storage, not a cache
        await log.flush()
        other = await store.open()
        assert len(await other.read("gone")) == 1 and len(await other.read("kept")) == 2


async def test_delete_refuses_an_unknown_or_leased_session_and_changes_nothing(
    store: Store,
) -> None:
    log = await store.open()
    with pytest.raises(HarnessError) as info:
        await log.delete("nobody")
    assert info.value.code == ErrorCode.SESSION_NOT_FOUND
    await log.append("busy", TurnStart(1))
    lease = await log.acquire_lease("busy", "worker-a", 60_000)
    with pytest.raises(HarnessError) as info:
        await log.delete("busy")
    assert info.value.code == ErrorCode.TURN_IN_PROGRESS and "worker-a" in info.value.message
    assert len(await log.read("busy")) == 1
    await log.release_lease(lease)
    assert await log.delete("busy") == 1
    later = await log.acquire_lease("busy", "worker-b", 60_000)
    assert later.token > lease.token  # the lease row stayed: tokens only grow
