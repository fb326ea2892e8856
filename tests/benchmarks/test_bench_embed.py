"""`benchmarks/bench_embed.py` runs: modelwire's `embed` and the `openai` SDK's
`embeddings.create` against one loopback server, every vector of every call checked (a few small
calls; no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_embed.py"


def test_embed_benchmark_runs_both_clients_and_checks_every_vector() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--vectors",
            "40",
            "--dims",
            "16",
            "--repeats",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert set(rows) == {"modelwire", "modelwire_array", "openai_sdk", "x_sdk_over_modelwire"}
    assert all(value >= 0 for value in rows.values())
