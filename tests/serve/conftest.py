"""Fixtures of the gateway tests: the scripted upstreams of `tests/providers` on the path."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "providers"))

from modelwire.wire.http import close_sessions


@pytest.fixture(autouse=True)
async def _close_pooled_sessions() -> AsyncIterator[None]:
    """Close the pooled aiohttp session of each test's loop."""
    yield
    await close_sessions()
