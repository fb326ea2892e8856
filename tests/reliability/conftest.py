"""Reliability suite fixtures: the fault server, pooled-session cleanup, DEBUG log capture with a
secret scan of every record, and the end-of-run counts (`pytest_terminal_summary`)."""

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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print what the reliability suite exercised (quoted in the issue notes)."""
    if not COUNTS:
        return
    tr = terminalreporter
    tr.section("reliability counts")
    order = (
        "fault scenarios",
        "adapters",
        "scenario runs (scenarios x adapters)",
        "type-mutation streams",
        "fuzz examples",
        "kill trials",
        "kills during retry backoff",
        "resumed turns",
        "concurrent turns",
        "sessions",
        "memory growth after load (KiB)",
        "cli runs",
        "log events scanned",
        "log records scanned",
        "secret scans",
    )
    for name in order:
        if name in COUNTS:
            tr.write_line(f"{name}: {COUNTS[name]}")
    for name, value in sorted(COUNTS.items()):
        if name not in order:
            tr.write_line(f"{name}: {value}")
