"""Local SSE server for the benchmarks: pre-rendered provider streams on 127.0.0.1 (stdlib only).

Run it in its own process (``python sse_server.py --port 0 --port-file F``) so that the client's
CPU is measured alone. Each response is rendered once per (protocol, n, tool bytes) and then sent
with one ``transport.write()`` (HTTP/1.1 chunked, one HTTP chunk per SSE event, as OpenAI,
DeepSeek and Anthropic send it); with ``delay_ms > 0`` the events are written one at a time.

Routes (any prefix before them is allowed, so adapters append their own paths):
  POST .../chat/completions   DeepSeek/OpenAI chat chunks        (protocol ``chat``)
  POST .../responses          OpenAI Responses events            (protocol ``responses``)
  POST .../messages           Anthropic Messages events          (protocol ``anthropic``)
  GET  .../expected           JSON of what every client must reassemble
  GET  /health, GET /stats    liveness; requests served and this process's CPU seconds

Stream size comes from path segments ``key=value`` anywhere in the path (so a client's base URL
can carry them: ``http://127.0.0.1:PORT/n=2000/tb=400/v1``) or from the query string:
``n`` deltas (default 2000), ``tb`` tool-argument bytes (0 = no tool call), ``delay_ms`` pause
between events. The server exits by itself after ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import sys
from urllib.parse import parse_qsl, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import streams

MAX_N = 400_000
MAX_TOOL_BYTES = 16 << 20
HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"content-type: text/event-stream; charset=utf-8\r\n"
    b"transfer-encoding: chunked\r\n"
    b"cache-control: no-cache\r\n"
    b"connection: keep-alive\r\n"
    b"x-request-id: req_bench\r\n"
    b"\r\n"
)
ROUTES = (("/chat/completions", "chat"), ("/responses", "responses"), ("/messages", "anthropic"))

_cache: dict[tuple[str, int, int], tuple[list[bytes], bytes]] = {}
_expected: dict[tuple[int, int], bytes] = {}
_stats = {"requests": 0, "streams": 0, "bytes": 0}


def rendered(proto: str, n: int, tb: int) -> tuple[list[bytes], bytes]:
    """The framed HTTP chunks and the whole response of one stream (cached)."""
    key = (proto, n, tb)
    hit = _cache.get(key)
    if hit is None:
        p = streams.plan(n, tb)
        framed = [
            b"%x\r\n" % len(ev) + ev + b"\r\n" for ev in streams.sse_bytes(streams.render(proto, p))
        ]
        framed.append(b"0\r\n\r\n")
        hit = (framed, HEAD + b"".join(framed))
        _cache[key] = hit
    return hit


def expected_json(n: int, tb: int) -> bytes:
    """The JSON body of `/expected` for this size (cached)."""
    key = (n, tb)
    hit = _expected.get(key)
    if hit is None:
        hit = json.dumps(streams.expected(streams.plan(n, tb)), ensure_ascii=False).encode()
        _expected[key] = hit
    return hit


def _simple(status: str, body: bytes, ctype: bytes = b"application/json") -> bytes:
    return (
        b"HTTP/1.1 "
        + status.encode()
        + b"\r\ncontent-type: "
        + ctype
        + b"\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\nconnection: keep-alive\r\n\r\n"
        + body
    )


def parse_target(target: str) -> tuple[str, dict[str, str]]:
    """Split a request target into its route path and its size parameters."""
    parts = urlsplit(target)
    params: dict[str, str] = {}
    segs: list[str] = []
    for seg in parts.path.split("/"):
        if "=" in seg:
            k, _, v = seg.partition("=")
            params[k] = v
        elif seg:
            segs.append(seg)
    params.update(parse_qsl(parts.query))
    return "/" + "/".join(segs), params


class Conn(asyncio.Protocol):
    """One client connection: HTTP/1.1 keep-alive, requests answered in order."""

    def __init__(self) -> None:
        self.t: asyncio.Transport | None = None
        self.buf = bytearray()
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.t = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.busy:
            self._process()

    def _process(self) -> None:
        assert self.t is not None
        while not self.busy:
            i = self.buf.find(b"\r\n\r\n")
            if i < 0:
                if len(self.buf) > 1 << 22:
                    self.t.close()
                return
            lines = bytes(self.buf[:i]).decode("latin-1").split("\r\n")
            try:
                method, target, _ = lines[0].split(" ", 2)
            except ValueError:
                self.t.close()
                return
            headers = {}
            for ln in lines[1:]:
                k, _, v = ln.partition(":")
                headers[k.strip().lower()] = v.strip()
            start = i + 4
            if "chunked" in headers.get("transfer-encoding", "").lower():
                body = bytearray()
                pos = start
                while True:
                    j = self.buf.find(b"\r\n", pos)
                    if j < 0:
                        return
                    size = int(bytes(self.buf[pos:j]).split(b";")[0], 16)
                    if len(self.buf) < j + 2 + size + 2:
                        return
                    body += self.buf[j + 2 : j + 2 + size]
                    pos = j + 2 + size + 2
                    if size == 0:
                        break
                consumed, payload = pos, bytes(body)
            else:
                cl = int(headers.get("content-length", "0") or 0)
                if len(self.buf) < start + cl:
                    return
                consumed, payload = start + cl, bytes(self.buf[start : start + cl])
            del self.buf[:consumed]
            self._handle(method, target, payload)

    def _handle(self, method: str, target: str, body: bytes) -> None:
        assert self.t is not None
        _stats["requests"] += 1
        path, params = parse_target(target)
        try:
            n = min(max(int(params.get("n", "2000")), streams.MIN_N), MAX_N)
            tb = min(max(int(params.get("tb", "0")), 0), MAX_TOOL_BYTES)
            delay = min(max(float(params.get("delay_ms", "0")), 0.0), 1000.0) / 1000.0
        except ValueError:
            self.t.write(_simple("400 Bad Request", b'{"error":{"message":"bad parameter"}}'))
            return
        if method == "POST":
            proto = next((p for suffix, p in ROUTES if path.endswith(suffix)), None)
            if proto is None:
                self.t.write(_simple("404 Not Found", b'{"error":{"message":"no such route"}}'))
                return
            try:
                req = json.loads(body or b"{}")
            except ValueError:
                self.t.write(_simple("400 Bad Request", b'{"error":{"message":"bad json"}}'))
                return
            if not isinstance(req, dict) or not req.get("stream"):
                msg = b'{"error":{"message":"this server only streams (stream=true)"}}'
                self.t.write(_simple("400 Bad Request", msg))
                return
            try:
                framed, full = rendered(proto, n, tb)
            except ValueError as exc:
                err = json.dumps({"error": {"message": str(exc)}}).encode()
                self.t.write(_simple("400 Bad Request", err))
                return
            _stats["streams"] += 1
            _stats["bytes"] += len(full)
            if delay <= 0:
                self.t.write(full)
            else:
                self.busy = True
                asyncio.get_running_loop().create_task(self._paced(framed, delay))
            return
        if method == "GET" and path.endswith("/expected"):
            self.t.write(_simple("200 OK", expected_json(n, tb)))
        elif method == "GET" and path == "/health":
            self.t.write(_simple("200 OK", b"ok", b"text/plain"))
        elif method == "GET" and path == "/stats":
            ru = resource.getrusage(resource.RUSAGE_SELF)
            st = dict(_stats, cpu_s=ru.ru_utime + ru.ru_stime, maxrss_kb=ru.ru_maxrss)
            self.t.write(_simple("200 OK", json.dumps(st).encode()))
        else:
            self.t.write(_simple("404 Not Found", b'{"error":{"message":"not found"}}'))

    async def _paced(self, framed: list[bytes], delay: float) -> None:
        assert self.t is not None
        loop = asyncio.get_running_loop()
        try:
            self.t.write(HEAD)
            deadline = loop.time() + 600  # no paced stream outlives 10 minutes
            nxt = loop.time()
            for piece in framed:
                if self.t.is_closing() or loop.time() > deadline:
                    return
                self.t.write(piece)
                nxt += delay
                pause = nxt - loop.time()
                if pause > 0:
                    await asyncio.sleep(pause)
        finally:
            self.busy = False
        if self.buf:
            self._process()

    def connection_lost(self, exc: Exception | None) -> None:
        self.busy = True


def _write_port(port_file: str, port: int) -> None:
    """Publish the listening port atomically (the runner polls for this file)."""
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    os.replace(tmp, port_file)


async def serve(
    port: int, port_file: str, prerender: list[tuple[str, int, int]], life: float
) -> None:
    """Serve on 127.0.0.1 until SIGTERM/SIGINT or `life` seconds have passed."""
    for proto, n, tb in prerender:
        rendered(proto, n, tb)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Conn, host="127.0.0.1", port=port, backlog=4096)
    real_port = server.sockets[0].getsockname()[1]
    if port_file:
        _write_port(port_file, real_port)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"bench SSE server on http://127.0.0.1:{real_port} pid={os.getpid()}", flush=True)
    try:
        await asyncio.wait_for(stop.wait(), timeout=life)
    except TimeoutError:
        print("bench SSE server: max lifetime reached, exiting", flush=True)
    server.close()


def main() -> None:
    """Command line: port (0 = any free one, written to --port-file), lifetime, pre-rendering."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", default="")
    ap.add_argument("--max-seconds", type=float, default=1800.0)
    ap.add_argument("--prerender", default="", help="proto:n:tb,... to render before serving")
    a = ap.parse_args()
    pre = []
    for item in filter(None, a.prerender.split(",")):
        proto, n, tb = item.split(":")
        pre.append((proto, int(n), int(tb)))
    asyncio.run(serve(a.port, a.port_file, pre, a.max_seconds))


if __name__ == "__main__":
    main()
