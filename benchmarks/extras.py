"""Measurements beside the streams: import time, the sibling benchmarks, the machine."""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any, Protocol

HERE = Path(__file__).resolve().parent


class RunLike(Protocol):
    """What these helpers need from the suite's `Run`."""

    py: str
    pin_client: list[str]
    failures: list[str]


def _child_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def import_times(run: RunLike, modules: dict[str, str], runs: int) -> dict[str, Any]:
    """`python -X importtime` cumulative time of each top module, and the whole process's wall
    and CPU time (min and median over `runs`; contention on a shared VM only ever adds time)."""
    out: dict[str, Any] = {}
    base_walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([run.py, "-c", "pass"], check=True)
        base_walls.append(time.perf_counter() - t0)
    out["_interpreter_ms"] = min(base_walls) * 1000
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    for name, stmt in modules.items():
        top = stmt.split()[1].split(".")[0]
        cums: list[float] = []
        walls: list[float] = []
        cpus: list[float] = []
        for _ in range(runs):
            c0, t0 = _child_cpu(), time.perf_counter()
            p = subprocess.run(
                [run.py, "-X", "importtime", "-c", stmt],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            walls.append(time.perf_counter() - t0)
            cpus.append(_child_cpu() - c0)
            if p.returncode != 0:
                cums = []
                out[name] = {"available": False, "reason": p.stderr.strip().splitlines()[-1][:200]}
                break
            for ln in p.stderr.splitlines():
                m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s?(\S+)$", ln)
                if m and m.group(2) == top:
                    cums.append(int(m.group(1)) / 1000)
        if cums:
            out[name] = {
                "available": True,
                "importtime_min_ms": min(cums),
                "importtime_ms": statistics.median(cums),
                "process_wall_ms": statistics.median(walls) * 1000,
                "process_cpu_ms": statistics.median(cpus) * 1000,
                "runs": runs,
            }
    return out


def demo_first_output(run: RunLike, runs: int) -> dict[str, Any]:
    """Wall time from starting `python -m modelwire.cli demo --log memory: --delay-ms 0` to its
    first line of output (DESIGN §6: within 1 s), min and median over `runs`."""
    times: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [run.py, "-m", "modelwire.cli", "demo", "--log", "memory:", "--delay-ms", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()
        times.append(time.perf_counter() - t0)
        proc.communicate(timeout=120)
        if proc.returncode != 0 or not first:
            run.failures.append(f"demo: exit {proc.returncode}, first line {first[:80]!r}")
            return {"available": False}
    return {
        "available": True,
        "first_output_min_ms": min(times) * 1000,
        "first_output_ms": statistics.median(times) * 1000,
        "runs": runs,
    }


def other_bench(run: RunLike, script: str, timeout: float) -> dict[str, Any]:
    """Run a sibling benchmark written by another engineer; keep its printed figures."""
    path = HERE / script
    if not path.exists():
        return {"script": script, "available": False, "reason": "not available (file missing)"}
    try:
        p = subprocess.run(
            [*run.pin_client, run.py, str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=str(HERE.parent),
        )
    except subprocess.TimeoutExpired:
        run.failures.append(f"{script}: timed out after {timeout:.0f} s")
        return {"script": script, "available": True, "ok": False, "reason": "timed out"}
    lines = [ln.rstrip() for ln in p.stdout.splitlines() if ln.strip()]
    res: dict[str, Any] = {
        "script": script,
        "available": True,
        "ok": p.returncode == 0,
        "lines": lines,
    }
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        res["reason"] = tail[:300]
        if "ModuleNotFoundError" in p.stderr or "ImportError" in p.stderr:
            res["available"] = False  # its modelwire piece has not landed
            res["reason"] = f"not available ({tail[:200]})"
        else:
            run.failures.append(f"{script}: exit {p.returncode}: {tail[:200]}")
    return res


def machine(py: str) -> dict[str, str]:
    """CPU model, cores and the Python that ran the clients."""
    cpu = "unknown"
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ver = subprocess.run(
        [
            py,
            "-c",
            "import sys,platform;print(platform.python_implementation(), sys.version.split()[0])",
        ],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "python": ver,
        "os": f"{os.uname().sysname} {os.uname().release}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
