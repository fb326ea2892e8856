"""Retry-plugin test helpers: a scripted adapter with a policy, a recording sleep, log fixtures."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from modelwire.agent import Agent, RequestErrorContext, Retry
from modelwire.errors import HarnessError
from modelwire.policy import RetryPolicy, resolve_retry_policy
from modelwire.retry import RetryInvariantChecker, RetryPlugin
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
    GenerateOptions,
    LlmFailure,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
)

NextRetry = Callable[[], Awaitable[Retry | None]]
Script = Sequence[StreamChunk | BaseException]


@dataclass
class ScriptedAdapter(LlmAdapter):
    """Serves one scripted response per `stream()` call, records requests, exposes a policy."""

    policy: RetryPolicy | None = None
    scripts: list[Script] = field(default_factory=list)
    requests: list[GenerateOptions] = field(default_factory=list)

    def queue(self, *scripts: Script) -> None:
        self.scripts.extend(scripts)

    def provider_retry_policy(self, provider: str) -> RetryPolicy | None:
        return self.policy

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.requests.append(options)
        if not self.scripts:
            raise HarnessError("scripted adapter exhausted", "UNKNOWN")
        for item in self.scripts.pop(0):
            if isinstance(item, BaseException):
                raise item
            yield item
            await asyncio.sleep(0)


def policy(**config: Any) -> RetryPolicy:
    """A resolved policy from snake_case keys (`initial`/`max`/`jitter` go under `backoff`)."""
    backoff = {}
    for short, key in (
        ("initial", "initial_delay_ms"),
        ("max", "max_delay_ms"),
        ("jitter", "jitter_ratio"),
    ):
        if short in config:
            backoff[key] = config.pop(short)
    if backoff:
        config["backoff"] = backoff
    config.setdefault("mode", "normal")
    return resolve_retry_policy(config, "test")


def text(answer: str) -> list[StreamChunk]:
    return [
        BlockStart(0, "text"),
        TextDelta(0, answer),
        BlockEnd(0, TextBlock(answer)),
        Finish(Stop()),
    ]


def fail(code: str, message: str = "boom", **extra: Any) -> list[StreamChunk]:
    return [Finish(Error(LlmFailure(message, code, **extra)))]


class RecordingSleep:
    """An injected `sleep`: records each delay (seconds) and what the adapter had seen by then."""

    def __init__(self, adapter: ScriptedAdapter | None = None, *, real: bool = False) -> None:
        self.adapter = adapter
        self.real = real
        self.delays: list[float] = []
        self.requests_seen: list[int] = []
        self.entered = asyncio.Event()
        self.hook: Callable[[], object] | None = None

    @property
    def delays_ms(self) -> list[float]:
        return [round(d * 1000, 6) for d in self.delays]

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        if self.adapter is not None:
            self.requests_seen.append(len(self.adapter.requests))
        self.entered.set()
        if self.hook is not None:
            result = self.hook()
            if asyncio.iscoroutine(result):
                await result
        await asyncio.sleep(seconds if self.real else 0)


class FakeTime:
    """An injected clock (epoch ms, `FakeTime()`) and sleep (`.sleep(seconds)`) for the agent.

    `sleep` records each delay, advances the clock by it and yields once: nothing waits in real
    time. With `hold` set it blocks after recording (until cancelled); `entered` is set then.
    """

    def __init__(self, now_ms: int = 1_767_225_600_000, *, hold: bool = False) -> None:
        self.now_ms = now_ms
        self.hold = hold
        self.slept: list[float] = []
        self.entered = asyncio.Event()

    def __call__(self) -> int:
        return self.now_ms

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.entered.set()
        if self.hold:
            await asyncio.Event().wait()
        self.now_ms += round(seconds * 1000)
        await asyncio.sleep(0)


class Samples:
    """A jitter source returning the given samples in turn (the last one repeats)."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def __call__(self) -> float:
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]


@dataclass
class Rig:
    runtime: LlmRuntime
    adapter: ScriptedAdapter
    log: SessionLog
    sleep: RecordingSleep
    registration: Callable[[], None]

    def agent(self, *, plugin: RetryPlugin | None = None, **kwargs: Any) -> Agent:
        kwargs.setdefault("provider", "mock")
        kwargs.setdefault("model", "m1")
        plugins = list(kwargs.pop("plugins", []))
        if plugin is not None:
            plugins.insert(0, plugin)
        return Agent(runtime=self.runtime, log=self.log, plugins=plugins, **kwargs)

    def plugin(self, *samples: float) -> RetryPlugin:
        return RetryPlugin(random=Samples(*(samples or (0.5,))), sleep=self.sleep)


def make_rig(adapter_policy: RetryPolicy | None = None, log: SessionLog | None = None) -> Rig:
    runtime = LlmRuntime()
    adapter = ScriptedAdapter(policy=adapter_policy)
    registration = runtime.register_adapter(["mock"], adapter)
    return Rig(runtime, adapter, log or MemoryLog(), RecordingSleep(adapter), registration)


def of_type(events: Sequence[Event], name: str) -> list[Any]:
    return [e.data for e in events if e.type == name]


def types(events: Sequence[Event]) -> list[str]:
    return [e.type for e in events]


def check_invariants(events: Sequence[Event]) -> None:
    """Every log a retry test produces must satisfy the retry invariants (C22–C25)."""
    RetryInvariantChecker.from_events(events)
    assert [e.seq for e in events] == list(range(len(events)))


def other_tasks() -> set[asyncio.Task[Any]]:
    """Pending tasks other than the current one (the "no timers left" check)."""
    current = asyncio.current_task()
    return {t for t in asyncio.all_tasks() if t is not current and not t.done()}


class Downstream:
    """A later `on_request_error` listener controlled by the test."""

    def __init__(self, result: Retry | None = None, *, error: BaseException | None = None) -> None:
        self.result = result
        self.error = error
        self.calls: list[RequestErrorContext] = []
        self.release: asyncio.Event | None = None
        self.entered = asyncio.Event()
        self.before: Callable[[RequestErrorContext], object] | None = None

    async def __call__(self, ctx: RequestErrorContext, call_next: NextRetry) -> Retry | None:
        self.calls.append(ctx)
        self.entered.set()
        if self.before is not None:
            self.before(ctx)
        if self.release is not None:
            await self.release.wait()
        if self.error is not None:
            raise self.error
        return self.result


class TraceLog(SessionLog):
    """Wraps a real log; `on_append(type)` runs synchronously as each row is stored."""

    def __init__(self, inner: SessionLog) -> None:
        super().__init__()
        self.inner = inner
        self.on_append: Callable[[str], None] | None = None
        self._fences = inner._fences  # the inner log's appends check this instance's fences

    async def _store(
        self,
        session_id: str,
        rows: Sequence[Row],
        *,
        barrier: bool,
        expect_seq: int | None = None,
    ) -> int:
        first = await self.inner._store(session_id, rows, barrier=barrier, expect_seq=expect_seq)
        if self.on_append is not None:
            for name, _, _ in rows:
                self.on_append(name)
        return first

    async def _flush(self) -> None:
        await self.inner._flush()

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


# ---- durable-log fixtures ------------------------------------------------------------------

POSTGRES_URL = os.environ.get("MODELWIRE_TEST_POSTGRES_URL")


def durable_params(*, memory: bool = False) -> list[Any]:
    params: list[Any] = ["memory"] if memory else []
    params += [
        "sqlite",
        pytest.param(
            "postgres",
            marks=[
                pytest.mark.postgres,
                pytest.mark.skipif(
                    not POSTGRES_URL, reason="MODELWIRE_TEST_POSTGRES_URL is not set"
                ),
            ],
        ),
    ]
    return params


def log_url(kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return "memory:"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'retry-log.db'}"
    assert POSTGRES_URL
    return POSTGRES_URL


@pytest.fixture(params=durable_params(memory=True))
async def any_log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionLog]:
    """A real session log on memory, SQLite and (when configured) PostgreSQL."""
    opened = await open_log(log_url(request.param, tmp_path))
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def sid() -> str:
    """A unique session id (PostgreSQL databases are shared between tests)."""
    return f"retry-{uuid.uuid4()}"
