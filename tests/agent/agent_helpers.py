"""Agent-loop test helpers: a scripted adapter on a real `LlmRuntime`, log fixtures, event views."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from modelwire.agent import Agent, RequestErrorContext, Retry
from modelwire.errors import HarnessError
from modelwire.runtime import LlmRuntime
from modelwire.runtime.adapter import LlmAdapter
from modelwire.session import Event, MemoryLog, SessionLog, open_log
from modelwire.session.lease import Decision, LeaseRow
from modelwire.session.log import Row, SessionInfo, StoredRow
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    FinishReason,
    GenerateOptions,
    LlmFailure,
    MaxTokens,
    ModelContext,
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

# ---- scripted adapter ----------------------------------------------------------------------


class Hang:
    """A script item: emit nothing more and block until cancelled (sets `reached` first)."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()


Script = Sequence[StreamChunk | BaseException | Hang]


@dataclass
class ScriptedAdapter(LlmAdapter):
    """Serves one scripted response per `stream()` call and records every request it got."""

    scripts: list[Script] = field(default_factory=list)
    requests: list[GenerateOptions] = field(default_factory=list)
    info: ResolvedModelInfo | None = None
    resolve_error: BaseException | None = None
    on_stream: Callable[[GenerateOptions], None] | None = None

    def queue(self, *scripts: Script) -> None:
        self.scripts.extend(scripts)

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        if self.resolve_error is not None:
            raise self.resolve_error
        if self.info is not None:
            return msgspec.structs.replace(self.info, provider=provider, id=model)
        return ResolvedModelInfo(provider=provider, id=model, name=model)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.requests.append(options)
        if self.on_stream is not None:
            self.on_stream(options)
        if not self.scripts:
            raise HarnessError("scripted adapter exhausted", "UNKNOWN")
        for item in self.scripts.pop(0):
            if isinstance(item, Hang):
                item.reached.set()
                await asyncio.Event().wait()
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
                await asyncio.sleep(0)


def text_script(
    text: str, *, usage: TokenUsage | None = None, reason: FinishReason | None = None
) -> list[StreamChunk]:
    """block-start, one delta per character, block-end, [usage], finish."""
    chunks: list[StreamChunk] = [BlockStart(0, "text")]
    chunks.extend(TextDelta(0, ch) for ch in text)
    chunks.append(BlockEnd(0, TextBlock(text)))
    if usage is not None:
        chunks.append(UsageChunk(usage))
    chunks.append(Finish(reason or Stop()))
    return chunks


def tool_script(call_id: str, name: str, arguments: str, *, text: str = "") -> list[StreamChunk]:
    """Optional text block, then one complete tool call, finish tool-calls."""
    chunks: list[StreamChunk] = []
    index = 0
    if text:
        chunks += [BlockStart(0, "text"), TextDelta(0, text), BlockEnd(0, TextBlock(text))]
        index = 1
    chunks += [
        BlockStart(index, "tool-call"),
        ToolCallDelta(index, call_id, arguments, name=name),
        BlockEnd(index, ToolCallBlock(call_id, name, arguments)),
        Finish(ToolCalls()),
    ]
    return chunks


def error_script(code: str, message: str = "boom", **extra: Any) -> list[StreamChunk]:
    return [Finish(Error(LlmFailure(message, code, **extra)))]


# ---- logs ----------------------------------------------------------------------------------


class FlakyFlushLog(SessionLog):
    """Wraps a real backend; the flush calls numbered in `fail_at` (from 1) raise `LOG_UNAVAILABLE`.

    `trace` records `flush-start`/`flush-end` (and, in subclasses, anything else in order).
    """

    def __init__(self, inner: SessionLog, fail_at: set[int] | None = None) -> None:
        super().__init__()
        self.inner = inner
        self.fail_at = fail_at or set()
        self.flushes = 0
        self.trace: list[str] = []
        self._fences = inner._fences  # the inner log's appends check this instance's fences

    def describe(self) -> str:
        return f"flaky({self.inner.describe()})"

    async def _store(
        self,
        session_id: str,
        rows: Sequence[Row],
        *,
        barrier: bool,
        expect_seq: int | None = None,
    ) -> int:
        return await self.inner._store(session_id, rows, barrier=barrier, expect_seq=expect_seq)

    async def _flush(self) -> None:
        self.flushes += 1
        self.trace.append("flush-start")
        if self.flushes in self.fail_at:
            raise HarnessError("disk on fire", "LOG_UNAVAILABLE")
        await self.inner._flush()
        self.trace.append("flush-end")

    async def _load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        return await self.inner._load(session_id, from_seq, to_seq)

    async def _load_latest(self, session_id: str, type: str) -> StoredRow | None:
        return await self.inner._load_latest(session_id, type)

    async def _exists(self, session_id: str) -> bool:
        return await self.inner._exists(session_id)

    async def _list_sessions(self) -> list[SessionInfo]:
        return await self.inner._list_sessions()

    async def _lease_txn(
        self, session_id: str, decide: Decision
    ) -> tuple[LeaseRow | None, LeaseRow | None]:
        return await self.inner._lease_txn(session_id, decide)

    async def _lease_rows(self) -> list[LeaseRow]:
        return await self.inner._lease_rows()

    async def _fence_changed(self, session_id: str) -> None:
        await self.inner._fence_changed(session_id)

    async def _close(self) -> None:
        await self.inner.close()


def _backend_params() -> list[Any]:
    pg = os.environ.get("MODELWIRE_TEST_POSTGRES_URL")
    return [
        "memory",
        "sqlite",
        pytest.param(
            "postgres",
            marks=[
                pytest.mark.postgres,
                pytest.mark.skipif(not pg, reason="MODELWIRE_TEST_POSTGRES_URL is not set"),
            ],
        ),
    ]


@pytest.fixture(params=_backend_params())
async def log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionLog]:
    """A real session log on each backend: memory, SQLite (tmp file), PostgreSQL (when configured)."""
    kind = request.param
    if kind == "memory":
        opened: SessionLog = MemoryLog()
    elif kind == "sqlite":
        opened = await open_log(f"sqlite:///{tmp_path / 'agent-log.db'}")
    else:
        opened = await open_log(os.environ["MODELWIRE_TEST_POSTGRES_URL"])
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def sid() -> str:
    """A unique session id (PostgreSQL databases are shared between tests)."""
    return f"test-{uuid.uuid4()}"


# ---- agent helpers -------------------------------------------------------------------------


@dataclass
class Rig:
    runtime: LlmRuntime
    adapter: ScriptedAdapter
    log: SessionLog

    def agent(self, **kwargs: Any) -> Agent:
        kwargs.setdefault("provider", "scripted")
        kwargs.setdefault("model", "m1")
        return Agent(runtime=self.runtime, log=self.log, **kwargs)


@pytest.fixture
def rig() -> Rig:
    runtime = LlmRuntime()
    adapter = ScriptedAdapter()
    runtime.register_adapter(["scripted"], adapter)
    return Rig(runtime, adapter, MemoryLog())


def types(events: Sequence[Event]) -> list[str]:
    return [e.type for e in events]


def of_type(events: Sequence[Event], name: str) -> list[Any]:
    return [e.data for e in events if e.type == name]


class RetryTimes:
    """A test plugin: returns `Retry()` for the first `times` failures, then delegates."""

    def __init__(self, times: int = 1) -> None:
        self.times = times
        self.calls: list[RequestErrorContext] = []

    def install(self, agent: Agent) -> Callable[[], None]:
        async def listener(
            ctx: RequestErrorContext, call_next: Callable[[], Awaitable[Retry | None]]
        ) -> Retry | None:
            self.calls.append(ctx)
            if self.times > 0:
                self.times -= 1
                return Retry()
            return await call_next()

        return agent.hooks.on_request_error.add(listener)


def attempt_groups(events: Sequence[Event]) -> list[tuple[int, int, int]]:
    """(turn, step, attempt) of each provider call, in order of its first logged chunk."""
    seen: list[tuple[int, int, int]] = []
    for e in events:
        if e.type == "assistant/chunk":
            key = (e.data.turn, e.data.step, e.data.attempt)
            if key not in seen:
                seen.append(key)
    return seen


__all__ = [
    "BlockEnd",
    "BlockStart",
    "FlakyFlushLog",
    "Hang",
    "MaxTokens",
    "ModelContext",
    "ReasoningDelta",
    "RetryTimes",
    "Rig",
    "ScriptedAdapter",
    "TextDelta",
    "UsageChunk",
    "attempt_groups",
    "error_script",
    "of_type",
    "text_script",
    "tool_script",
    "types",
]
