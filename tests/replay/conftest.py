"""Fixtures of the replay tests (helpers live in `replay_helpers.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from modelwire.wire.http import close_sessions


@pytest.fixture(autouse=True)
async def _close_pooled_sessions() -> AsyncIterator[None]:
    yield
    await close_sessions()
