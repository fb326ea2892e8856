"""Shared helpers of the session-log backend tests: backends, PostgreSQL schemas, child processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from modelwire.session import SessionLog, open_log
from modelwire.session.events import Event
from modelwire.session.postgres import PostgresLog
from modelwire.session.sqlite import SqliteLog

PG_ENV = "MODELWIRE_TEST_POSTGRES_URL"
PG_SKIP = f"{PG_ENV} is not set (no PostgreSQL server to test against)"
SRC = Path(__file__).resolve().parents[2] / "src"


def pg_url() -> str | None:
    """The PostgreSQL test server URL, if configured."""
    return os.environ.get(PG_ENV) or None


def backend_params(*, memory: bool = True) -> list[object]:
    """`memory`, `sqlite` and `postgres` (skipped without a server) as pytest params."""
    params: list[object] = ["memory"] if memory else []
    params.append("sqlite")
    params.append(
        pytest.param(
            "postgres",
            marks=[pytest.mark.postgres, pytest.mark.skipif(pg_url() is None, reason=PG_SKIP)],
        )
    )
    return params


def with_search_path(url: str, schema: str) -> str:
    """`url` with libpq `options` selecting `schema` as the search path."""
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-csearch_path%3D{schema}"


async def create_schema(url: str) -> str:
    """Create a fresh, uniquely named schema on the test server; returns its name."""
    import psycopg

    name = f"mwtest_{uuid.uuid4().hex[:16]}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {name}")
    return name


async def drop_schema(url: str, name: str) -> None:
    """Drop a schema made by `create_schema`, with everything in it."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@dataclass
class Store:
    """One backend store for a test: `open()` returns a new log instance on the same data."""

    kind: str
    url: str
    opened: list[SessionLog] = field(default_factory=list)
    _memory: SessionLog | None = None

    @property
    def durable(self) -> bool:
        """False for the in-memory backend (nothing survives a close)."""
        return self.kind != "memory"

    async def open(self, **options: object) -> SessionLog:
        """A new log on this store (`memory` returns its single instance)."""
        if self.kind == "memory":
            if self._memory is None:
                self._memory = await open_log("memory:")
                self.opened.append(self._memory)
            return self._memory
        log: SessionLog
        if self.kind == "sqlite":
            log = await SqliteLog.open(self.url, **options)  # type: ignore[arg-type]
        elif options:
            log = await PostgresLog.open(self.url, **options)  # type: ignore[arg-type]
        else:
            log = await open_log(self.url)
        self.opened.append(log)
        return log

    async def close_all(self) -> None:
        """Close every log this store opened (idempotent)."""
        for log in self.opened:
            with contextlib.suppress(Exception):
                await log.close()


async def make_store(kind: str, tmp_path: Path) -> AsyncIterator[Store]:
    """Yield a `Store` of `kind` isolated for one test, then close it and clean up."""
    schema: str | None = None
    base = pg_url()
    if kind == "memory":
        store = Store(kind, "memory:")
    elif kind == "sqlite":
        store = Store(kind, f"sqlite:///{tmp_path / 'log.db'}")
    else:
        assert base is not None
        schema = await create_schema(base)
        store = Store(kind, with_search_path(base, schema))
    try:
        yield store
    finally:
        await store.close_all()
        if schema is not None and base is not None:
            await drop_schema(base, schema)


def assert_contiguous(events: list[Event], start: int = 0) -> None:
    """Seqs run `start, start + 1, ...` with no gap or repeat."""
    assert [e.seq for e in events] == list(range(start, start + len(events)))


async def run_child(code: str, *args: str) -> tuple[int, str, str]:
    """Run `python -c code args...` with `src` importable; returns (returncode, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def gather_all(*jobs: Awaitable[object]) -> list[object]:
    """`asyncio.gather` that fails on the first error."""
    return list(await asyncio.gather(*jobs))


Opener = Callable[..., Awaitable[SessionLog]]


WRITER_CHILD = r"""
import asyncio, sys
from modelwire.session import open_log, AssistantChunk
from modelwire.vocab import TextDelta

async def main(url, sid, tag, count):
    log = await open_log(url)
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    for i in range(int(count)):
        await log.append(sid, AssistantChunk(1, 1, 1, TextDelta(0, f"{tag}-{i}")))
        if i % 10 == 9:
            await log.flush()
    await log.close()
    print("done", flush=True)

asyncio.run(main(*sys.argv[1:]))
"""


async def run_writers_together(url: str, writers: list[tuple[str, str]], count: int) -> None:
    """Start one writer process per `(session id, tag)`, release them at once, wait for all.

    Each writer appends `count` chunks with texts `<tag>-0`, `<tag>-1`, ... and flushes every 10.
    """
    env = dict(os.environ, PYTHONPATH=str(SRC))
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WRITER_CHILD,
            url,
            sid,
            tag,
            str(count),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        for sid, tag in writers
    ]
    for proc in procs:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        if line.strip() != b"ready":
            _, err = await proc.communicate()
            raise AssertionError(f"writer did not start: {line!r} {err.decode()}")
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        await proc.stdin.drain()
    for proc in procs:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        assert out.strip() == b"done"
