"""CPU per chunk of the native protocols (issue #16): Gemini, Bedrock (binary event stream),
Mistral and Azure chat, with OpenAI chat as the reference row — each stream served by a local
server in its own process and consumed through `LlmRuntime.generate` on a `ProvidersAdapter`.

    python benchmarks/bench_native.py [--n 20000] [--repeats 5] [--json]

Each stream is checked exactly (the assembled text must equal what was sent); a mismatch exits 1.
CPU is this process's user+system time over the call, divided by the text deltas; the figure is
the median of the repeats. Target: ≤ 25 µs/chunk for every protocol, like the three original ones.
"""

from __future__ import annotations

import argparse
import asyncio
import binascii
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PIECE = "tok "
TARGET_US = 25.0


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One `application/vnd.amazon.eventstream` event message."""
    headers = b""
    for name, value in (
        (":message-type", "event"),
        (":event-type", event_type),
        (":content-type", "application/json"),
    ):
        raw = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw
    body = json.dumps(payload, separators=(",", ":")).encode()
    total = 16 + len(headers) + len(body)
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", binascii.crc32(message))


def _sse(data: dict[str, Any] | str, sep: bytes = b"\n\n") -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return b"data: " + text.encode() + sep


def body(proto: str, n: int) -> bytes:
    """The whole response body of an `n`-delta text answer in protocol `proto`."""
    if proto == "gemini":
        part = {
            "candidates": [{"content": {"parts": [{"text": PIECE}], "role": "model"}, "index": 0}],
            "modelVersion": "gemini-bench",
            "responseId": "r-1",
        }
        last = {
            "candidates": [
                {
                    "content": {"parts": [{"text": ""}], "role": "model"},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 12,
                "candidatesTokenCount": n,
                "totalTokenCount": 12 + n,
            },
            "modelVersion": "gemini-bench",
            "responseId": "r-1",
        }
        return _sse(part, b"\r\n\r\n") * n + _sse(last, b"\r\n\r\n")
    if proto == "bedrock":
        out = [_frame("messageStart", {"role": "assistant"})]
        delta = _frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": PIECE}})
        out.append(delta * n)
        out.append(_frame("contentBlockStop", {"contentBlockIndex": 0}))
        out.append(_frame("messageStop", {"stopReason": "end_turn"}))
        usage = {"inputTokens": 12, "outputTokens": n, "totalTokens": 12 + n}
        out.append(_frame("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
        return b"".join(out)
    chunk = {
        "id": "c-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": PIECE}, "finish_reason": None}],
    }
    end = {
        "id": "c-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": 12 + n},
    }
    return _sse(chunk) * n + _sse(end) + _sse("[DONE]")


ROUTES: dict[str, dict[str, Any]] = {
    "chat": {"api": "openai-completions", "path": "/v1"},
    "gemini": {"api": "google-generative-ai", "path": "/v1beta"},
    "bedrock": {"api": "bedrock-converse-stream", "path": ""},
    "mistral": {"api": "mistral-conversations", "path": ""},
    "azure-chat": {"api": "azure-openai-completions", "path": "/openai/v1"},
}
_KIND = {"gemini": "gemini", "bedrock": "bedrock"}

SERVER = r"""
import sys
from aiohttp import web
bodies = {name: open(path, "rb").read() for name, path in (a.split("=", 1) for a in sys.argv[2:])}
async def handle(request):
    await request.read()
    kind = request.match_info["kind"]
    ctype = "application/vnd.amazon.eventstream" if kind == "bedrock" else "text/event-stream"
    return web.Response(body=bodies[kind], content_type=ctype)
app = web.Application()
app.router.add_route("POST", "/{kind}/{tail:.*}", handle)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
"""


async def _measure(base: str, proto: str, n: int, repeats: int) -> list[float]:
    from modelwire import LlmRuntime
    from modelwire.adapters.providers import ProvidersAdapter
    from modelwire.vocab import GenerateOptions, TextBlock, user_message

    spec = ROUTES[proto]
    profile: dict[str, Any] = {
        "api": spec["api"],
        "base_url": f"{base}/{_KIND.get(proto, 'chat')}{spec['path']}",
        "api_key_env": "BENCH_KEY",
        "models": [{"id": "m"}],
        "stream_idle_timeout_ms": 600_000,
    }
    if proto == "bedrock":
        profile["region"] = "us-east-1"
    runtime = LlmRuntime()
    ProvidersAdapter.from_config(
        {"providers": {f"bench-{proto}": profile}}, env={"BENCH_KEY": "k-bench"}
    ).register(runtime)
    options = GenerateOptions(f"bench-{proto}", "m", (user_message("hi"),))
    samples = []
    for _ in range(repeats + 1):  # the first call warms the connection pool and imports
        start = _cpu()
        result = await runtime.generate(options)
        spent = _cpu() - start
        text = "".join(b.text for b in result.message.content if isinstance(b, TextBlock))
        if text != PIECE * n or result.finish.kind != "stop":
            raise SystemExit(f"{proto}: assembled text differs from what the server sent")
        samples.append(spent / n * 1e6)
    return samples[1:]


def main(argv: list[str] | None = None) -> int:
    """Serve every protocol's body from a subprocess and print µs CPU per chunk."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for kind in ("chat", "gemini", "bedrock"):
            path = Path(tmp) / kind
            path.write_bytes(body(kind, args.n))
            files.append(f"{kind}={path}")
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(port), *files])
        try:
            base = f"http://127.0.0.1:{port}"
            rows = asyncio.run(_run(base, args.n, args.repeats))
        finally:
            server.terminate()
            server.wait()
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"| protocol | µs CPU/chunk (median of {args.repeats}, n={args.n}) | target ≤ 25 µs |")
    print("|---|---|---|")
    for proto, value in rows.items():
        verdict = "**met**" if value <= TARGET_US else "missed"
        print(f"| {proto} ({ROUTES[proto]['api']}) | {value:.1f} | {verdict} |")
    return 0


async def _run(base: str, n: int, repeats: int) -> dict[str, float]:
    import aiohttp

    for _ in range(200):  # wait for the server to listen
        try:
            async with aiohttp.ClientSession() as session, session.get(base + "/"):
                break
        except aiohttp.ClientError:
            await asyncio.sleep(0.05)
    rows = {}
    for proto in ROUTES:
        rows[proto] = statistics.median(await _measure(base, proto, n, repeats))
    return rows


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
