"""Scaled-down scale run: 1,000 concurrent small streams in one process, none lost.

`benchmarks/bench_scale.py` (10,000 streams in the full benchmark run) starts the local SSE
server, opens 1,000 streams at once through the DeepSeek adapter, through the hard floor and
through the asyncio floor (a bare protocol that counts the bytes), each in its own process, and
checks every stream exactly; all 1,000 are in flight at once. No timing or memory is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_scale_completes_a_thousand_concurrent_streams_without_loss(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    script = str(ROOT / "benchmarks" / "bench_scale.py")
    clients = "mw-deepseek,hard-floor-chat,asyncio-floor"
    p = subprocess.run(
        [sys.executable, script, "--streams", "1000", "--client", clients, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=170,
        cwd=str(ROOT),
    )
    assert p.returncode == 0, p.stderr[-3000:] + p.stdout[-2000:]
    rows = json.loads(out.read_text())
    assert [r["client"] for r in rows] == ["mw-deepseek", "hard-floor-chat", "asyncio-floor"]
    for r in rows:
        assert (r["streams"], r["errors"], r["lost"], r["max_inflight"]) == (1000, 0, 0, 1000), r
