"""Run every benchmark step against one local SSE server and print/write the Markdown table.

Started by `benchmarks/run` (see there for the options). Each measurement runs in its own
subprocess (`harness.py`), pinned to CPU 1 while the server runs on CPU 0 when the machine has
two cores, so a client's CPU time is its own. Raw figures go to `benchmarks/results/<UTC time>/`
(git-ignored); the full run writes `benchmarks/RESULTS.md`.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import report  # noqa: E402
import streams  # noqa: E402
from clients import CLIENTS  # noqa: E402
from extras import demo_first_output, import_times, machine, other_bench  # noqa: E402
from suite_durable import run_durable_steps  # noqa: E402

FLOORS = ["floor-chat", "floor-responses", "floor-anthropic"]
FLOORS += ["hard-floor-chat", "hard-floor-responses", "hard-floor-anthropic"]
MODELWIRE = [n for n in CLIENTS if n.startswith("mw-")]
PEERS = [n for n in CLIENTS if n not in FLOORS and n not in MODELWIRE]
CONCURRENT_PEERS = ("openai-sdk", "pydantic-ai", "litellm")
IMPORTS = {
    "modelwire": "import modelwire",
    "openai": "import openai",
    "litellm": "import litellm",
    "pydantic_ai": "import pydantic_ai",
}


@dataclass(frozen=True)
class Sizes:
    """How big and how often: the full run and the --quick smoke run."""

    n: int = 2000
    repeat: int = 7
    tool_repeat: int = 5
    conc_streams: int = 1000
    conc_n: int = 200
    conc_peer_streams: int = 1000
    conc_peer_n: int = 30
    peer_repeat: int = 5
    budget_s: float = 540.0  # harness steps start no later than this; imports etc. follow
    big_n: int = 50_000  # 10,000 tool deltas (a fifth of the stream)
    big_tb: int = 1_000_000
    big_repeat: int = 3
    import_runs: int = 7
    peer_import_runs: int = 3
    agent_n: int = 20_000  # the durable path (suite_durable.py)
    agent_repeat: int = 3
    agent_conc: int = 100
    agent_conc_n: int = 2000
    scale_streams: int = 10_000


QUICK = Sizes(
    n=200,
    repeat=5,
    tool_repeat=5,
    conc_streams=50,
    conc_n=40,
    conc_peer_streams=20,
    conc_peer_n=20,
    big_n=2000,
    big_tb=40_000,
    big_repeat=1,
    import_runs=3,
    peer_import_runs=1,
    peer_repeat=5,
    budget_s=120.0,
    agent_n=1000,
    agent_repeat=2,
    agent_conc=10,
    agent_conc_n=100,
    scale_streams=200,
)


@dataclass
class Run:
    """Everything measured in one invocation."""

    out: Path
    py: str
    pin_client: list[str]
    port: int = 0
    budget_s: float = 600.0
    rows: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def harness(self, client: str, *args: str, timeout: float = 300.0) -> dict[str, Any]:
        """Run one harness process; record and return its JSON line (or a failure row)."""
        cmd = [*self.pin_client, self.py, str(HERE / "harness.py"), "--client", client]
        cmd += ["--port", str(self.port), *args]
        t0 = time.monotonic()
        if t0 - self.started > self.budget_s:
            reason = f"skipped: past the {self.budget_s:.0f} s budget of this run"
            row: dict[str, Any] = {"client": client, "available": False, "reason": reason}
            row["args"] = list(args)
            self.rows.append(row)
            print(f"  {client:24s} {' '.join(args):48s} {reason}", file=sys.stderr, flush=True)
            return row
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            row = {
                "client": client,
                "available": True,
                "ok": False,
                "error": f"timed out after {timeout:.0f} s",
            }
        else:
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            if p.returncode == 0 and lines:
                row = json.loads(lines[-1])
                row.setdefault("ok", True)
            else:
                err = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
                row = {"client": client, "available": True, "ok": False, "error": err[:500]}
                with open(self.out / "errors.log", "a") as f:
                    f.write(f"$ {' '.join(cmd)}\n{p.stdout}\n{p.stderr}\n")
        row["args"] = list(args)
        row["elapsed_s"] = time.monotonic() - t0
        if not row.get("ok", True):
            self.failures.append(f"{client} {' '.join(args)}: {row.get('error')}")
        self.rows.append(row)
        with open(self.out / "harness.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        status = (
            "ok"
            if row.get("ok") and row.get("available")
            else (row.get("reason") or row.get("error"))
        )
        us = row.get("us_cpu_per_chunk")
        fig = f"{us:8.2f} us/chunk" if us else ""
        print(f"  {client:24s} {' '.join(args):48s} {fig} {status}", file=sys.stderr, flush=True)
        return row


def start_server(run: Run, pin: list[str]) -> subprocess.Popen[bytes]:
    """Start the SSE server on a free port; bounded wait for it to listen."""
    port_file = run.out / "server.port"
    log = open(run.out / "server.log", "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [
            *pin,
            run.py,
            str(HERE / "sse_server.py"),
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--max-seconds",
            "1800",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if port_file.exists():
            run.port = int(port_file.read_text())
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(
        f"the SSE server did not start: {(run.out / 'server.log').read_text()[-2000:]}"
    )


def _flags(**kw: object) -> list[str]:
    """`n=2000, pair_floor=True` -> `["--n", "2000", "--pair-floor"]`."""
    out: list[str] = []
    for key, val in kw.items():
        flag = "--" + key.replace("_", "-")
        if val is True:
            out.append(flag)
        elif val is not False and val is not None:
            out += [flag, str(val)]
    return out


def run_steps(run: Run, sz: Sizes, clients: list[str], *, quick: bool, profile: bool) -> None:
    """Every harness step, in order (the table is built from `run.rows`)."""
    tb = streams.default_tool_bytes(sz.n)
    say = functools.partial(print, file=sys.stderr, flush=True)
    say(f"== single stream, {sz.n} chunks (text + reasoning)")
    for c in clients:
        rep = sz.peer_repeat if c in PEERS else sz.repeat
        run.harness(c, *_flags(n=sz.n, repeat=rep, warmup=1, pair_floor=True))
    say(f"== single stream, {sz.n} chunks with a tool call ({tb} argument bytes)")
    for c in clients:
        if quick and c in PEERS and c != "openai-sdk":
            continue  # the smoke run keeps under a minute
        run.harness(c, *_flags(n=sz.n, tb=tb, repeat=sz.tool_repeat, warmup=1, pair_floor=True))
    say(f"== a {sz.big_tb:,}-byte tool call in {sz.big_n // 5:,} deltas ({sz.big_n:,} chunks)")
    for c in (c for c in clients if c in ("floor-chat", "mw-deepseek", "openai-sdk")):
        # the floors of this step are paired with each timed stream, the hard floor too
        run.harness(
            c, *_flags(n=sz.big_n, tb=sz.big_tb, repeat=sz.big_repeat, warmup=0, pair_floor=True)
        )
    say("== concurrent streams in one process")
    conc_tb = streams.default_tool_bytes(sz.conc_n)
    for c in (c for c in clients if c in ("hard-floor-chat", "floor-chat", "mw-deepseek")):
        run.harness(
            c,
            *_flags(mode="concurrent", concurrency=sz.conc_streams, n=sz.conc_n, tb=conc_tb),
            *_flags(repeat=1, warmup=1),
        )
    conc_peers = ("hard-floor-chat", "floor-chat", "mw-deepseek")
    conc_peers += () if quick else CONCURRENT_PEERS
    for c in (c for c in clients if c in conc_peers):
        run.harness(
            c,
            *_flags(mode="concurrent", concurrency=sz.conc_peer_streams, n=sz.conc_peer_n),
            *_flags(repeat=1, warmup=0),
        )
    run_durable_steps(run, sz, clients)
    if profile:
        prof = run.out / "profiles"
        prof.mkdir(exist_ok=True)
        for c in (c for c in clients if c in MODELWIRE):
            dest = prof / f"{c}.txt"
            run.harness(c, *_flags(n=sz.n, tb=tb, repeat=3, warmup=1, profile=dest))


def main() -> None:
    """Parse the options, run the steps, print the table, exit 1 on any correctness failure."""
    ap = argparse.ArgumentParser(description="modelwire side-by-side benchmarks")
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, < 60 s")
    ap.add_argument("--no-peers", action="store_true", help="floor + modelwire clients only")
    ap.add_argument("--only", default="", help="comma list of client names (floors always run)")
    ap.add_argument("--profile", action="store_true", help="cProfile the modelwire clients")
    ap.add_argument("--out", default="", help="raw results folder (default results/<UTC time>)")
    ap.add_argument(
        "--results", default="", help="write the Markdown here (full run default: RESULTS.md)"
    )
    a = ap.parse_args()
    sz = QUICK if a.quick else Sizes()
    t_start = time.monotonic()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = (
        Path(a.out)
        if a.out
        else (Path(tempfile.mkdtemp(prefix="mw-bench-")) if a.quick else HERE / "results" / stamp)
    )
    out.mkdir(parents=True, exist_ok=True)
    two = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None
    pin = ["taskset", "-c", "1"] if two else []
    run = Run(out=out, py=sys.executable, pin_client=pin, budget_s=sz.budget_s)
    clients = FLOORS + MODELWIRE + ([] if a.no_peers else PEERS)
    if a.only:
        wanted = set(a.only.split(","))
        clients = [c for c in clients if c in FLOORS or c in wanted]
    mach = machine(run.py)
    server = start_server(run, ["taskset", "-c", "0"] if two else [])
    try:
        print(f"== SSE server on 127.0.0.1:{run.port}; raw results in {out}", file=sys.stderr)
        run_steps(run, sz, clients, quick=a.quick, profile=a.profile or not a.quick)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    print("== import time", file=sys.stderr)
    mods = {"modelwire": IMPORTS["modelwire"]}
    imports = import_times(run, mods, sz.import_runs)
    imports["_demo"] = demo_first_output(run, sz.import_runs)
    if not a.no_peers and not a.quick:
        peer_mods = {k: v for k, v in IMPORTS.items() if k != "modelwire"}
        imports.update(
            {
                k: v
                for k, v in import_times(run, peer_mods, sz.peer_import_runs).items()
                if k != "_interpreter_ms"
            }
        )
    others = []
    if not a.quick:
        print("== sibling benchmarks (assembler, session log, MCP)", file=sys.stderr)
        others = [
            other_bench(run, "bench_assembler.py", 120),
            other_bench(run, "bench_session_log.py", 180),
            other_bench(run, "bench_mcp.py", 180),
        ]
    elapsed = time.monotonic() - t_start
    md = report.render(run.rows, imports, others, mach, sz, elapsed, run.failures, quick=a.quick)
    (out / "table.md").write_text(md)
    results = a.results or ("" if a.quick else str(HERE / "RESULTS.md"))
    if results:
        Path(results).write_text(md)
    print(md)
    if run.failures:
        print("FAILED:\n  " + "\n  ".join(run.failures), file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
