"""Load: 1,000 turns launched at once across 100 sessions, with seeded failures on the wire.

One agent (real `DeepSeekAdapter`, `RetryPlugin`, SQLite log) runs every turn against the fault
server, which answers each request at random (seeded): a good stream, 503, 429, a reset mid-body,
a stall past the idle budget, a malformed payload. Every turn must end `completed` or `error`
with a classified code; every session's seqs are contiguous and unique, with exactly one
`turn/start` and `turn/end` per turn; no payload carries a secret; no connection stays open; and
traced memory returns to its warmed-up baseline once the load is gone.
"""

from __future__ import annotations

import asyncio
import gc
import random
import tracemalloc
from collections import Counter
from pathlib import Path

import msgspec
from reliability_counts import assert_no_secret, bump
from reliability_scenarios import SSE_CHUNKED, sse_response
from reliability_server import Behaviour, Conn, FaultServer, chunked, reset
from reliability_wire import DEEPSEEK_KEY, good_events

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent
from modelwire.retry import RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import TurnEnd, TurnErrored, TurnStart, open_log
from modelwire.wire.http import close_sessions

SESSIONS = 100
TURNS_PER_SESSION = 10
POLICY = {
    "mode": "normal",
    "max_retries": 2,
    "backoff": {"initial_delay_ms": 5, "max_delay_ms": 10, "jitter_ratio": 0},
}
CLASSIFIED = frozenset(
    {"SERVER", "RATE_LIMIT", "TRANSPORT", "TIMEOUT", "MALFORMED_RESPONSE", "STREAM_CLOSED"}
)


def _status(code: int) -> Behaviour:
    body = b'{"error":{"message":"busy"}}'
    head = (
        f"HTTP/1.1 {code} Busy\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, head + body)
        conn.complete = True

    return behave


async def _reset_mid(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
    await conn.send(w, SSE_CHUNKED + chunked(good_events("deepseek")[:2])[:-5])
    reset(w)


async def _stall(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
    await conn.send(w, SSE_CHUNKED + chunked(good_events("deepseek")[:2])[:-5])
    await reader.read()


def chooser(seed: int) -> Behaviour:
    """Each request draws its fate from a seeded generator."""
    rng = random.Random(seed)
    good = sse_response(good_events("deepseek"))
    malformed = sse_response([b"data: {not json\n\n"])
    fates: list[tuple[float, Behaviour]] = [
        (0.70, good),
        (0.08, _status(503)),
        (0.06, _status(429)),
        (0.06, _reset_mid),
        (0.05, _stall),
        (0.05, malformed),
    ]

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        roll = rng.random()
        for weight, fate in fates:
            if roll < weight:
                await fate(conn, reader, w)
                return
            roll -= weight
        await good(conn, reader, w)

    return behave


async def run_load(path: Path, url: str, sessions: int, turns: int) -> None:
    log = await open_log(f"sqlite:///{path}")
    runtime = LlmRuntime()
    runtime.register_adapter(
        ["deepseek"],
        DeepSeekAdapter(
            api_key=DEEPSEEK_KEY,
            base_url=url,
            env={},
            retry_policy=POLICY,
            stream_idle_timeout_ms=200,
        ),
    )
    agent = Agent(
        runtime=runtime,
        log=log,
        provider="deepseek",
        model="deepseek-v4-flash",
        plugins=[RetryPlugin()],
    )
    ids = [f"load-{i:03d}" for i in range(sessions)]
    calls = [agent.run_turn(sid, f"turn {t} of {sid}") for t in range(turns) for sid in ids]
    async with asyncio.timeout(120):
        results = await asyncio.gather(*calls)
    kinds = Counter(r.reason.kind for r in results)
    assert set(kinds) <= {"completed", "error"}, kinds
    assert kinds["completed"] > len(results) // 2, kinds
    for result in results:
        if isinstance(result.reason, TurnErrored):
            assert result.reason.failure.code in CLASSIFIED, result.reason.failure
            assert_no_secret(result.reason.failure.message, "a turn failure")
    for sid in ids:
        events = await log.read(sid)
        seqs = [e.seq for e in events]
        assert seqs == list(range(len(events))), f"{sid}: seq gap or collision"
        started = [e.data.turn for e in events if isinstance(e.data, TurnStart)]
        ended = [e.data.turn for e in events if isinstance(e.data, TurnEnd)]
        assert started == ended == list(range(1, turns + 1)), (sid, started, ended)
        for event in events:
            assert_no_secret(msgspec.json.encode(event.data).decode(), f"log event {event.type}")
        bump("log events scanned", len(events))
    await agent.close()
    await log.close()
    await close_sessions()


async def test_load_1000_concurrent_turns_across_100_sessions(
    tmp_path: Path, server: FaultServer
) -> None:
    server.behaviour = chooser(20261130)
    gc.collect()
    tracemalloc.start()
    try:
        await run_load(tmp_path / "warm.db", server.url, 10, 2)  # warm caches, pools, imports
        gc.collect()
        baseline = tracemalloc.get_traced_memory()[0]
        await run_load(tmp_path / "load.db", server.url, SESSIONS, TURNS_PER_SESSION)
        assert await server.wait_closed(5) == 0, "connections left open after the load"
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    growth = after - baseline
    assert growth < 4 * 1024 * 1024, f"memory grew by {growth / 1e6:.1f} MB after the load"
    bump("memory growth after load (KiB)", max(0, growth) // 1024)
    bump("concurrent turns", SESSIONS * TURNS_PER_SESSION)
    bump("sessions", SESSIONS)
