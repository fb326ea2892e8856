"""`benchmarks/bench_native.py` runs and every native protocol's stream reassembles exactly
(tiny streams; no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_native.py"


def test_native_protocol_benchmark_reassembles_every_stream() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--n", "40", "--repeats", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert set(rows) == {"chat", "gemini", "bedrock", "mistral", "azure-chat"}
    assert all(value > 0 for value in rows.values())
