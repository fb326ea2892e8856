"""`benchmarks/bench_gateway.py` runs: the upstream, the pass-through and `modelwire serve` on
SQLite (with the admin key and with a virtual key with limits) and the adapter path all answer
every request exactly (a few requests; no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_gateway.py"


def test_gateway_benchmark_checks_every_answer_of_every_target() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--requests",
            "20",
            "--rps",
            "50",
            "--concurrency",
            "5",
            "--key",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert set(rows) == {
        "direct",
        "passthrough",
        "modelwire-sqlite",
        "modelwire-sqlite+key",
        "adapter",
    }
    for row in rows.values():
        assert row["n"] == 20 and row["p50_ms"] > 0
