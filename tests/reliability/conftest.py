"""Reliability suite fixtures: the fault server, pooled-session cleanup, DEBUG log capture with a
secret scan of every record (the end-of-run counts are printed by `tests/conftest.py`)."""

from __future__ import annotations

import logging
import traceback
from collections.abc import AsyncIterator, Iterator

import pytest
from reliability_counts import COUNTS, assert_no_secret
from reliability_server import FaultServer

from modelwire.wire.http import close_sessions


@pytest.fixture(autouse=True)
def _scan_log_records(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Capture every `logging` record at DEBUG; none may carry a secret."""
    caplog.set_level(logging.DEBUG)
    yield
    records = [*caplog.get_records("setup"), *caplog.get_records("call"), *caplog.records]
    for record in records:
        parts = [record.getMessage()]
        if record.exc_info and record.exc_info[1] is not None:
            parts.append("".join(traceback.format_exception(record.exc_info[1])))
        assert_no_secret("\n".join(parts), f"log record {record.name}")
        COUNTS["log records scanned"] += 1


@pytest.fixture(autouse=True)
async def _close_pooled_sessions() -> AsyncIterator[None]:
    yield
    await close_sessions()


@pytest.fixture
async def server() -> AsyncIterator[FaultServer]:
    srv = FaultServer()
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()
