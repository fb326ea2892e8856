"""Fixtures of the inspector tests (helpers: `ui_logs.py`, `ui_serving.py`, `cdp.py`, `png.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from ui_serving import backend, built

from modelwire.wire.http import close_sessions

__all__ = ["backend", "built"]


@pytest.fixture(autouse=True)
async def _close_pooled_sessions() -> AsyncIterator[None]:
    yield
    await close_sessions()
