"""Fixtures for the multi-provider adapter tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from modelwire.wire.http import close_sessions


@pytest.fixture(autouse=True)
async def _close_pooled_sessions() -> AsyncIterator[None]:
    """Close the pooled aiohttp session of each test's loop."""
    yield
    await close_sessions()
