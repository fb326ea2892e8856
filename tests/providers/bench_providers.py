"""Benchmark: client CPU per chunk of ProvidersAdapter on each protocol (not a test).

A separate process serves 20,000 pre-rendered SSE events per protocol from 127.0.0.1; this process
writes one event per write and streams them through the full path (HTTP -> SSE -> decode -> translate -> BlockAssembler) and
reports process CPU time per chunk. Run: python tests/providers/bench_providers.py
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.assembler import BlockAssembler
from modelwire.vocab import GenerateOptions, user_message
from modelwire.wire.http import close_sessions

N = 20_000


def _body(api: str) -> bytes:
    words = [f"tok{i} " for i in range(N)]
    if api == "openai-completions":
        lines = [
            "data: "
            + json.dumps(
                {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "model": "m",
                    "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}],
                }
            )
            for w in words
        ]
        lines.append('data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}')
        lines.append(
            'data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":20000}}'
        )
        lines.append("data: [DONE]")
        return ("\n\n".join(lines) + "\n\n").encode()
    if api == "openai-responses":
        ev = [
            ("response.created", {"type": "response.created", "response": {"id": "r"}}),
            (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {"type": "message", "id": "msg_1", "content": []},
                },
            ),
        ]
        ev += [
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "output_index": 0,
                    "content_index": 0,
                    "item_id": "msg_1",
                    "delta": w,
                },
            )
            for w in words
        ]
        ev.append(
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {
                        "id": "r",
                        "status": "completed",
                        "usage": {"input_tokens": 3, "output_tokens": N},
                    },
                },
            )
        )
        return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in ev).encode()
    ev = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {"id": "msg", "usage": {"input_tokens": 3, "output_tokens": 1}},
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    ev += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}},
        )
        for w in words
    ]
    ev += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": N},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in ev).encode()


SERVER = r"""
import asyncio, sys
from aiohttp import web
bodies = {name: open(path, 'rb').read() for name, path in (a.split('=') for a in sys.argv[1:])}
async def handle(request):
    await request.read()
    body = bodies[request.match_info['api']]
    resp = web.StreamResponse(headers={'Content-Type': 'text/event-stream'})
    await resp.prepare(request)
    for event in body.split(b'\n\n')[:-1]:
        await resp.write(event + b'\n\n')
    await resp.write_eof()
    return resp
app = web.Application(); app.router.add_post('/{api}/{tail:.*}', handle)
web.run_app(app, host='127.0.0.1', port=int(__import__('os').environ['PORT']), print=None)
"""


async def _measure(api: str, port: int) -> float:
    adapter = ProvidersAdapter.from_config(
        {
            "providers": {
                "bench": {
                    "api": api,
                    "base_url": f"http://127.0.0.1:{port}/{api}",
                    "api_key_env": "K",
                    "models": [{"id": "m"}],
                }
            }
        },
        env={"K": "k"},
    )
    options = GenerateOptions(provider="bench", model="m", messages=(user_message("hi"),))
    best = float("inf")
    for _ in range(3):
        asm = BlockAssembler()
        start = time.process_time()
        async for chunk in adapter.stream(options):
            asm.push(chunk)
        best = min(best, time.process_time() - start)
        assert asm.finish.kind == "stop"
    await close_sessions()
    return best / N * 1e6


def main() -> None:
    import os
    import tempfile

    apis = ("openai-completions", "openai-responses", "anthropic-messages")
    tmp = tempfile.mkdtemp()
    args = []
    for api in apis:
        path = f"{tmp}/{api}.sse"
        with open(path, "wb") as f:
            f.write(_body(api))
        args.append(f"{api}={path}")
    port = 47813
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, *args], env={**os.environ, "PORT": str(port)}
    )
    try:
        time.sleep(1.0)
        for api in apis:
            print(f"{api}: {asyncio.run(_measure(api, port)):.2f} us/chunk (client CPU, full path)")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
