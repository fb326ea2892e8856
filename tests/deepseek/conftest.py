"""Fixtures for the DeepSeek adapter tests (helpers live in `deepseek_helpers`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from deepseek_helpers import Server, start_server

from modelwire.wire.http import close_sessions


@pytest.fixture(autouse=True)
async def _close_pooled_sessions() -> AsyncIterator[None]:
    yield
    await close_sessions()


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    srv = Server()
    runner = await start_server(srv)
    try:
        yield srv
    finally:
        await runner.cleanup()
