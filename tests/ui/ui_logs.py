"""Session logs for the inspector's tests, written by real agent turns.

`Agent` over a real `LlmRuntime` with a scripted adapter, `RetryPlugin` and tools; the log's
clock is a `FakeClock` that the retry plugin's sleep, the adapter's chunks and the tools advance,
so the timeline has real-looking durations and no test ever sleeps.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from modelwire.agent import Agent, Tool
from modelwire.retry import RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.runtime.adapter import LlmAdapter
from modelwire.session import MemoryLog, SessionLog, open_log
from modelwire.session.sqlite import SqliteLog
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    GenerateOptions,
    LlmFailure,
    ModelContext,
    ReasoningBlock,
    ReasoningDelta,
    ResolvedModelInfo,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolCalls,
    UsageChunk,
)

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z

XSS_USER = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> **hi**'
XSS_REPLY = (
    "Here is what you sent: <script>window.__pwned = 3</script>\n\n"
    '<img src="x" onerror="window.__pwned = 4">\n\n'
    "[a link](javascript:window.__pwned=5) and [a real one](https://example.com/docs)\n\n"
    "- item **one**\n- item `two`\n\n```html\n<b>not bold</b>\n```"
)
SPECIAL_ID = "team/a b#1?x=y&z"


class FakeClock:
    """Epoch-ms time that only moves when something advances it (plus 3 ms per log write)."""

    def __init__(self, start: int = T0) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 3
        return self.now

    def advance(self, ms: float) -> None:
        self.now += int(ms)

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds * 1000)
        await asyncio.sleep(0)


class Pause:
    """A script item: stop streaming (after setting `reached`) until `go` is set."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.go = asyncio.Event()


@dataclass
class Scripted(LlmAdapter):
    """One scripted response per `stream()` call; each chunk advances the clock by `chunk_ms`."""

    clock: FakeClock
    scripts: list[Sequence[StreamChunk | Pause]] = field(default_factory=list)
    chunk_ms: float = 12.0
    first_token_ms: float = 180.0

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        return ResolvedModelInfo(
            provider=provider, id=model, name=model, context=ModelContext(65_536)
        )

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        script = self.scripts.pop(0)
        self.clock.advance(self.first_token_ms)
        for chunk in script:
            if isinstance(chunk, Pause):
                chunk.reached.set()
                await chunk.go.wait()
                continue
            self.clock.advance(self.chunk_ms)
            yield chunk
            await asyncio.sleep(0)


def text(answer: str, *, usage: TokenUsage | None = None, reasoning: str = "") -> list[StreamChunk]:
    """Optional reasoning, then the answer a few characters per delta, usage, finish stop."""
    chunks: list[StreamChunk] = []
    index = 0
    if reasoning:
        chunks += [BlockStart(0, "reasoning"), ReasoningDelta(0, reasoning)]
        chunks.append(BlockEnd(0, ReasoningBlock(reasoning)))
        index = 1
    chunks.append(BlockStart(index, "text"))
    chunks += [TextDelta(index, answer[i : i + 6]) for i in range(0, len(answer), 6)]
    chunks.append(BlockEnd(index, TextBlock(answer)))
    if usage is not None:
        chunks.append(UsageChunk(usage))
    chunks.append(Finish(Stop()))
    return chunks


def call(
    call_id: str, name: str, arguments: str, *, said: str = "", usage: TokenUsage | None = None
) -> list[StreamChunk]:
    """Optional text, one tool call (arguments in two deltas), usage, finish tool-calls."""
    chunks: list[StreamChunk] = []
    index = 0
    if said:
        chunks += [BlockStart(0, "text"), TextDelta(0, said), BlockEnd(0, TextBlock(said))]
        index = 1
    half = len(arguments) // 2
    chunks += [
        BlockStart(index, "tool-call"),
        ToolCallDelta(index, call_id, arguments[:half], name=name),
        ToolCallDelta(index, call_id, arguments[half:]),
        BlockEnd(index, ToolCallBlock(call_id, name, arguments)),
    ]
    if usage is not None:
        chunks.append(UsageChunk(usage))
    chunks.append(Finish(ToolCalls()))
    return chunks


def failure(
    code: str, message: str, status: int, *, partial: str = "", usage: TokenUsage | None = None
) -> list[StreamChunk]:
    """An attempt that fails (after some text and billed usage, when given)."""
    chunks: list[StreamChunk] = []
    if partial:
        chunks += [BlockStart(0, "text"), TextDelta(0, partial)]
    if usage is not None:
        chunks.append(UsageChunk(usage))
    chunks.append(Finish(Error(LlmFailure(message, code, status=status, request_id="req-7f3a"))))
    return chunks


@dataclass
class Rig:
    """A runtime, a scripted adapter and a log sharing one fake clock."""

    log: SessionLog
    clock: FakeClock
    adapter: Scripted
    runtime: LlmRuntime

    def agent(self, *, tools: Sequence[Tool] = (), system: str | None = None) -> Agent:
        return Agent(
            runtime=self.runtime,
            log=self.log,
            provider="scripted",
            model="sim-1",
            system=system,
            tools=list(tools),
            plugins=[RetryPlugin(sleep=self.clock.sleep, random=lambda: 0.5)],
        )


def rig_for(log: SessionLog, clock: FakeClock) -> Rig:
    runtime = LlmRuntime()
    adapter = Scripted(clock)
    runtime.register_adapter(["scripted"], adapter)
    return Rig(log, clock, adapter, runtime)


def tools(clock: FakeClock) -> list[Tool]:
    def add(args: dict[str, object]) -> object:
        clock.advance(140)
        a, b = args["a"], args["b"]
        assert isinstance(a, (int, float)) and isinstance(b, (int, float))
        return a + b

    def lookup(args: dict[str, object]) -> object:
        clock.advance(60)
        raise RuntimeError(f"no entry named {args.get('name')!r}")

    obj = {"type": "object"}
    return [Tool("add", "Add two numbers", obj, add), Tool("lookup", "Look a name up", obj, lookup)]


@dataclass(frozen=True)
class Sessions:
    """The ids of the sessions `build_sessions` wrote."""

    retries: str
    xss: str
    tools: str
    special: str

    def all(self) -> list[str]:
        return [self.retries, self.xss, self.tools, self.special]


async def build_sessions(rig: Rig, prefix: str = "") -> Sessions:
    """Four sessions of real agent turns: retries then a failure, hostile text, a tool error,
    and an id full of URL metacharacters."""
    ids = Sessions(f"{prefix}retries", f"{prefix}xss", f"{prefix}tools", f"{prefix}{SPECIAL_ID}")
    queue = rig.adapter.scripts
    agent = rig.agent(tools=tools(rig.clock), system="You are terse. Use tools for arithmetic.")
    queue += [
        failure("RATE_LIMIT", "slow down", 429, partial="Let me", usage=TokenUsage(120, 3)),
        call(
            "call_add_1",
            "add",
            '{"a": 19, "b": 23}',
            said="I'll add them.",
            usage=TokenUsage(130, 18),
        ),
        text(
            "The sum is **42**.\n\n- 19\n- 23",
            usage=TokenUsage(40, 12, cache_read_tokens=150, reasoning_tokens=4),
            reasoning="19 + 23 = 42, the tool agrees.",
        ),
    ]
    assert (await agent.run_turn(ids.retries, "What is 19 + 23?")).reason.kind == "completed"
    queue += [failure("SERVER", "upstream overloaded", 503)] * 3
    assert (await agent.run_turn(ids.retries, "And 2 + 2?")).reason.kind == "error"

    queue += [
        call("call_x", "lookup", '{"name": "<script>window.__pwned = 6</script>"}'),
        text(XSS_REPLY, usage=TokenUsage(60, 80)),
    ]
    assert (await agent.run_turn(ids.xss, XSS_USER)).reason.kind == "completed"

    queue += [
        call("call_l", "lookup", '{"name": "zed"}', usage=TokenUsage(90, 10)),
        text("I could not find **zed**.", usage=TokenUsage(110, 9, cache_write_tokens=64)),
    ]
    assert (await agent.run_turn(ids.tools, "Who is zed?")).reason.kind == "completed"

    queue.append(text("Fine, thanks.", usage=TokenUsage(12, 4)))
    assert (await agent.run_turn(ids.special, "How are you?")).reason.kind == "completed"
    await rig.log.flush()
    return ids


# ---- backends ------------------------------------------------------------------------------

PG_URL = os.environ.get("MODELWIRE_TEST_POSTGRES_URL")


@asynccontextmanager
async def pg_schema_url() -> AsyncIterator[str]:
    """A PostgreSQL URL whose tables live in a fresh schema (dropped after): an isolated log."""
    import psycopg

    assert PG_URL is not None
    schema = f"mwui_{uuid.uuid4().hex[:12]}"
    async with await psycopg.AsyncConnection.connect(PG_URL, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
    joiner = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{joiner}options=-csearch_path%3D{schema}"
    finally:
        async with await psycopg.AsyncConnection.connect(PG_URL, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")


async def open_backend(
    kind: str, tmp_path: Path, clock: Callable[[], int], pg_url: str | None = None
) -> SessionLog:
    """A log of `kind` (memory, sqlite, postgres) writing with `clock`."""
    if kind == "memory":
        return MemoryLog(clock=clock)
    if kind == "sqlite":
        return await SqliteLog.open(f"sqlite:///{tmp_path / 'ui.db'}", clock=clock)
    from modelwire.session.postgres import PostgresLog

    assert pg_url is not None
    return await PostgresLog.open(pg_url, clock=clock)


async def reader_for(
    kind: str, writer: SessionLog, tmp_path: Path, pg_url: str | None
) -> SessionLog:
    """What the inspector opens: the same log object for memory, a second instance otherwise
    (as `modelwire ui` in its own process would)."""
    if kind == "memory":
        return writer
    if kind == "sqlite":
        return await open_log(f"sqlite:///{tmp_path / 'ui.db'}")
    assert pg_url is not None
    return await open_log(pg_url)
