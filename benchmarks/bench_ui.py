"""The session inspector (`modelwire ui`) on a big log: how fast its first pages load.

Standalone script: `python benchmarks/bench_ui.py [--quick] [--browser]`. Builds a SQLite log
(and, when `MODELWIRE_TEST_POSTGRES_URL` is set, a PostgreSQL one in a temporary schema) holding
5,000 ordinary sessions (two turns each, ~40 events, usage on every call) plus one session of
100,000 `assistant/chunk` events (50 turns of 2,000 streamed deltas), starts the inspector on it
in this process with cold caches, and times over HTTP on 127.0.0.1:

- `list`: the sessions list's first page (HTML + `/api/sessions`, newest first) — target < 1 s;
- `list warm`, `list last page`: the same again, and the last of the 100 pages;
- `sort tokens cold / warm`: a sort by a derived column, which summarizes every session once;
- `search`: a search over every session (after the summaries exist);
- `session`: the 100,000-chunk session's first page (HTML + `/api/session`, which folds its
  first 20,000 events) cold — target < 1 s —, `session complete` until the live stream has
  delivered the rest, and `session warm` (the whole view from the cache), with the first page's
  JSON size (chunks are never in it: they load per attempt);
- `chunks`: the first page (200) of one attempt's raw chunks;
- `live`: an event appended by another log instance until it arrives on `/api/live` (one poll).

With `--browser` (Chromium from `tests/ui/cdp.py`), also, on a fresh server (cold caches), the
time from navigation until the page has rendered the list, the big session's first page, and the
big session complete. Exit status 1 when a < 1 s target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar  # Any: JSON decoded from the server (checked, not typed)

import aiohttp
import msgspec

from modelwire.session import (
    AssistantChunk,
    AssistantMessage,
    RequestContext,
    RequestHeader,
    SessionLog,
    StepEnd,
    StepStart,
    TurnCompleted,
    TurnEnd,
    TurnStart,
    UserMessage,
    open_log,
)
from modelwire.session.events import EpochHeader
from modelwire.ui import serve
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    CallConfig,
    Finish,
    ModelSource,
    Stop,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
    assistant_message,
    user_message,
)

TARGET_S = 1.0
HEADER = RequestHeader(EpochHeader(config=CallConfig("deepseek", "deepseek-v4-flash")), "initial")
CONTEXT = RequestContext("deepseek", "deepseek-v4-flash", 65_536)
SOURCE = ModelSource("deepseek", "deepseek-v4-flash")


def turn_events(turn: int, question: str, deltas: int, tokens: int) -> list[msgspec.Struct]:
    """One turn of one step: request facts, `deltas` streamed chunks, usage, the message."""
    words = [f"word{i} " for i in range(deltas)]
    answer = "".join(words)
    events: list[msgspec.Struct] = [TurnStart(turn), StepStart(turn, 1)]
    events.append(UserMessage(user_message(question)))
    if turn == 1:
        events += [HEADER, CONTEXT]
    events.append(AssistantChunk(turn, 1, 1, BlockStart(0, "text")))
    events += [AssistantChunk(turn, 1, 1, TextDelta(0, w)) for w in words]
    events.append(AssistantChunk(turn, 1, 1, BlockEnd(0, TextBlock(answer))))
    events.append(AssistantChunk(turn, 1, 1, UsageChunk(TokenUsage(tokens, deltas))))
    events.append(AssistantChunk(turn, 1, 1, Finish(Stop())))
    message = assistant_message([TextBlock(answer)], SOURCE)
    events.append(
        AssistantMessage(
            turn=turn,
            step=1,
            attempt=1,
            message=message,
            usage=TokenUsage(tokens, deltas),
            source_event_seqs=(),
        )
    )
    events += [StepEnd(turn, 1), TurnEnd(turn, TurnCompleted())]
    return events


async def build(log: SessionLog, sessions: int, big_chunks: int) -> str:
    for n in range(sessions):
        sid = f"bench-{n:05d}"
        events = turn_events(1, f"question {n}", 12, 100 + n % 997)
        events += turn_events(2, "and then?", 12, 200 + n % 499)
        await log.append_many(sid, events)
        if n % 500 == 499:
            await log.flush()
    big = "bench-big-session"
    turns = 50
    for turn in range(1, turns + 1):
        await log.append_many(big, turn_events(turn, f"part {turn}", big_chunks // turns - 4, 4000))
    await log.flush()
    return big


T = TypeVar("T")


async def timed(fn: Callable[[], Awaitable[T]]) -> tuple[float, T]:
    start = time.perf_counter()
    value = await fn()
    return time.perf_counter() - start, value


async def measure(name: str, url: str, quick: bool, browser: bool) -> dict[str, float]:
    sessions, big_chunks = (500, 10_000) if quick else (5_000, 100_000)
    writer = await open_log(url)
    try:
        t0 = time.perf_counter()
        big = await build(writer, sessions, big_chunks)
        built_s = time.perf_counter() - t0
        server = await serve(url)
        base = server.url.rstrip("/")
        results: dict[str, float] = {}
        sizes: dict[str, int] = {}
        async with aiohttp.ClientSession() as http:

            async def get(path: str, **params: str) -> bytes:
                async with http.get(base + path, params=params) as response:
                    body = await response.read()
                    if response.status != 200:
                        raise SystemExit(f"{path}: HTTP {response.status}: {body[:300]!r}")
                    return body

            async def page(html: str, api: str, **params: str) -> bytes:
                await get(html, **({"id": params["id"]} if "id" in params else {}))
                return await get(api, **params)

            results["list"], first = await timed(lambda: page("/", "/api/sessions"))
            assert len(json.loads(first)["items"]) == 50
            results["list warm"], _ = await timed(lambda: page("/", "/api/sessions"))
            results["list last page"], _ = await timed(
                lambda: get("/api/sessions", offset=str(sessions + 1 - 50), sort="id")
            )
            results["sort tokens cold"], _ = await timed(
                lambda: get("/api/sessions", sort="tokens")
            )
            results["sort tokens warm"], _ = await timed(
                lambda: get("/api/sessions", sort="tokens")
            )
            results["search"], found = await timed(lambda: get("/api/sessions", q="bench-00499"))
            assert json.loads(found)["matched"] >= 1
            results["session"], body = await timed(lambda: page("/session", "/api/session", id=big))
            sizes["session"] = len(body)
            first_page = json.loads(body)
            results["session complete"], view = await timed(
                lambda: rest_of(http, base, big, first_page)
            )
            chunks = sum(
                a["chunks"] for t in view["turns"] for s in t["steps"] for a in s["attempts"]
            )
            assert view["complete"] and chunks >= big_chunks - 50, chunks
            results["session warm"], _ = await timed(
                lambda: page("/session", "/api/session", id=big)
            )
            results["chunks"], _ = await timed(
                lambda: get("/api/chunks", id=big, turn="25", step="1", attempt="1", limit="200")
            )
            results["live"] = await live_latency(http, base, writer, big, view["next_seq"])
        await server.close()
        if browser:  # on a fresh server: cold caches again
            server = await serve(url)
            results.update(await browser_times(server.url, big))
            await server.close()
    finally:
        await writer.close()
    print(
        f"\n{name}: {sessions:,} sessions + one of {big_chunks:,} chunk events (built in {built_s:.1f} s)"
    )
    for key, value in results.items():
        extra = f"  ({sizes['session'] / 1e6:.1f} MB JSON)" if key == "session" else ""
        print(f"  {key:<22} {value * 1000:>9.1f} ms{extra}")
    return results


async def rest_of(
    http: aiohttp.ClientSession, base: str, sid: str, first: dict[str, Any]
) -> dict[str, Any]:
    """The rest of a first page that was not `complete`, as the page gets it: over `/api/live`."""
    if first["complete"]:
        return first
    params = {"id": sid, "from_seq": str(first["next_seq"])}
    async with http.get(f"{base}/api/live", params=params) as response:
        buffer = b""
        async for piece in response.content.iter_any():  # an update can be one long line
            buffer += piece
            while b"\n\n" in buffer:
                message, buffer = buffer.split(b"\n\n", 1)
                for line in message.split(b"\n"):
                    if line.startswith(b"data: "):
                        update: dict[str, Any] = json.loads(line[6:])
                        if update["complete"]:  # merged as the page does: turns by number
                            turns = {t["turn"]: t for t in first["turns"]}
                            turns.update({t["turn"]: t for t in update["turns"]})
                            return {**update, "turns": list(turns.values())}
    raise SystemExit("the live stream ended before the session was complete")


async def live_latency(
    http: aiohttp.ClientSession, base: str, writer: SessionLog, sid: str, since: int
) -> float:
    params = {"id": sid, "from_seq": str(since)}
    async with http.get(f"{base}/api/live", params=params) as response:
        await response.content.readline()  # the `retry:` line
        await response.content.readline()
        start = time.perf_counter()
        await writer.append(sid, UserMessage(user_message("one more")), barrier=True)
        while True:
            line = (await response.content.readline()).decode()
            if line.startswith("event: update"):
                return time.perf_counter() - start


TESTS_UI = Path(__file__).resolve().parents[1] / "tests" / "ui"


async def browser_times(url: str, big: str) -> dict[str, float]:
    sys.path.insert(0, str(TESTS_UI))
    from cdp import chromium_path, launch  # the tests' DevTools client

    binary = chromium_path()
    if binary is None:
        print("  (--browser: Chromium not found, skipped)")
        return {}
    out: dict[str, float] = {}
    async with launch(binary) as browser:
        page = await browser.new_page()
        for key, path in (("browser list", ""), ("browser session", f"session?id={big}")):
            start = time.perf_counter()
            await page.goto(url + path)
            await page.wait_for("document.body.dataset.loaded", timeout=60)
            out[key] = time.perf_counter() - start
        await page.wait_for("document.body.dataset.complete === '1'", timeout=60)
        out["browser session complete"] = time.perf_counter() - start
    return out


async def with_pg_schema(
    base: str, run: Callable[[str], Awaitable[dict[str, float]]]
) -> dict[str, float]:
    import psycopg

    schema = f"mwbench_ui_{uuid.uuid4().hex[:12]}"
    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
    try:
        joiner = "&" if "?" in base else "?"
        return await run(f"{base}{joiner}options=-csearch_path%3D{schema}")
    finally:
        async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    parser.add_argument("--browser", action="store_true", help="also time headless Chromium")
    args = parser.parse_args()
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="modelwire-bench-ui-") as tmp:
        sqlite = await measure(
            "sqlite", f"sqlite:///{Path(tmp) / 'ui.db'}", args.quick, args.browser
        )
        verdicts.append(("sqlite", sqlite))
    pg = os.environ.get("MODELWIRE_TEST_POSTGRES_URL")
    if pg:
        result = await with_pg_schema(
            pg, lambda url: measure("postgres", url, args.quick, args.browser)
        )
        verdicts.append(("postgres", result))
    else:
        print("\npostgres skipped (set MODELWIRE_TEST_POSTGRES_URL to include it)")
    ok = True
    for name, result in verdicts:
        for key in ("list", "session"):
            meets = result[key] < TARGET_S
            ok = ok and meets
            verdict = "meets" if meets else "MISSES"
            print(f"{name}: first page of {key} in {result[key] * 1000:.0f} ms ({verdict} < 1 s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
