"""The product path: `Agent.run_turn` over the DeepSeek adapter, every chunk into a session log.

One turn per timed stream, each in a fresh session (so every stream measures the same work: the
turn's request facts and checkpoint flush, every chunk appended, the assistant message, the
turn's end and flush, and the turn's read-back that builds `TurnResult.messages`). With the tool
stream the agent carries a `get_weather` tool and `max_steps=1`: the step's tool call is run and
answered once, then the turn ends at its step limit (no second model call).

Logs: `memory:`, SQLite (a file in a temporary directory, the default durable backend) and
PostgreSQL (a temporary schema on `$MODELWIRE_BENCH_POSTGRES_URL`, else
`$MODELWIRE_TEST_POSTGRES_URL`; "not available" without one). After the timed streams `close()`
reads every session back and checks it: contiguous seqs, one `assistant/chunk` per streamed
chunk, cited exactly by the assistant message, reassembling to the same text. A log that loses or
reorders a chunk fails the run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from typing import Any

from .common import (
    API_KEY,
    MODEL,
    PROMPT,
    TOOL_DESCRIPTION,
    TOOL_SCHEMA,
    Client,
    Result,
    Unavailable,
)
from .mw import _get, _usage, _version

PG_ENVS = ("MODELWIRE_BENCH_POSTGRES_URL", "MODELWIRE_TEST_POSTGRES_URL")


def pg_url() -> str | None:
    """The PostgreSQL server the benchmarks may use, if any."""
    return next((os.environ[e] for e in PG_ENVS if os.environ.get(e)), None)


def _weather(args: dict[str, Any]) -> str:
    return "sunny, 21 degrees"


class _AgentClient(Client):
    kind = "modelwire"
    checks_usage = True
    proto = "chat"
    backend = "?"

    def __init__(self) -> None:
        self.LlmRuntime = _get("modelwire", "LlmRuntime")
        self.Adapter = _get("modelwire.adapters.deepseek", "DeepSeekAdapter")
        self.Agent = _get("modelwire.agent", "Agent")
        self.Tool = _get("modelwire.agent", "Tool")
        self.open_log = _get("modelwire.session", "open_log")
        mw = __import__("modelwire")
        self.blocks = (mw.TextBlock, mw.ReasoningBlock, mw.ToolCallBlock)
        self.sessions: list[str] = []
        self.tag = uuid.uuid4().hex[:8]
        self.log: Any = None
        self.flushes: list[float] = []

    def version(self) -> str:
        return _version()

    async def open(self) -> Any:
        """Open the session log of this client."""
        raise NotImplementedError

    def extra(self) -> dict[str, Any]:
        """Durable flush latencies seen by the turns (the checkpoint before each model call and
        the turn's end), wall ms: median and p95 (`harness.py` merges this into its line)."""
        f = sorted(self.flushes)
        if not f:
            return {}
        return {
            "flush_ms_median": f[len(f) // 2] * 1e3,
            "flush_ms_p95": f[min(len(f) - 1, int(len(f) * 0.95))] * 1e3,
            "flushes": len(f),
            "backend": self.backend,
        }

    def _time_flushes(self, log: Any) -> None:
        """Wrap `log.flush` (this instance only) to record each durable barrier's wall time."""
        inner = log.flush
        flushes = self.flushes

        async def flush() -> None:
            t0 = time.perf_counter()
            await inner()
            flushes.append(time.perf_counter() - t0)

        log.flush = flush

    async def setup(self, base_url: str) -> None:
        self.rt = self.LlmRuntime()
        adapter = self.Adapter(api_key=API_KEY, base_url=base_url)
        self.registration = self.rt.register_adapter(["deepseek"], adapter)
        self.log = await self.open()
        self._time_flushes(self.log)
        tool = self.Tool("get_weather", TOOL_DESCRIPTION, TOOL_SCHEMA, _weather)
        self.agents = {
            False: self.Agent(self.rt, self.log, "deepseek", MODEL, max_steps=1),
            True: self.Agent(self.rt, self.log, "deepseek", MODEL, tools=[tool], max_steps=1),
        }

    async def stream(self, tools: bool) -> Result:
        sid = f"bench-{self.tag}-{len(self.sessions)}"
        self.sessions.append(sid)
        res = await self.agents[tools].run_turn(sid, PROMPT)
        kind = res.reason.kind
        if kind not in ("completed", "limit"):
            failure = res.failure
            raise AssertionError(f"agent turn ended {kind}: {failure}")
        answer = next(m for m in res.messages if m.role == "assistant")
        event = await self.log.latest(sid, "assistant/message")
        text_t, reasoning_t, call_t = self.blocks
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, str]] = []
        for b in answer.content:
            if isinstance(b, text_t):
                text.append(b.text)
            elif isinstance(b, reasoning_t):
                reasoning.append(b.text)
            elif isinstance(b, call_t):
                calls.append({"id": b.id, "name": b.name, "arguments": b.arguments})
        finish = "tool-calls" if calls else "stop"
        return Result("".join(text), "".join(reasoning), calls, _usage(event.data.usage), finish)

    async def verify(self) -> None:
        """Every session read back: contiguous seqs, chunks cited exactly, same text."""
        for sid in self.sessions:
            events = await self.log.read(sid)
            if [e.seq for e in events] != list(range(len(events))):
                raise AssertionError(f"{self.name}: session {sid} has a seq gap")
            chunks = [e for e in events if e.type == "assistant/chunk"]
            msg = next(e for e in events if e.type == "assistant/message").data
            if tuple(e.seq for e in chunks) != msg.source_event_seqs:
                raise AssertionError(f"{self.name}: {sid}: the message does not cite its chunks")
            streamed = "".join(getattr(e.data.chunk, "text", "") for e in chunks)
            kept = "".join(getattr(b, "text", "") for b in msg.message.content)
            if streamed != kept:
                raise AssertionError(f"{self.name}: {sid}: logged chunks differ from the message")

    async def close(self) -> None:
        try:
            if self.log is not None:
                await self.verify()
                for agent in self.agents.values():
                    await agent.close()
                await self.log.close()
        finally:
            self.registration()
            from modelwire.wire.http import close_sessions

            await close_sessions()
            await self.cleanup()

    async def cleanup(self) -> None:
        """Remove what `open` created."""


class AgentMemory(_AgentClient):
    """`Agent.run_turn` with a `memory:` log."""

    name = "modelwire Agent.run_turn, memory: log"
    backend = "memory"

    async def open(self) -> Any:
        return await self.open_log("memory:")


class AgentSqlite(_AgentClient):
    """`Agent.run_turn` with a SQLite log (the default durable backend)."""

    name = "modelwire Agent.run_turn, SQLite log"
    backend = "sqlite"

    async def open(self) -> Any:
        self.tmp = tempfile.mkdtemp(prefix="mw-bench-agent-")
        return await self.open_log(f"sqlite:///{self.tmp}/sessions.db")

    async def cleanup(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


class AgentPostgres(_AgentClient):
    """`Agent.run_turn` with a PostgreSQL log (a temporary schema, dropped afterwards)."""

    name = "modelwire Agent.run_turn, PostgreSQL log"
    backend = "postgres"

    def __init__(self) -> None:
        super().__init__()
        base = pg_url()
        if base is None:
            raise Unavailable(f"no PostgreSQL server (set {PG_ENVS[0]} or {PG_ENVS[1]})")
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise Unavailable(f"psycopg is not installed ({exc})") from exc
        self.base = base
        self.schema = f"mwbench_{uuid.uuid4().hex[:12]}"

    async def open(self) -> Any:
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.base, autocommit=True) as conn:
            await conn.execute(f"CREATE SCHEMA {self.schema}")
        joiner = "&" if "?" in self.base else "?"
        return await self.open_log(f"{self.base}{joiner}options=-csearch_path%3D{self.schema}")

    async def cleanup(self) -> None:
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.base, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
