"""A frozen PostgreSQL never hangs the caller (a real server behind a proxy that stops
forwarding, as a SIGSTOPped server or a blackholed network would).

Rules pinned: every log operation has a client-side deadline (`io_timeout_s`) besides the
server-side `lock_timeout` / `statement_timeout`; past it the operation fails with
`LOG_UNAVAILABLE` naming the stall, and the connection is dropped; cancelling an agent turn whose
log is stalled returns within a bounded time (the turn's `turn/end` gets `cancel_grace_ms`).
No test measures elapsed time: each only requires that the call ends (a generous outer timeout
guards the suite against a regression that hangs)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import pytest
from agent_helpers import Hang, ScriptedAdapter
from pg_stall_proxy import StallProxy

from modelwire.agent import Agent
from modelwire.errors import ErrorCode, HarnessError
from modelwire.runtime import LlmRuntime
from modelwire.session import StepStart, TurnStart
from modelwire.session.postgres import PostgresLog
from modelwire.vocab import BlockStart, TextDelta


def pg_url() -> str | None:
    return os.environ.get("MODELWIRE_TEST_POSTGRES_URL") or None


pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(pg_url() is None, reason="MODELWIRE_TEST_POSTGRES_URL is not set"),
]

GUARD_S = 60.0  # only a hang reaches it


@pytest.fixture
async def proxy() -> AsyncIterator[StallProxy]:
    url = pg_url()
    assert url is not None
    proxy = await StallProxy(url).start()
    try:
        yield proxy
    finally:
        await proxy.stop()


async def test_a_frozen_server_fails_a_barrier_append_with_log_unavailable_naming_the_stall(
    proxy: StallProxy, sid: str
) -> None:
    log = await PostgresLog.open(proxy.url, io_timeout_s=2.5)  # a loaded CI box answers in time
    try:
        await log.append(sid, TurnStart(1), barrier=True)
        proxy.freeze()
        with pytest.raises(HarnessError) as info:
            await asyncio.wait_for(log.append(sid, StepStart(1, 1), barrier=True), GUARD_S)
        assert info.value.code == ErrorCode.LOG_UNAVAILABLE
        assert "no answer within 2.5 s" in info.value.message
        assert "stalled" in info.value.message
        with pytest.raises(HarnessError) as info:  # reads are bounded too
            await asyncio.wait_for(log.read(sid), GUARD_S)
        assert info.value.code == ErrorCode.LOG_UNAVAILABLE
        proxy.thaw()
        # the failed append was reported to its caller, nothing acknowledged was lost: once the
        # server answers again the same instance reconnects and goes on
        assert [e.data for e in await log.read(sid)] == [TurnStart(1)]
        await log.append(sid, StepStart(1, 1), barrier=True)
    finally:
        proxy.thaw()
        await asyncio.wait_for(log.close(), GUARD_S)


async def test_cancelling_a_turn_whose_log_is_frozen_returns(proxy: StallProxy, sid: str) -> None:
    log = await PostgresLog.open(proxy.url, io_timeout_s=30.0)
    runtime = LlmRuntime()
    adapter = ScriptedAdapter()
    runtime.register_adapter(["scripted"], adapter)
    hang = Hang()
    adapter.queue([BlockStart(0, "text"), TextDelta(0, "partial"), hang])
    agent = Agent(runtime, log, "scripted", "m1", cancel_grace_ms=200)
    task = asyncio.create_task(agent.run_turn(sid, "hi"))
    try:
        await asyncio.wait_for(hang.reached.wait(), GUARD_S)
        proxy.freeze()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, GUARD_S)
    finally:
        proxy.thaw()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.gather(log.close(), return_exceptions=True)
