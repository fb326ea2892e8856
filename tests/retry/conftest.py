"""Fixtures of the retry-plugin tests (the helpers live in `retry_helpers.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from retry_helpers import any_log, sid

from modelwire.wire.http import close_sessions

__all__ = ["any_log", "sid"]


@pytest.fixture(autouse=True)
async def _close_pooled_sessions() -> AsyncIterator[None]:
    yield
    await close_sessions()
