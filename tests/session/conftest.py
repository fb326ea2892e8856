"""Fixtures of the session-log backend tests (helpers live in `session_helpers.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from session_helpers import Store, backend_params, make_store


@pytest.fixture(params=backend_params())
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """An isolated store on each backend: memory, SQLite (tmp file), PostgreSQL (own schema)."""
    async for opened in make_store(request.param, tmp_path):
        yield opened


@pytest.fixture(params=backend_params(memory=False))
async def durable_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """An isolated durable store: SQLite (tmp file) or PostgreSQL (own schema)."""
    async for opened in make_store(request.param, tmp_path):
        yield opened
