"""Serving test logs: the `built` and `backend` fixtures and what they yield."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from ui_logs import (
    PG_URL,
    FakeClock,
    Rig,
    Sessions,
    build_sessions,
    open_backend,
    pg_schema_url,
    reader_for,
    rig_for,
)

from modelwire.session import MemoryLog, SessionLog
from modelwire.ui import create_app

POLL = 0.02
"""The live streams' poll interval in tests (seconds)."""


@dataclass
class Built:
    """A served log holding the `build_sessions` sessions."""

    client: TestClient
    ids: Sessions
    rig: Rig
    log: SessionLog

    async def json(self, path: str, status: int = 200, **params: object) -> object:
        response = await self.client.get(path, params={k: str(v) for k, v in params.items()})
        assert response.status == status, await response.text()
        assert response.content_type == "application/json"
        return await response.json()


@pytest.fixture
async def built() -> AsyncIterator[Built]:
    clock = FakeClock()
    log = MemoryLog(clock=clock)
    rig = rig_for(log, clock)
    ids = await build_sessions(rig)
    async with TestClient(TestServer(create_app(log, poll_interval=POLL))) as client:
        yield Built(client, ids, rig, log)


def _backends() -> list[object]:
    return [
        "memory",
        "sqlite",
        pytest.param(
            "postgres",
            marks=[
                pytest.mark.postgres,
                pytest.mark.skipif(not PG_URL, reason="MODELWIRE_TEST_POSTGRES_URL is not set"),
            ],
        ),
    ]


@dataclass
class Backend:
    """A writer log (the agent's) and a reader log (the inspector's) over one store."""

    kind: str
    writer: SessionLog
    reader: SessionLog
    rig: Rig


@pytest.fixture(params=_backends())
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    kind = request.param
    clock = FakeClock()
    if kind == "postgres":
        async with pg_schema_url() as url:
            writer = await open_backend(kind, tmp_path, clock, url)
            reader = await reader_for(kind, writer, tmp_path, url)
            try:
                yield Backend(kind, writer, reader, rig_for(writer, clock))
            finally:
                await reader.close()
                await writer.close()
        return
    writer = await open_backend(kind, tmp_path, clock)
    reader = await reader_for(kind, writer, tmp_path, None)
    try:
        yield Backend(kind, writer, reader, rig_for(writer, clock))
    finally:
        if reader is not writer:
            await reader.close()
        await writer.close()


__all__ = ["POLL", "Backend", "Built", "backend", "built"]
