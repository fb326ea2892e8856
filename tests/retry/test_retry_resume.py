"""Issue 5: a process killed during the backoff wait and restarted resumes with the right retry
number. `Agent.resume_turn` continues the dead process's Step: it honours the retry it decided
(only the rest of the wait, measured from the `llm/retry` record, then `llm/retry-started` with
the same `retry_id` and `retry`), and `RetryPlugin` counts on from the log, so the retry budget is
shared by both processes (spec C10, C16).

The unit tests cut a real memory-log history at the death point and run the resumed agent on an
injected clock and sleep (`FakeTime`: nothing waits in real time); the wire test kills a real
child process (DeepSeek adapter, loopback server answering 503) on SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from retry_helpers import (
    FakeTime,
    RecordingSleep,
    Rig,
    check_invariants,
    durable_params,
    fail,
    log_url,
    make_rig,
    of_type,
    other_tasks,
    policy,
    text,
    types,
)
from retry_resume_child import DELAY_MS
from retry_wire import RawServer, answer, status

from modelwire.agent import Agent
from modelwire.retry import RetryPlugin
from modelwire.session import Event, MemoryLog, open_log
from modelwire.vocab import Finish

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
CHILD = HERE / "retry_resume_child.py"
SOURCE, SID = "source", "resumed"
LONG = 60_000
PAUSE_S = 1.0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class _Clock:
    """Epoch ms of `base`; while `fixed` is set, that value (to date copied events in the past)."""

    def __init__(self, base: Callable[[], int] = _now_ms) -> None:
        self.base = base
        self.fixed: int | None = None

    def __call__(self) -> int:
        return self.fixed if self.fixed is not None else self.base()


async def _source(rig: Rig, *scripts: Any) -> list[Event]:
    """One complete turn with the retry plugin (instant waits) on the source session."""
    rig.adapter.queue(*scripts)
    agent = rig.agent(plugin=rig.plugin())
    await agent.run_turn(SOURCE, "hi")
    await agent.close()
    rig.adapter.requests.clear()
    rig.sleep.delays.clear()
    return await rig.log.read(SOURCE)


def _after(events: Sequence[Event], pred: Callable[[Event], bool], nth: int = 1) -> int:
    hits = [i for i, e in enumerate(events) if pred(e)]
    return hits[nth - 1] + 1


def _is(name: str) -> Callable[[Event], bool]:
    return lambda e: e.type == name


def _finish(e: Event) -> bool:
    return e.type == "assistant/chunk" and isinstance(e.data.chunk, Finish)


async def _dead(
    events: Sequence[Event], keep: int, *, age_ms: int, fake: FakeTime | None = None
) -> MemoryLog:
    """The first `keep` events, all dated `age_ms` ago (the process died that long ago); with
    `fake`, the log runs on that injected clock."""
    clock = _Clock() if fake is None else _Clock(fake)
    log = MemoryLog(clock=clock)
    clock.fixed = clock() - age_ms
    for event in events[:keep]:
        await log.append(SID, event.data)
    clock.fixed = None
    return log


def _resumer(
    rig: Rig, log: MemoryLog, sleep: RecordingSleep, fake: FakeTime | None = None
) -> Agent:
    """A fresh agent over `log`; with `fake`, its clock and sleep are that fake."""
    return Agent(
        runtime=rig.runtime,
        log=log,
        provider="mock",
        model="m1",
        plugins=[RetryPlugin(sleep=sleep)],
        clock=fake,
        sleep=None if fake is None else fake.sleep,
        # the fake clock jumps through whole backoffs, and no lease renewal runs in fake time
        lease_ms=3_600_000.0,
    )


def _chain(events: Sequence[Event]) -> list[tuple[str, int, str]]:
    return [
        (e.type, e.data.retry, e.data.retry_id)
        for e in events
        if e.type in ("llm/retry", "llm/retry-started")
    ]


def _attempts(events: Sequence[Event]) -> list[int]:
    return sorted({e.data.attempt for e in events if e.type == "assistant/chunk"})


SLOW = {"max_retries": 2, "initial": LONG, "max": LONG, "jitter": 0}


async def test_retry_resume_honours_a_pending_retry_waiting_only_the_rest_of_it() -> None:
    rig = make_rig(policy(**SLOW))
    events = await _source(rig, fail("SERVER", status=503), fail("SERVER"), text("ok"))
    fake = FakeTime()
    log = await _dead(events, _after(events, _is("llm/retry")), age_ms=LONG - 300, fake=fake)
    rig.adapter.queue(fail("SERVER", status=503), text("back"))
    sleep = RecordingSleep()
    result = await _resumer(rig, log, sleep, fake).resume_turn(SID)

    assert (result.turn, result.reason.kind, result.text) == (1, "completed", "back")
    assert fake.slept == [0.3]  # the 300 ms left of the 60 s wait, not the whole wait
    out = await log.read(SID)
    (record, *_) = of_type(out, "llm/retry")
    rid = record.retry_id
    assert _chain(out) == [
        ("llm/retry", 1, rid),
        ("llm/retry-started", 1, rid),
        ("llm/retry", 2, rid),  # the plugin counts on from the log
        ("llm/retry-started", 2, rid),
    ]
    retry_event = next(e for e in out if e.type == "llm/retry")
    started_event = next(e for e in out if e.type == "llm/retry-started")
    assert started_event.time - retry_event.time >= LONG - 5
    assert sleep.delays == [LONG / 1000]  # only retry 2 waits through the plugin
    assert _attempts(out) == [1, 2, 3]
    assert [m.attempt for m in of_type(out, "assistant/message")] == [3]
    assert rig.adapter.requests[0].messages == rig.adapter.requests[1].messages
    check_invariants(out)


@pytest.mark.parametrize(
    ("age_ms", "left_s"),
    [
        pytest.param(0, LONG / 1000, id="just-decided"),
        pytest.param(LONG - 300, 0.3, id="mostly-elapsed"),
        pytest.param(2 * LONG, 0.0, id="elapsed"),
    ],
)
async def test_resume_waits_the_remaining_backoff_on_the_injected_clock(
    age_ms: int, left_s: float
) -> None:
    rig = make_rig(policy(**SLOW))
    events = await _source(rig, fail("SERVER"), text("ok"))
    fake = FakeTime()
    log = await _dead(events, _after(events, _is("llm/retry")), age_ms=age_ms, fake=fake)
    resumed_at = fake()
    rig.adapter.queue(text("on time"))
    result = await _resumer(rig, log, RecordingSleep(), fake).resume_turn(SID)

    assert result.text == "on time"
    assert fake.slept == [left_s]  # measured from the record's time by the agent's clock
    out = await log.read(SID)
    decided = next(e for e in out if e.type == "llm/retry")
    started = next(e for e in out if e.type == "llm/retry-started")
    assert decided.time == resumed_at - age_ms
    assert started.time == max(decided.time + LONG, resumed_at)
    assert len(rig.adapter.requests) == 1
    check_invariants(out)


async def test_retry_resume_a_pending_retry_whose_wait_elapsed_dispatches_at_once() -> None:
    rig = make_rig(policy(**SLOW))
    events = await _source(rig, fail("SERVER"), text("ok"))
    log = await _dead(events, _after(events, _is("llm/retry")), age_ms=2 * LONG)
    rig.adapter.queue(text("now"))
    sleep = RecordingSleep()
    result = await asyncio.wait_for(_resumer(rig, log, sleep).resume_turn(SID), 5)
    assert (result.reason.kind, result.text) == ("completed", "now")
    out = await log.read(SID)
    assert [(kind, retry) for kind, retry, _ in _chain(out)] == [
        ("llm/retry", 1),
        ("llm/retry-started", 1),
    ]
    assert sleep.delays == []
    check_invariants(out)


async def test_retry_resume_cancelled_during_the_honoured_wait_aborts_without_dispatch() -> None:
    rig = make_rig(policy(**SLOW))
    events = await _source(rig, fail("SERVER"), text("ok"))
    fake = FakeTime(hold=True)
    log = await _dead(events, _after(events, _is("llm/retry")), age_ms=0, fake=fake)
    agent = _resumer(rig, log, RecordingSleep(), fake)
    task = asyncio.create_task(agent.resume_turn(SID))
    await asyncio.wait_for(fake.entered.wait(), 5)  # the agent is in the honoured wait
    assert fake.slept == [LONG / 1000]
    assert not task.done()
    assert agent.cancel(SID)
    with pytest.raises(asyncio.CancelledError):
        await task
    out = await log.read(SID)
    assert "llm/retry-started" not in types(out)
    (end,) = of_type(out, "turn/end")
    assert (end.turn, end.reason.kind, end.reason.reason.kind) == (1, "aborted", "user")
    assert rig.adapter.requests == []
    assert not other_tasks()  # no timer outlives the wait
    check_invariants(out)


async def test_retry_resume_shares_the_retry_budget_across_both_processes() -> None:
    rig = make_rig(policy(**SLOW))
    events = await _source(rig, fail("SERVER"), fail("SERVER"), text("ok"))
    log = await _dead(events, _after(events, _is("llm/retry"), 2), age_ms=2 * LONG)
    rig.adapter.queue(fail("SERVER", "still down"))
    sleep = RecordingSleep()
    result = await _resumer(rig, log, sleep).resume_turn(SID)

    assert result.failure is not None
    assert (result.failure.code, result.failure.message) == ("SERVER", "still down")
    out = await log.read(SID)
    assert [(kind, retry) for kind, retry, _ in _chain(out)] == [
        ("llm/retry", 1),
        ("llm/retry-started", 1),
        ("llm/retry", 2),
        ("llm/retry-started", 2),  # honoured by the resumed process; no retry 3 (budget 2)
    ]
    assert sleep.delays == [] and _attempts(out) == [1, 2, 3]
    check_invariants(out)


async def test_retry_resume_a_failure_nothing_decided_on_is_counted_on_from_the_log() -> None:
    rig = make_rig(policy(**SLOW))
    events = await _source(rig, fail("SERVER"), fail("SERVER"), text("ok"))
    log = await _dead(events, _after(events, _finish, 2), age_ms=0)  # attempt 2 failed
    rig.adapter.queue(text("third time"))
    sleep = RecordingSleep()
    result = await _resumer(rig, log, sleep).resume_turn(SID)

    assert (result.reason.kind, result.text) == ("completed", "third time")
    out = await log.read(SID)
    rid = of_type(out, "llm/retry")[0].retry_id
    assert _chain(out) == [
        ("llm/retry", 1, rid),
        ("llm/retry-started", 1, rid),
        ("llm/retry", 2, rid),
        ("llm/retry-started", 2, rid),
    ]
    assert sleep.delays == [LONG / 1000] and _attempts(out) == [1, 2, 3]
    check_invariants(out)


async def test_retry_resume_after_a_started_retry_dispatches_the_next_attempt() -> None:
    rig = make_rig(policy(**SLOW))
    events = await _source(rig, fail("SERVER"), text("ok"))
    log = await _dead(events, _after(events, _is("llm/retry-started")), age_ms=0)
    rig.adapter.queue(text("next"))
    sleep = RecordingSleep()
    result = await asyncio.wait_for(_resumer(rig, log, sleep).resume_turn(SID), 5)
    assert result.text == "next"
    out = await log.read(SID)
    assert [(kind, retry) for kind, retry, _ in _chain(out)] == [
        ("llm/retry", 1),
        ("llm/retry-started", 1),
    ]
    assert sleep.delays == [] and _attempts(out) == [1, 2]
    check_invariants(out)


# ---- the real scenario: SIGKILL during the backoff wait, a new process resumes -------------


@pytest.fixture
async def raw() -> AsyncIterator[RawServer]:
    server = RawServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def _child(mode: str, url: str, sid: str, base_url: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        mode,
        url,
        sid,
        base_url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
    )


async def _kill_in_backoff(url: str, sid: str, proc: asyncio.subprocess.Process) -> None:
    """Poll the durable log until the child's `llm/retry` is visible, then SIGKILL the child."""
    log = await open_log(url)
    try:
        for _ in range(1000):
            if proc.returncode is not None:
                raise AssertionError("the worker exited before the backoff wait")
            if await log.exists(sid) and await log.latest(sid, "llm/retry") is not None:
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the worker never recorded llm/retry")
    finally:
        await log.close()
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    stderr = await proc.stderr.read()  # type: ignore[union-attr]
    assert proc.returncode == -signal.SIGKILL, stderr.decode()


@pytest.mark.parametrize("backend", durable_params())
async def test_retry_resume_a_worker_killed_in_the_backoff_wait_resumes_the_same_chain(
    raw: RawServer, tmp_path: Path, sid: str, backend: str
) -> None:
    url = log_url(backend, tmp_path)
    raw.queue(status(503, "overloaded"))
    await _kill_in_backoff(url, sid, await _child("run", url, sid, raw.url))

    log = await open_log(url)
    try:
        dead = await log.read(sid)
        assert [(kind, retry) for kind, retry, _ in _chain(dead)] == [("llm/retry", 1)]
        assert "turn/end" not in types(dead)

        raw.queue(status(503, "still overloaded"), answer("resumed"))
        await asyncio.sleep(PAUSE_S)  # the restart comes well into the 2 s wait
        proc = await _child("resume", url, sid, raw.url)
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, stderr.decode()
        running, report = (json.loads(line) for line in stdout.decode().splitlines())
        assert report == {"turn": 1, "reason": "completed", "text": "resumed"}

        events = await log.read(sid)
        rid = of_type(events, "llm/retry")[0].retry_id
        assert _chain(events) == [
            ("llm/retry", 1, rid),  # the dead process
            ("llm/retry-started", 1, rid),  # the resumed process, after the rest of the wait
            ("llm/retry", 2, rid),
            ("llm/retry-started", 2, rid),
        ]
        marks = [e for e in events if e.type in ("llm/retry", "llm/retry-started")]
        # The decided 2 s are honoured from the record's time, but not waited again in full.
        assert marks[1].time >= marks[0].time + DELAY_MS - 1
        # Waiting the whole delay again would start at `running` + 2 s, at least 500 ms later.
        assert marks[1].time <= max(marks[0].time + DELAY_MS, running["running"]) + 500
        assert marks[3].time >= marks[2].time + DELAY_MS - 1
        assert len(of_type(events, "assistant/message")) == 1
        assert [s.turn for s in of_type(events, "turn/start")] == [1]
        assert [(s.turn, s.step) for s in of_type(events, "step/start")] == [(1, 1)]
        assert [(e.turn, e.reason.kind) for e in of_type(events, "turn/end")] == [(1, "completed")]
        assert _attempts(events) == [1, 2, 3]
        check_invariants(events)  # also: seqs contiguous from 0
        assert len(raw.bodies) == 3 and len(set(raw.bodies)) == 1  # byte-identical requests
    finally:
        await log.close()
