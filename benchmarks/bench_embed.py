"""CPU per 1,000 embedding vectors: `LlmRuntime.embed` beside the `openai` SDK's
`embeddings.create`, against the same loopback server in the same run (issue 38).

Standalone: `python benchmarks/bench_embed.py [--vectors 1000] [--dims 1536] [--repeats 7]
[--json]` (the SDK comes with the `[dev]` extra). A child process serves ``POST /v1/embeddings``
as the OpenAI reference documents it, each answer pre-rendered once per (input count, encoding):
base64 float32 when the request asks ``encoding_format: "base64"`` (both clients do), else JSON
floats. Each client embeds `--vectors` inputs in one call per repeat, in this process; its CPU
(`getrusage` user + sys) per call is reported as ms per 1,000 vectors (median of the repeats,
after a warm-up), with every vector of every call checked against what the server sent. Rows:
modelwire with ``list[float]`` vectors (the SDK's form), modelwire with ``array("f")`` vectors
(no Python floats made), and the SDK; "x" is the SDK's CPU over modelwire's.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import json
import resource
import statistics
import subprocess
import sys
from collections.abc import Awaitable, Callable

SERVER = r"""
import array, base64, json, sys, zlib
from aiohttp import web

DIMS = int(sys.argv[1])
cache = {}

def vector(i):
    seed = zlib.crc32(str(i).encode())
    return [((seed >> (k % 24)) % 1000) / 64.0 for k in range(DIMS)]

def answer(count, b64):
    key = (count, b64)
    if key not in cache:
        data = []
        for i in range(count):
            v = vector(i)
            emb = base64.b64encode(array.array("f", v).tobytes()).decode() if b64 else v
            data.append({"object": "embedding", "index": i, "embedding": emb})
        usage = {"prompt_tokens": 3 * count, "total_tokens": 3 * count}
        body = {"object": "list", "data": data, "model": "text-embedding-3-small", "usage": usage}
        cache[key] = json.dumps(body).encode()
    return cache[key]

async def handle(request):
    body = json.loads(await request.read())
    raw = answer(len(body["input"]), body.get("encoding_format") == "base64")
    return web.Response(body=raw, content_type="application/json")

async def main():
    app = web.Application(client_max_size=1 << 28)
    app.router.add_post("/v1/embeddings", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()

import asyncio
asyncio.run(main())
"""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def expected(count: int, dims: int) -> list[list[float]]:
    """The vectors the server answers, as float32 values."""
    import zlib

    out = []
    for i in range(count):
        seed = zlib.crc32(str(i).encode())
        values = [((seed >> (k % 24)) % 1000) / 64.0 for k in range(dims)]
        out.append(array.array("f", values).tolist())
    return out


async def _measure(
    call: Callable[[], Awaitable[list[object]]], repeats: int, want: list[list[float]]
) -> float:
    """Median CPU seconds of one call, every answer checked (after the timing)."""
    got = await call()  # warm-up (connection, imports, caches)
    assert [list(v) for v in got] == want  # type: ignore[call-overload]
    samples = []
    for _ in range(repeats):
        start = _cpu()
        got = await call()
        samples.append(_cpu() - start)
        assert len(got) == len(want) and list(got[-1]) == want[-1]  # type: ignore[call-overload]
        assert [list(v) for v in got] == want  # type: ignore[call-overload]
    return statistics.median(samples)


async def run(url: str, vectors: int, dims: int, repeats: int) -> dict[str, float]:
    """The rows, against the server at `url`."""
    import openai

    import modelwire as mw
    from modelwire.adapters.providers import ProvidersAdapter

    key = "sk-bench-0123456789"
    rt = mw.LlmRuntime()
    ProvidersAdapter.from_config(
        {"providers": {"openai": {"base_url": url}}}, env={"OPENAI_API_KEY": key}
    ).register(rt)
    inputs = [f"text {i}" for i in range(vectors)]
    want = expected(vectors, dims)

    async def mw_float() -> list[object]:
        options = mw.EmbedOptions("openai", "text-embedding-3-small", inputs)
        return list((await rt.embed(options)).vectors)

    async def mw_array() -> list[object]:
        options = mw.EmbedOptions(
            "openai", "text-embedding-3-small", inputs, encoding_format="array"
        )
        return list((await rt.embed(options)).vectors)

    client = openai.AsyncOpenAI(api_key=key, base_url=url, max_retries=0)

    async def sdk() -> list[object]:
        answer = await client.embeddings.create(model="text-embedding-3-small", input=inputs)
        return [item.embedding for item in answer.data]

    per = 1000 / vectors * 1000  # seconds per call → ms per 1,000 vectors
    rows = {
        "modelwire": await _measure(mw_float, repeats, want) * per,
        "modelwire_array": await _measure(mw_array, repeats, want) * per,
        "openai_sdk": await _measure(sdk, repeats, want) * per,
    }
    await client.close()
    mine = rows["modelwire"]
    rows["x_sdk_over_modelwire"] = rows["openai_sdk"] / mine if mine else 0.0
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=1000)
    parser.add_argument("--dims", type=int, default=1536)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(args.dims)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"
        rows = asyncio.run(run(url, args.vectors, args.dims, args.repeats))
    finally:
        server.kill()
        server.wait()
    if args.json:
        print(json.dumps(rows))
        return
    print(f"embed: ms CPU per 1,000 vectors of {args.dims} dims (median of {args.repeats})")
    for name, value in rows.items():
        print(f"  {name:22} {value:8.2f}")


if __name__ == "__main__":
    main()
