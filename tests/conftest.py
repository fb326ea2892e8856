"""Suite-wide hooks: the reliability suite's end-of-run counts, summed over xdist workers; and
`tests/support` (helpers several test folders share) on the import path.

Under `pytest -n N` each worker counts in its own process; it hands its counts to the controller
in `workeroutput`, and the controller prints the sum once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "reliability"))
sys.path.insert(0, str(Path(__file__).parent / "support"))  # helpers shared across test folders
from reliability_counts import COUNTS, FACTS


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker: hand this process's counts to the controller."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["reliability_counts"] = dict(COUNTS)
        output["reliability_facts"] = sorted(FACTS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """On the xdist controller: add a finished worker's counts."""
    output = getattr(node, "workeroutput", {})
    facts = set(output.get("reliability_facts", ()))
    for name, value in output.get("reliability_counts", {}).items():
        COUNTS[name] = max(COUNTS[name], value) if name in facts else COUNTS[name] + value


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
