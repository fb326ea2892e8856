"""The retry count lives in the log (spec C10, C16): a worker SIGKILLed during the backoff wait and
a restarted one continue the same chain — on SQLite and PostgreSQL — and G.11 #2 persistence.

Here the restarted worker calls the `on_request_error` hook directly (the plugin's count alone),
then `run_turn` repairs the dead turn and starts a new one. The end-to-end restart — a new
process continuing the dead turn with `Agent.resume_turn` — is `test_retry_resume.py`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from retry_helpers import RecordingSleep, check_invariants, durable_params, log_url, of_type, types
from retry_wire import API_KEY, ROUTE, RawServer, answer, deepseek_agent, status

from modelwire.agent import GiveUp, RequestErrorContext, Retry, TurnSignal
from modelwire.agent.request import derive_messages
from modelwire.policy import resolve_retry_policy
from modelwire.retry import RetryPlugin
from modelwire.session import LlmRetry, SessionLog, TurnEnd, TurnInterrupted, open_log
from modelwire.vocab import LlmFailure

SRC = Path(__file__).resolve().parents[2] / "src"
SLOW = {
    "mode": "normal",
    "max_retries": 2,
    "backoff": {"initial_delay_ms": 60000, "max_delay_ms": 60000, "jitter_ratio": 0},
}

CHILD = r"""
import asyncio, sys
from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent
from modelwire.retry import RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import open_log

async def main(url, sid, base_url, key):
    log = await open_log(url)
    runtime = LlmRuntime()
    policy = {"mode": "normal", "max_retries": 2,
              "backoff": {"initial_delay_ms": 60000, "max_delay_ms": 60000, "jitter_ratio": 0}}
    runtime.register_adapter(["deepseek-official"], DeepSeekAdapter(
        api_key=key, base_url=base_url, env={}, retry_policy=policy))
    agent = Agent(runtime=runtime, log=log, provider="deepseek-official",
                  model="deepseek-v4-flash", plugins=[RetryPlugin()], repair_after_ms=0)
    print("running", flush=True)
    await agent.run_turn(sid, "hi")
    print("turn ended", flush=True)

asyncio.run(main(*sys.argv[1:]))
"""


@pytest.fixture
async def raw() -> AsyncIterator[RawServer]:
    server = RawServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def _wait_for_retry_record(url: str, sid: str, proc: asyncio.subprocess.Process) -> None:
    """Poll the durable log until the child's `llm/retry` is visible (it then sits in the wait)."""
    log = await open_log(url)
    try:
        for _ in range(1000):
            if proc.returncode is not None:
                raise AssertionError("the worker exited before the backoff wait")
            if await log.exists(sid) and await log.latest(sid, "llm/retry") is not None:
                return
            await asyncio.sleep(0.02)
        raise AssertionError("the worker never recorded llm/retry")
    finally:
        await log.close()


async def _kill_during_backoff(url: str, sid: str, base_url: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        url,
        sid,
        base_url,
        API_KEY,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
    )
    try:
        await _wait_for_retry_record(url, sid, proc)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    stderr = await proc.stderr.read()  # type: ignore[union-attr]
    assert proc.returncode == -signal.SIGKILL, stderr.decode()


def _context(
    agent: object, log: SessionLog, sid: str, attempt: int, policy: object
) -> RequestErrorContext:
    return RequestErrorContext(
        agent=agent,  # type: ignore[arg-type]
        session_id=sid,
        log=log,
        turn=1,
        step=1,
        attempt=attempt,
        provider=ROUTE,
        failure=LlmFailure("DeepSeek API error (HTTP 503)", "SERVER", status=503),
        retry_policy=policy,  # type: ignore[arg-type]
        signal=TurnSignal(None),
    )


@pytest.mark.parametrize("backend", durable_params())
async def test_c10_a_worker_killed_in_the_backoff_wait_is_continued_after_restart(
    raw: RawServer, tmp_path: Path, sid: str, backend: str
) -> None:
    url = log_url(backend, tmp_path)
    raw.queue(status(503, "overloaded"))
    await _kill_during_backoff(url, sid, raw.url)

    log = await open_log(url)
    try:
        events = await log.read(sid)
        (first,) = of_type(events, "llm/retry")
        assert (first.retry, first.delay_ms, first.failure.code) == (1, 60000, "SERVER")
        assert "llm/retry-started" not in types(events)  # killed inside the wait

        # The restarted worker continues the same chain for the same (turn, step): retry 2.
        sleep = RecordingSleep()
        agent = deepseek_agent(raw.url, log, retry_policy=SLOW)
        plugin = RetryPlugin(sleep=sleep)
        dispose = plugin.install(agent)
        policy = resolve_retry_policy(SLOW)
        hooks = agent.hooks.on_request_error
        assert await hooks.run(_context(agent, log, sid, 2, policy)) == Retry()
        assert sleep.delays == [60.0]  # retry 2: min(60000 ms · 2, cap 60000)
        records = of_type(await log.read(sid), "llm/retry")
        assert [(r.retry, r.retry_id) for r in records] == [
            (1, first.retry_id),
            (2, first.retry_id),
        ]
        # The budget (2) is spent across both processes: the next failure is handed on, and
        # with nobody after the plugin the chain gives up.
        assert await hooks.run(_context(agent, log, sid, 3, policy)) == GiveUp()
        # A changed policy is a new chain: retry 1 with a fresh id.
        changed = resolve_retry_policy({**SLOW, "max_retries": 3})
        assert await hooks.run(_context(agent, log, sid, 3, changed)) == Retry()
        records = of_type(await log.read(sid), "llm/retry")
        assert records[-1].retry == 1 and records[-1].retry_id != first.retry_id
        await dispose()

        # A fresh turn after the restart: the dead turn is closed, numbering starts anew.
        raw.queue(status(503, "again"), answer("back"))
        fresh = deepseek_agent(  # the worker was SIGKILLed: its open turn is known dead
            raw.url,
            log,
            plugins=[RetryPlugin(sleep=RecordingSleep())],
            retry_policy=SLOW,
            repair_after_ms=0,
        )
        result = await fresh.run_turn(sid, "hello again")
        assert result.turn == 2 and result.text == "back"
        events = await log.read(sid)
        assert TurnEnd(1, TurnInterrupted()) in of_type(events, "turn/end")
        assert [(r.turn, r.retry) for r in of_type(events, "llm/retry")] == [
            (1, 1),
            (1, 2),
            (1, 1),
            (2, 1),
        ]
        check_invariants(events)
    finally:
        await log.close()


@pytest.mark.parametrize("backend", durable_params())
async def test_g11_02_an_always_retry_record_round_trips_through_persistence(
    tmp_path: Path, sid: str, backend: str
) -> None:
    url = log_url(backend, tmp_path)
    record = LlmRetry(
        retry_id="3f1c2e9a",
        turn=1,
        step=1,
        provider=ROUTE,
        policy_key='["always",500,10000,0.1]',
        mode="always",
        failure=LlmFailure(
            "slow", "RATE_LIMIT", status=429, provider_retry_after_ms=1500.5, request_id="req-1"
        ),
        retry=7,
        delay_ms=1234.5,
    )
    log = await open_log(url)
    try:
        await log.append(sid, record, barrier=True)
    finally:
        await log.close()
    reopened = await open_log(url)
    try:
        events = await reopened.read(sid)
        assert [e.data for e in events] == [record]
        assert derive_messages(events) == ()  # adds no model-visible message
    finally:
        await reopened.close()
