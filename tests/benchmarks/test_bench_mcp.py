"""`benchmarks/bench_mcp.py` runs: an MCP tool call over stdio and over HTTP through the agent's
tool path, every answer checked (a few calls; no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_mcp.py"


def test_mcp_benchmark_runs_both_transports_and_checks_every_answer() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--calls", "10", "--repeats", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert set(rows) == {"stdio", "http"}
    for row in rows.values():
        assert row["plain"] > 0 and row["sdk"] > 0 and row["mcp"] > 0
