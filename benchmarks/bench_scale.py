"""Scale: many concurrent small streams in one process, every one checked; RSS per stream.

  python benchmarks/bench_scale.py [--streams 10000] [--n 20] [--client mw-deepseek] [--port P]

Starts the local SSE server in its own process (unless `--port` names a running one), then in
this process: opens the client, runs a few streams to warm every cache and pool, measures the
resident set (`/proc/self/statm`) as the idle baseline, starts all `--streams` streams at once
in one event loop (one task each, all created before the first runs, so all are in flight at
once), and checks each result exactly against the server's `/expected` (text, reasoning, tool
call, usage, finish) as its stream ends; the result is then dropped, as a server would, so the
figure is the memory of streams in flight, not of 10,000 results the harness keeps. It prints
one line per client with the peak RSS above idle divided by the streams (`ru_maxrss` is the
process peak, so the figure is an upper bound) and the most streams in flight at once, and exits
1 if any stream failed or differed. The target (issue 21): zero loss at
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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from clients import load  # noqa: E402
from harness import check, fetch_expected  # noqa: E402

R = TypeVar("R")

TARGET_KIB = 8.0
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_kib() -> float:
    """The current resident set of this process, KiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 1024


def peak_kib() -> float:
    """The peak resident set of this process so far, KiB."""
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


class _Tally:
    """Streams in flight (and the most at once), errors and lost results of one run."""

    def __init__(self) -> None:
        self.inflight = self.most = self.errors = self.lost = 0
        self.first = ""

    def started(self) -> None:
        self.inflight += 1
        self.most = max(self.most, self.inflight)


ASYNCIO_FLOOR = "asyncio-floor"
"""Not a client: the least memory any asyncio stream can take (see `_FloorProtocol`)."""


class _FloorProtocol(asyncio.Protocol):
    """The asyncio floor of one stream: one connection (no reuse), one request written whole,
    the response counted and dropped read by read until the chunked body's last chunk, no
    parsing at all. Not a correct client (it reassembles nothing); it only says how much RSS a
    task, a socket and its transport take, so that the table shows what a real client adds."""

    __slots__ = ("done", "received", "request", "tail", "transport")

    def __init__(self, request: bytes, done: asyncio.Future[int]) -> None:
        self.request, self.done, self.received, self.tail = request, done, 0, b""
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        self.tail = (self.tail + data[-7:])[-7:]  # the last chunk may be split across reads
        if self.tail == b"\r\n0\r\n\r\n" and self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(self.received)


class _Floor:
    """`bench_scale`'s view of the asyncio floor: `stream()` returns the bytes received."""

    name = "asyncio floor: a task, a connection, the response counted and dropped (no client)"

    def __init__(self, port: int, n: int, tb: int) -> None:
        body = json.dumps({"model": "deepseek-chat", "stream": True, "messages": []}).encode()
        self.port = port
        self.request = (
            f"POST /n={n}/tb={tb}/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body

    async def stream(self) -> int:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        await loop.create_connection(
            lambda: _FloorProtocol(self.request, done), "127.0.0.1", self.port
        )
        return await done


async def _run_all(
    streams: int, start: Callable[[], Awaitable[R]], lost: Callable[[R], bool]
) -> tuple[_Tally, float, float]:
    """`streams` streams at once (one task each, in a `TaskGroup`, which forgets a task once it
    is done); each result is judged by `lost` as its stream ends, then dropped: the harness keeps
    no stream's result. The tally, wall and CPU seconds."""
    tally = _Tally()

    async def one() -> None:
        tally.started()
        try:
            result = await start()
        except Exception as exc:  # counted, and the first one reported
            tally.errors += 1
            tally.first = tally.first or f"{type(exc).__name__}: {exc}"
        else:
            tally.lost += lost(result)
            del result
        finally:
            tally.inflight -= 1

    c0, w0 = time.process_time(), time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(streams):
            group.create_task(one())
    return tally, time.perf_counter() - w0, time.process_time() - c0


def _matches(client: Any, result: Any, expected: Any) -> bool:
    try:
        check(client, result, expected)
    except AssertionError:
        return False
    return True


async def run_floor(port: int, streams: int, n: int, tb: int) -> dict[str, Any]:
    """The asyncio floor's figures, measured as `run_client` measures a client's; a stream
    counts as lost when its byte count differs from the warm-up streams'."""
    floor = _Floor(port, n, tb)
    sizes = set(await asyncio.gather(*(floor.stream() for _ in range(20))))
    if len(sizes) != 1:
        raise SystemExit(f"{ASYNCIO_FLOOR}: the warm-up streams differ in size: {sorted(sizes)}")
    (size,) = sizes
    gc.collect()
    idle = rss_kib()
    tally, wall, cpu = await _run_all(streams, floor.stream, lambda got: got != size)
    return _figures(ASYNCIO_FLOOR, floor.name, streams, n, tally, idle, peak_kib(), wall, cpu)


async def run_client(name: str, port: int, streams: int, n: int, tb: int) -> dict[str, Any]:
    """Warm up, then `streams` concurrent streams of `n` chunks; the figures of one client."""
    if name == ASYNCIO_FLOOR:
        return await run_floor(port, streams, n, tb)
    client = load(name)
    exp = fetch_expected(port, n, tb)
    await client.setup(f"http://127.0.0.1:{port}/n={n}/tb={tb}")
    tools = tb > 0
    try:
        for r in await asyncio.gather(*(client.stream(tools) for _ in range(20))):
            check(client, r, exp)
        gc.collect()
        idle = rss_kib()
        tally, wall, cpu = await _run_all(
            streams, lambda: client.stream(tools), lambda r: not _matches(client, r, exp)
        )
        peak = peak_kib()
    finally:
        await client.close()
    return _figures(name, client.name, streams, n, tally, idle, peak, wall, cpu)


def _figures(
    client: str,
    name: str,
    streams: int,
    n: int,
    tally: _Tally,
    idle: float,
    peak: float,
    wall: float,
    cpu: float,
) -> dict[str, Any]:
    return {
        "client": client,
        "name": name,
        "streams": streams,
        "n": n,
        "errors": tally.errors,
        "lost": tally.lost,
        "max_inflight": tally.most,
        "first_error": tally.first[:300],
        "idle_rss_kib": idle,
        "peak_rss_kib": peak,
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
        verdict = f"{verdict} the < {TARGET_KIB:g} KiB target"
        if r["client"] == ASYNCIO_FLOOR:
            verdict = "a floor, not a client: no verdict"
        print(
            f"{r['name']}: {r['streams']:,} concurrent streams x {r['n']} chunks: "
            f"{r['errors']} errors, {r['lost']} lost, {r['max_inflight']:,} in flight at once; idle RSS {r['idle_rss_kib'] / 1024:.1f} MiB, "
            f"peak {r['peak_rss_kib'] / 1024:.1f} MiB: {r['kib_per_stream']:.2f} KiB per stream "
            f"above idle ({verdict}); "
            f"{r['chunks_per_s']:,.0f} chunks/s, {r['us_cpu_per_chunk']:.1f} us CPU/chunk"
            + (f"; first error: {r['first_error']}" if r["first_error"] else "")
        )
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
