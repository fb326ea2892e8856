"""The added latency of `modelwire serve` (issue 36) beside a bare aiohttp pass-through proxy,
both in front of the same loopback upstream, measured in one run.

Standalone: `python benchmarks/bench_gateway.py [--requests 2000] [--rps 500] [--concurrency 100]
[--chunks 20] [--postgres URL] [--key] [--json]`. Processes: the upstream (aiohttp, one Chat Completions
SSE answer of `--chunks` deltas written at once), the pass-through (aiohttp: the request
forwarded as bytes, the answer streamed back as it comes — no parsing, no logging), and
`modelwire serve` with its log on SQLite (and on PostgreSQL with `--postgres`), every request a
session written durably, authenticated by the admin key (and, with `--key`, again by a virtual key with a budget
and an rpm that the run never reaches: its admission and settlement on every request). The load generator (this process,
aiohttp) sends streaming chat completions open-loop at `--rps` with at most `--concurrency` in
flight, each timed from send to its last byte, every answer checked. Reported per target: p50
and p99 of that latency, and the added latency over calling the upstream directly (the target's
percentile minus the direct one), the proxy process's own CPU per request (what a loaded machine
distorts least) and the peak RSS of the gateway process. Targets (issue 36):
p50 added ≤ 1.25x the pass-through's, p99 ≤ 5 ms, ≥ 10x less added latency than LiteLLM's proxy.
With `--litellm BIN` (the `litellm` command of a venv with `litellm[proxy]`, e.g. the peers venv's
`benchmarks/.venv-peers/bin/litellm`) the LiteLLM proxy joins the run as a further target on the
same upstream, with its master key and no database (so it logs nothing durably: a setting that
favours it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ADMIN = "bench-admin-key-0123456789abcdef"
WORDS = [f"w{i} " for i in range(1000)]

UPSTREAM = r"""
import json, sys
from aiohttp import web
n = int(sys.argv[2])
events = [{"id": "b", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
events += [{"id": "b", "choices": [{"index": 0, "delta": {"content": f"w{i} "}}]} for i in range(n)]
events += [{"id": "b", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
           {"id": "b", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": n}}]
body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"
async def handle(request):
    await request.read()
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(body)
    await resp.write_eof()
    return resp
app = web.Application(); app.router.add_post("/{tail:.*}", handle)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""

PASSTHROUGH = r"""
import sys
import aiohttp
from aiohttp import web
upstream = sys.argv[2]
async def start(app):
    app["s"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
async def stop(app):
    await app["s"].close()
async def handle(request):
    body = await request.read()
    async with request.app["s"].post(upstream + request.path, data=body,
                                     headers={"Content-Type": "application/json"}) as up:
        resp = web.StreamResponse(status=up.status, headers={"Content-Type": up.headers["Content-Type"]})
        await resp.prepare(request)
        async for data in up.content.iter_any():
            await resp.write(data)
        await resp.write_eof()
        return resp
app = web.Application(); app.on_startup.append(start); app.on_cleanup.append(stop)
app.router.add_post("/{tail:.*}", handle)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


ADAPTER = r"""
import asyncio, json, sys, time
import modelwire as mw
from modelwire.agent.setup import open_runtime
config, n, rps, conc = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
async def main():
    rt = open_runtime(config, env={"UP_KEY": "sk-bench"})
    gate = asyncio.Semaphore(conc)
    options = mw.GenerateOptions("up", "m", (mw.user_message("go"),))
    times = []
    async def one():
        async with gate:
            start = time.perf_counter()
            text = "".join([c.text async for c in rt.stream(options) if isinstance(c, mw.TextDelta)])
            times.append(time.perf_counter() - start)
            assert text.startswith("w0 "), text
    for _ in range(min(50, n)):
        await one()
    times.clear()
    cpu = time.process_time()
    begin = time.perf_counter()
    tasks = []
    for i in range(n):
        delay = begin + i / rps - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one()))
    await asyncio.gather(*tasks)
    spent = time.process_time() - cpu
    times.sort()
    print(json.dumps({"p50_ms": times[len(times) // 2] * 1000,
                      "p99_ms": times[min(len(times) - 1, int(0.99 * len(times)))] * 1000,
                      "n": len(times), "cpu_ms_per_request": spent * 1000 / n}))
asyncio.run(main())
"""
"""The adapter path: `rt.stream` in a process of its own on the same upstream (its CPU per
request includes the load it generates, as a client of the upstream)."""


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _ready(url: str) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(600):  # a hang guard of 60 s
            try:
                async with http.get(url + "/healthz") as resp:
                    if resp.status < 500:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


async def _load(
    url: str, args: argparse.Namespace, expected: str, headers: dict[str, str]
) -> list[float]:
    body = json.dumps(
        {"model": "up:m", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    ).encode()
    headers = {"Content-Type": "application/json", **headers}
    gate = asyncio.Semaphore(args.concurrency)
    times: list[float] = []
    failures: list[str] = []
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def one() -> None:
            async with gate:
                start = time.perf_counter()
                async with http.post(
                    url + "/v1/chat/completions", data=body, headers=headers
                ) as resp:
                    raw = await resp.read()
                took = time.perf_counter() - start
            text = "".join(
                (json.loads(line[6:])["choices"] or [{"delta": {}}])[0]["delta"].get("content")
                or ""
                for line in raw.decode().splitlines()
                if line.startswith("data: {")
            )
            if resp.status != 200 or text != expected:
                failures.append(f"{resp.status}: {raw[:200]!r}")
            times.append(took)

        for _ in range(min(50, args.requests)):  # warm-up, not timed
            await one()
        times.clear()
        tasks = []
        interval = 1.0 / args.rps
        begin = time.perf_counter()
        for i in range(args.requests):
            delay = begin + i * interval - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(one()))
        await asyncio.gather(*tasks)
    if failures:
        raise RuntimeError(f"{url}: {len(failures)} wrong answers, first: {failures[0]}")
    return times


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _spawn(
    args: argparse.Namespace, tmp: Path
) -> tuple[list[subprocess.Popen[bytes]], str, str, dict[str, tuple[str, subprocess.Popen[bytes]]]]:
    """Start the upstream, the pass-through and the gateways; returns them and their URLs."""
    up_port, pass_port = _port(), _port()
    upstream = f"http://127.0.0.1:{up_port}"
    procs = [subprocess.Popen([sys.executable, "-c", UPSTREAM, str(up_port), str(args.chunks)])]
    procs.append(subprocess.Popen([sys.executable, "-c", PASSTHROUGH, str(pass_port), upstream]))
    gateways: dict[str, tuple[str, subprocess.Popen[bytes]]] = {}
    if args.litellm:
        url, proc = _litellm(args.litellm, upstream, tmp)
        procs.append(proc)
        gateways["litellm"] = (url, proc)
    config = tmp / "gw.toml"
    config.write_text(
        f'[providers.up]\napi = "openai-completions"\nbase_url = "{upstream}/v1"\n'
        'api_key_env = "UP_KEY"\nmodels = [{ id = "m", cost = { input = 1, output = 2 } }]\n'
    )
    logs = _logs(args, tmp)
    env = {**os.environ, "UP_KEY": "sk-bench", "MODELWIRE_ADMIN_KEY": ADMIN}
    for name, log in logs.items():
        port = _port()
        command = [sys.executable, "-m", "modelwire", "serve", "--config", str(config)]
        command += ["--log", log, "--port", str(port)]
        proc = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        procs.append(proc)
        gateways[name] = (f"http://127.0.0.1:{port}", proc)
    return procs, upstream, f"http://127.0.0.1:{pass_port}", gateways


async def measure(
    args: argparse.Namespace,
    upstream: str,
    passthrough: str,
    gateways: dict[str, tuple[str, subprocess.Popen[bytes]]],
    pids: dict[str, int],
    keys: dict[str, str],
    config: Path,
) -> dict[str, dict[str, float]]:
    """Load every target in turn (module docstring)."""
    expected = "".join(WORDS[: args.chunks])
    await _ready_post(upstream)
    await _ready_post(passthrough)
    for url, _ in gateways.values():
        await _ready(url)
    results: dict[str, dict[str, float]] = {}
    runs: list[tuple[str, str, dict[str, str], int | None]] = [
        ("direct", upstream, {}, None),
        ("passthrough", passthrough, {}, pids["passthrough"]),
    ]
    runs += [
        (n, u, {"Authorization": f"Bearer {_admin(n)}"}, p.pid) for n, (u, p) in gateways.items()
    ]
    if args.key:  # a virtual key with a budget and an rpm: the keys' admission and settlement
        for name, (u, p) in gateways.items():
            if name == "litellm":
                continue
            runs.append((f"{name}+key", u, {"Authorization": f"Bearer {keys[name]}"}, p.pid))
    for name, url, headers, pid in runs:
        before = _cpu_s(pid) if pid else 0.0
        times = await _load(url, args, expected, headers)
        results[name] = {"p50_ms": _pct(times, 0.5), "p99_ms": _pct(times, 0.99), "n": len(times)}
        if pid:  # the proxy's own CPU per request (warm-up included): robust to a loaded machine
            spent = _cpu_s(pid) - before
            results[name]["cpu_ms_per_request"] = (
                spent * 1000 / (len(times) + min(50, args.requests))
            )
    for name, row in results.items():
        if name != "direct":
            row["p50_added_ms"] = row["p50_ms"] - results["direct"]["p50_ms"]
            row["p99_added_ms"] = row["p99_ms"] - results["direct"]["p99_ms"]
    numbers = (args.requests, args.rps, args.concurrency)
    adapter = await asyncio.create_subprocess_exec(
        *(sys.executable, "-c", ADAPTER, str(config), *map(str, numbers)),
        stdout=subprocess.PIPE,
        env={**os.environ, "UP_KEY": "sk-bench"},
    )
    out, _ = await adapter.communicate()
    if adapter.returncode:
        raise RuntimeError(f"the adapter-path run failed ({adapter.returncode})")
    results["adapter"] = json.loads(out)
    for name, (_, proc) in gateways.items():
        results[name]["peak_rss_mb"] = _rss_kb(proc.pid) / 1024
    return results


def run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Start the processes, measure, stop them."""
    tmp = Path(tempfile.mkdtemp(prefix="mw-bench-gw-"))
    keys = asyncio.run(_keys(args, tmp)) if args.key else {}
    procs, upstream, passthrough, gateways = _spawn(args, tmp)
    try:
        pids = {"passthrough": procs[1].pid}
        return asyncio.run(
            measure(args, upstream, passthrough, gateways, pids, keys, tmp / "gw.toml")
        )
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)


LITELLM_KEY = "sk-" + ADMIN
"""LiteLLM's master key (it wants the `sk-` prefix)."""


def _admin(target: str) -> str:
    return LITELLM_KEY if target == "litellm" else ADMIN


def _litellm(binary: str, upstream: str, tmp: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """The LiteLLM proxy on `upstream`: its URL and process."""
    port = _port()
    config = tmp / "litellm.yaml"
    config.write_text(
        "model_list:\n  - model_name: up:m\n    litellm_params:\n      model: openai/m\n"
        f"      api_base: {upstream}/v1\n      api_key: sk-bench\n"
        f"general_settings:\n  master_key: {LITELLM_KEY}\n"
        "litellm_settings:\n  telemetry: false\n"
    )
    command = [binary, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "LITELLM_LOG": "ERROR"}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return f"http://127.0.0.1:{port}", proc


def _logs(args: argparse.Namespace, tmp: Path) -> dict[str, str]:
    logs = {"modelwire-sqlite": f"sqlite:///{tmp}/gw.db"}
    if args.postgres:
        logs["modelwire-postgres"] = args.postgres
    return logs


async def _keys(args: argparse.Namespace, tmp: Path) -> dict[str, str]:
    """A key with a budget and an rpm (neither reached) in each gateway's database."""
    from decimal import Decimal

    from modelwire.serve.keystore import create_key, open_keys

    out = {}
    for name, log in _logs(args, tmp).items():
        driver = await open_keys(log)
        try:
            label = f"bench-{os.getpid()}-{time.time_ns()}"
            out[name] = await create_key(
                driver, label, time.time_ns() // 1_000_000, budget_usd=Decimal(10**6), rpm=10**7
            )
        finally:
            await driver.close()
    return out


async def _ready_post(url: str) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(600):  # a hang guard of 60 s
            try:
                async with http.post(url + "/v1/chat/completions", data=b"{}") as resp:
                    await resp.read()
                    return
            except aiohttp.ClientError:
                await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rps", type=float, default=500)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument(
        "--postgres", default=None, help="also a gateway logging to this PostgreSQL URL"
    )
    parser.add_argument(
        "--key", action="store_true", help="also each gateway with a virtual key with limits"
    )
    parser.add_argument(
        "--litellm", default=None, help="also LiteLLM's proxy: the path of its `litellm` command"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = run(args)
    if args.json:
        print(json.dumps(results))
        return
    print(
        f"{'target':<20} {'p50 ms':>8} {'p99 ms':>8} {'p50 added':>10} {'p99 added':>10} "
        f"{'CPU ms/req':>10}"
    )
    for name, row in results.items():
        print(
            f"{name:<20} {row['p50_ms']:8.2f} {row['p99_ms']:8.2f} "
            f"{row.get('p50_added_ms', 0):10.2f} {row.get('p99_added_ms', 0):10.2f} "
            f"{row.get('cpu_ms_per_request', 0):10.2f}"
        )


if __name__ == "__main__":
    main()
