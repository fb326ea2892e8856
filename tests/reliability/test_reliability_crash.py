"""Crash durability: an agent process on SQLite is SIGKILLed at seeded random points, 100 times.

Each trial runs `reliability_crash_child.py` (real `DeepSeekAdapter` against its own loopback
server, `RetryPlugin`, SQLite log) and kills it either after a seeded delay or right inside a
retry backoff. After every kill: the file passes `PRAGMA integrity_check`, the log opens
cleanly, every event decodes (none half written) with contiguous seqs, no payload carries a
secret; a kill inside a backoff left its `llm/retry` durable, so the count read back from the log
(`find_previous_retry`) is exactly the chain the dead process had reached and the next retry
continues from it. Then a new process (this one) resumes the session: the interrupted turn is
repaired and a new turn completes. Trials run in parallel pairs.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import sys
from pathlib import Path

import msgspec
from reliability_counts import assert_no_secret, bump
from reliability_scenarios import sse_response
from reliability_server import FaultServer
from reliability_wire import DEEPSEEK_KEY, good_events

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent
from modelwire.policy import policy_key, resolve_retry_policy
from modelwire.retry import ChainKey, RetryPlugin, find_previous_retry
from modelwire.runtime import LlmRuntime
from modelwire.session import Event, LlmRetry, LlmRetryStarted, TurnEnd, TurnStart, open_log

TRIALS = 100
PAIRS = 2
CHILD = Path(__file__).with_name("reliability_crash_child.py")
SRC = Path(__file__).resolve().parents[2] / "src"
SESSION = "crash"
POLICY = {
    "mode": "normal",
    "max_retries": 2,
    "backoff": {"initial_delay_ms": 40, "max_delay_ms": 80, "jitter_ratio": 0},
}


async def kill_child(path: Path, seed: int) -> list[str]:
    """Run the child, SIGKILL it at the seeded point; returns every marker line it printed."""
    rng = random.Random(seed)
    in_backoff = rng.random() < 0.3  # kill inside the n-th retry wait ...
    nth_backoff = rng.randint(1, 3)
    delay = rng.uniform(0.0, 0.3)  # ... or after a random delay once the child is ready
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        str(path),
        str(seed),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=str(SRC), RELIABILITY_KEY=DEEPSEEK_KEY),
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(20):
            line = (await proc.stdout.readline()).decode().strip()
            assert line == "ready", f"child failed to start: {line!r}"
            lines.append(line)
            if in_backoff:
                seen = 0
                async with asyncio.timeout(max(delay * 4, 0.8)):
                    while seen < nth_backoff:
                        line = (await proc.stdout.readline()).decode().strip()
                        if not line:
                            break
                        lines.append(line)
                        seen += line == "backoff"
                await asyncio.sleep(rng.uniform(0.0, 0.03))
            else:
                await asyncio.sleep(delay)
    except TimeoutError:
        pass  # no backoff came in time: the kill lands wherever the child is
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
    rest, _ = await proc.communicate()
    lines.extend(x for x in rest.decode().splitlines() if x)
    assert proc.returncode == -signal.SIGKILL, f"child exited on its own ({proc.returncode})"
    return lines


def check_file(path: Path) -> None:
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def check_events(events: list[Event]) -> None:
    assert [e.seq for e in events] == list(range(len(events))), "seqs are not contiguous"
    for event in events:
        assert_no_secret(msgspec.json.encode(event.data).decode(), f"log event {event.type}")
        bump("log events scanned")


def check_retry_chain(events: list[Event]) -> tuple[ChainKey, int] | None:
    """Every chain's retry numbers run 1, 2, …; returns the chain a backoff was cut in, if any."""
    chains: dict[ChainKey, list[int]] = {}
    last_retry: LlmRetry | None = None
    for event in events:
        data = event.data
        if isinstance(data, LlmRetry):
            key = ChainKey(data.turn, data.step, data.provider, data.policy_key)
            chains.setdefault(key, []).append(data.retry)
            last_retry = data
        elif isinstance(data, LlmRetryStarted):
            assert last_retry is not None and data.retry_id == last_retry.retry_id
            last_retry = None
        elif isinstance(data, TurnStart):
            last_retry = None
    for numbers in chains.values():
        assert numbers == list(range(1, len(numbers) + 1)), numbers
    if last_retry is None:
        return None
    key = ChainKey(last_retry.turn, last_retry.step, last_retry.provider, last_retry.policy_key)
    return key, last_retry.retry


async def resume(path: Path, url: str) -> None:
    """A new process (this one) opens the log, repairs the dead turn and completes a new one."""
    log = await open_log(f"sqlite:///{path}")
    try:
        runtime = LlmRuntime()
        runtime.register_adapter(
            ["deepseek"],
            DeepSeekAdapter(
                api_key=DEEPSEEK_KEY,
                base_url=url,
                env={},
                retry_policy=POLICY,
                stream_idle_timeout_ms=2000,
            ),
        )
        agent = Agent(
            runtime=runtime,
            log=log,
            provider="deepseek",
            model="deepseek-v4-flash",
            plugins=[RetryPlugin()],
            repair_after_ms=0,  # the trial SIGKILLed the previous writer
        )
        before = await log.read(SESSION) if await log.exists(SESSION) else []
        result = await agent.run_turn(SESSION, "resume after the crash")
        assert result.reason.kind == "completed", result.reason
        events = await log.read(SESSION)
        check_events(events)
        starts = sum(isinstance(e.data, TurnStart) for e in events)
        ends = sum(isinstance(e.data, TurnEnd) for e in events)
        assert starts == ends, "a turn left open after the resume"
        assert len(events) > len(before)
        await agent.close()
    finally:
        await log.close()


async def trial(path: Path, seed: int, url: str) -> bool:
    lines = await kill_child(path, seed)
    killed_in_backoff = bool(lines) and lines[-1] == "backoff"
    check_file(path)
    log = await open_log(f"sqlite:///{path}")
    try:
        events = await log.read(SESSION) if await log.exists(SESSION) else []
        check_events(events)
        cut = check_retry_chain(events)
        if killed_in_backoff:
            # `llm/retry` is durable before the wait: the log holds the chain the dead process
            # reached, and a continuation of that step counts on from it.
            assert cut is not None, "killed in a backoff, but its llm/retry is not in the log"
            key, number = cut
            previous = await find_previous_retry(log, SESSION, key)
            assert previous is not None and previous.retry == number
            announced = sum(1 for x in lines if x == "backoff")
            assert number <= announced
    finally:
        await log.close()
    await resume(path, url)
    return killed_in_backoff


async def test_crash_sigkill_at_seeded_points_keeps_the_sqlite_log_whole(
    tmp_path: Path, server: FaultServer
) -> None:
    server.behaviour = sse_response(good_events("deepseek"))
    key = policy_key(resolve_retry_policy(POLICY))
    assert key  # the plugin chains by it
    in_backoff = 0
    for first in range(0, TRIALS, PAIRS):
        results = await asyncio.gather(
            *(
                trial(tmp_path / f"t{s}.db", 1000 + s, server.url)
                for s in range(first, first + PAIRS)
            )
        )
        in_backoff += sum(results)
        bump("kill trials", PAIRS)
        bump("resumed turns", PAIRS)
    bump("kills during retry backoff", in_backoff)
    assert in_backoff >= 10, f"only {in_backoff} kills landed inside a retry backoff"
