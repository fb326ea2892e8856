"""Time one client against the local SSE server, in this process, and print one JSON line.

  python harness.py --client mw-deepseek --port P --n 2000 --repeat 7 --warmup 1 --pair-floor
  python harness.py --client mw-deepseek --port P --mode concurrent --n 200 --concurrency 1000

single      `repeat` sequential streams; wall = perf_counter, CPU = getrusage(RUSAGE_SELF) user+sys
            (every thread of this process; the server is another process). With --pair-floor a
            floor stream of the same protocol and size is timed in this process right before each
            timed stream, and the x-floor ratio is the median of the per-stream ratios (this VM's
            speed drifts by tens of percent from minute to minute; pairing cancels most of it).
            The hard floor (raw asyncio + msgspec, clients/hardfloor.py) is paired the same way:
            `x_hard_floor`. A floor client is paired with the other floor only.
concurrent  `concurrency` streams gathered at once in one event loop, `repeat` batches.

Every timed stream is checked against `/expected` outside the timed region: text, reasoning,
tool calls (id, name, exact argument string), and for floor and modelwire clients the usage
buckets and finish reason. A client that loses, reorders or invents anything fails the run.
A client whose library or modelwire piece is missing prints {"available": false, "reason": ...}.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import json
import os
import resource
import signal
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clients import FLOOR_OF, HARD_FLOOR_OF, Unavailable, load
from clients.common import Result


def cpu_s() -> float:
    """User + system CPU seconds of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def fetch_expected(port: int, n: int, tb: int) -> dict[str, Any]:
    """What the server says a correct client reassembles for this size."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", f"/n={n}/tb={tb}/expected")
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    if resp.status != 200:
        raise RuntimeError(f"/expected answered {resp.status}: {data[:200]!r}")
    out: dict[str, Any] = json.loads(data)
    return out


def _first_diff(a: str, b: str) -> str:
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return f"got {len(a)} chars, want {len(b)}; first difference at {i}: {a[i : i + 24]!r} vs {b[i : i + 24]!r}"


def check(client: Any, res: Result, exp: dict[str, Any]) -> None:
    """Raise AssertionError naming the client and the field when `res` differs from `exp`."""
    name = client.name
    if res.text != exp["text"]:
        raise AssertionError(f"{name}: text differs ({_first_diff(res.text, exp['text'])})")
    if res.reasoning is not None and res.reasoning != exp["reasoning"]:
        diff = _first_diff(res.reasoning, exp["reasoning"])
        raise AssertionError(f"{name}: reasoning differs ({diff})")
    want = exp["tool_calls"]
    got = res.tool_calls
    if [(t["name"], t["arguments"]) for t in got] != [(t["name"], t["arguments"]) for t in want]:
        summary = [(t["name"], len(t["arguments"] or "")) for t in got]
        if len(got) == len(want) == 1 and got[0]["name"] == want[0]["name"]:
            diff = _first_diff(got[0]["arguments"], want[0]["arguments"])
            raise AssertionError(f"{name}: tool arguments differ ({diff})")
        raise AssertionError(
            f"{name}: tool calls differ: got {summary}, want {[(t['name'], len(t['arguments'])) for t in want]}"
        )
    if got:
        ids = exp["tool_ids"]
        ok = {ids[client.proto], ids["chat"]}
        if client.proto == "responses":
            ok.add(f"{ids['responses']}|{ids['responses_item']}")
        if got[0]["id"] not in ok:
            raise AssertionError(f"{name}: tool call id {got[0]['id']!r} not one of {sorted(ok)}")
    if client.checks_usage:
        if res.finish != exp["finish"]:
            raise AssertionError(f"{name}: finish {res.finish!r}, want {exp['finish']!r}")
        u = res.usage or {}
        for key, val in exp["usage"].items():
            if u.get(key) != val:
                raise AssertionError(f"{name}: usage {key}={u.get(key)!r}, want {val!r}")


async def _run(a: argparse.Namespace) -> dict[str, Any]:
    client = load(a.client)
    base = f"http://127.0.0.1:{a.port}/n={a.n}/tb={a.tb}"
    if a.delay_ms:
        base += f"/delay_ms={a.delay_ms:g}"
    tools = a.tb > 0
    if tools and not client.tools:
        raise Unavailable("this client is measured on the text-only stream")
    exp = fetch_expected(a.port, a.n, a.tb)
    t0 = time.perf_counter()
    await client.setup(base)
    setup_s = time.perf_counter() - t0
    timeout = a.stream_timeout

    async def one(c: Any) -> Result:
        r: Result = await asyncio.wait_for(c.stream(tools), timeout)
        return r

    width = a.concurrency if a.mode == "concurrent" else 1
    for _ in range(a.warmup):  # warm-up: lazy imports, first-call caches, connections
        for r in await asyncio.gather(*(one(client) for _ in range(width))):
            check(client, r, exp)

    # the references timed right before each timed stream: the aiohttp floor and the hard floor
    refs: dict[str, Any] = {}
    if a.pair_floor and a.mode == "single":
        for key, table in (("floor", FLOOR_OF), ("hard", HARD_FLOOR_OF)):
            if table[client.proto] != a.client:
                ref = load(table[client.proto])
                await ref.setup(base)
                check(ref, await one(ref), exp)
                refs[key] = ref

    prof = None
    if a.profile:
        import cProfile

        # CPU-time timer: time the process spends descheduled (a busy shared VM) or idle in
        # epoll is not charged to whatever function happened to be running.
        prof = cProfile.Profile(time.process_time)
    walls: list[float] = []
    cpus: list[float] = []
    ref_cpus: dict[str, list[float]] = {k: [] for k in refs}
    ref_walls: dict[str, list[float]] = {k: [] for k in refs}
    errors: list[str] = []
    try:
        for _ in range(a.repeat):
            for key, ref in refs.items():
                gc.collect()
                c0, w0 = cpu_s(), time.perf_counter()
                fres = await one(ref)
                w1, c1 = time.perf_counter(), cpu_s()
                check(ref, fres, exp)
                del fres
                ref_walls[key].append(w1 - w0)
                ref_cpus[key].append(c1 - c0)
            gc.collect()
            if prof is not None:
                prof.enable()
            c0, w0 = cpu_s(), time.perf_counter()
            results = await asyncio.gather(
                *(one(client) for _ in range(width)), return_exceptions=True
            )
            w1, c1 = time.perf_counter(), cpu_s()
            if prof is not None:
                prof.disable()
            for got in results:
                if isinstance(got, BaseException):
                    errors.append(f"{type(got).__name__}: {got}")
                else:
                    check(client, got, exp)
            del results
            walls.append(w1 - w0)
            cpus.append(c1 - c0)
    finally:
        await client.close()
        for ref in refs.values():
            await ref.close()
    chunks = a.n * width
    if errors:
        raise AssertionError(
            f"{client.name}: {len(errors)} of {width * a.repeat} streams failed; first: {errors[0]}"
        )
    if prof is not None:
        from profile_summary import write_summary

        write_summary(prof, a.profile, chunks * a.repeat)
    out: dict[str, Any] = {
        "setup_s": setup_s,
        "wall_s": walls,
        "cpu_s": cpus,
        "chunks_per_run": chunks,
        "us_cpu_per_chunk": statistics.median(cpus) / chunks * 1e6,
        "chunks_per_s": chunks / statistics.median(walls),
    }
    for key, prefix in (("floor", ""), ("hard", "hard_")):
        if key in refs:
            rc, rw = ref_cpus[key], ref_walls[key]
            out[f"{prefix}floor_us_cpu_per_chunk"] = statistics.median(rc) / chunks * 1e6
            out[f"x_{prefix}floor"] = statistics.median(
                c / f for c, f in zip(cpus, rc, strict=True)
            )
            out[f"x_{prefix}floor_wall"] = statistics.median(
                c / f for c, f in zip(walls, rw, strict=True)
            )
    out.update(name=client.name, version=client.version(), kind=client.kind, proto=client.proto)
    extra = getattr(client, "extra", None)
    if extra is not None:
        out.update(extra())
    return out


def main() -> None:
    """Command line; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--client", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mode", choices=("single", "concurrent"), default="single")
    ap.add_argument("--n", type=int, default=2000, help="delta events per stream")
    ap.add_argument("--tb", type=int, default=0, help="tool-argument bytes (0 = no tool call)")
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--concurrency", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--pair-floor", action="store_true")
    ap.add_argument(
        "--profile", default="", help="cProfile the timed streams; summary to this file"
    )
    ap.add_argument("--stream-timeout", type=float, default=300.0)
    ap.add_argument("--tag", default="", help="the suite step this row belongs to (echoed)")
    ap.add_argument("--max-seconds", type=int, default=600)
    a = ap.parse_args()
    signal.alarm(a.max_seconds)  # bounded, whatever happens
    head = {"client": a.client, "mode": a.mode, "n": a.n, "tb": a.tb, "repeat": a.repeat}
    if a.tag:
        head["tag"] = a.tag
    if a.mode == "concurrent":
        head["concurrency"] = a.concurrency
    try:
        out = {**head, "available": True, **asyncio.run(_run(a))}
    except Unavailable as exc:
        out = {**head, "available": False, "reason": str(exc)}
    out["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
