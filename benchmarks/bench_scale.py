"""Scale: many concurrent small streams in one process, every one checked; RSS per stream.

  python benchmarks/bench_scale.py [--streams 10000] [--n 20] [--client mw-deepseek] [--port P]

Starts the local SSE server in its own process (unless `--port` names a running one), then in
this process: opens the client, runs a few streams to warm every cache and pool, measures the
resident set (`/proc/self/statm`) as the idle baseline, starts all `--streams` streams at once
in one event loop (`asyncio.gather`), and checks each result exactly against the server's
`/expected` (text, reasoning, tool call, usage, finish). It prints one line per client with the
peak RSS above idle divided by the streams (`ru_maxrss` is the process peak, so the figure is an
upper bound), and exits 1 if any stream failed or differed. The target (issue 21): zero loss at
10,000 streams and < 8 KiB of peak RSS per concurrent stream above idle.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from clients import load  # noqa: E402
from harness import check, fetch_expected  # noqa: E402

TARGET_KIB = 8.0
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_kib() -> float:
    """The current resident set of this process, KiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 1024


def peak_kib() -> float:
    """The peak resident set of this process so far, KiB."""
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


async def run_client(name: str, port: int, streams: int, n: int, tb: int) -> dict[str, Any]:
    """Warm up, then `streams` concurrent streams of `n` chunks; the figures of one client."""
    client = load(name)
    exp = fetch_expected(port, n, tb)
    await client.setup(f"http://127.0.0.1:{port}/n={n}/tb={tb}")
    tools = tb > 0
    try:
        for r in await asyncio.gather(*(client.stream(tools) for _ in range(20))):
            check(client, r, exp)
        gc.collect()
        idle = rss_kib()
        peak_before = peak_kib()
        c0, w0 = time.process_time(), time.perf_counter()
        results = await asyncio.gather(
            *(client.stream(tools) for _ in range(streams)), return_exceptions=True
        )
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        peak = peak_kib()
        errors = [r for r in results if isinstance(r, BaseException)]
        lost = 0
        for r in results:
            if not isinstance(r, BaseException):
                try:
                    check(client, r, exp)
                except AssertionError:
                    lost += 1
        first = f"{type(errors[0]).__name__}: {errors[0]}" if errors else ""
        del results
    finally:
        await client.close()
    return {
        "client": name,
        "name": client.name,
        "streams": streams,
        "n": n,
        "errors": len(errors),
        "lost": lost,
        "first_error": first[:300],
        "idle_rss_kib": idle,
        "peak_rss_kib": peak,
        "peak_before_kib": peak_before,
        "kib_per_stream": max(0.0, peak - idle) / streams,
        "wall_s": wall,
        "chunks_per_s": streams * n / wall,
        "us_cpu_per_chunk": cpu / (streams * n) * 1e6,
    }


def start_server(out: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The SSE server on a free port (its own process)."""
    port_file = out / "port"
    server = [sys.executable, str(HERE / "sse_server.py"), "--port", "0"]
    proc = subprocess.Popen(
        [*server, "--port-file", str(port_file), "--max-seconds", "900"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if port_file.exists():
            return proc, int(port_file.read_text())
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("the SSE server did not start")


def main() -> int:
    """Command line; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=10_000)
    ap.add_argument("--n", type=int, default=20, help="chunks per stream")
    ap.add_argument("--tb", type=int, default=0, help="tool-argument bytes (0: no tool call)")
    ap.add_argument("--client", default="mw-deepseek", help="comma list of client names")
    ap.add_argument("--port", type=int, default=0, help="a running sse_server.py (0: start one)")
    ap.add_argument("--json", default="", help="also write the figures here")
    ap.add_argument("--one", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = a.streams + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    server = None
    port = a.port
    if not port:
        server, port = start_server(Path(tempfile.mkdtemp(prefix="mw-scale-")))
    if a.one:  # the child: one client in this fresh process, its figures on stdout
        print(json.dumps(asyncio.run(run_client(a.one, port, a.streams, a.n, a.tb))))
        return 0
    rows = []
    try:
        for name in a.client.split(","):  # each in its own process: peak RSS is per process
            cmd = [sys.executable, __file__, "--one", name, "--port", str(port)]
            cmd += ["--streams", str(a.streams), "--n", str(a.n), "--tb", str(a.tb)]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            if p.returncode != 0 or not lines:
                tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
                raise SystemExit(f"{name}: exit {p.returncode}: {tail}")
            rows.append(json.loads(lines[-1]))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
    failed = False
    for r in rows:
        ok = r["errors"] == 0 and r["lost"] == 0
        failed |= not ok
        verdict = "meets" if r["kib_per_stream"] < TARGET_KIB else "MISSES"
        print(
            f"{r['name']}: {r['streams']:,} concurrent streams x {r['n']} chunks: "
            f"{r['errors']} errors, {r['lost']} lost; idle RSS {r['idle_rss_kib'] / 1024:.1f} MiB, "
            f"peak {r['peak_rss_kib'] / 1024:.1f} MiB: {r['kib_per_stream']:.2f} KiB per stream "
            f"above idle ({verdict} the < {TARGET_KIB:g} KiB target); "
            f"{r['chunks_per_s']:,.0f} chunks/s, {r['us_cpu_per_chunk']:.1f} us CPU/chunk"
            + (f"; first error: {r['first_error']}" if r["first_error"] else "")
        )
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
