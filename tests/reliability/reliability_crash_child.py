"""The process the crash-durability test SIGKILLs: agent turns on SQLite against a local server.

Run as ``python reliability_crash_child.py <sqlite path> <seed>`` with the suite's DeepSeek key in
``RELIABILITY_KEY``. It serves a DeepSeek-compatible endpoint from its own event loop (seeded:
some attempts fail with 503 or a reset, answers stream slowly), runs one tiny turn after another
with the real `DeepSeekAdapter` and `RetryPlugin`, and prints progress markers, flushed, so the
parent knows where the kill landed: ``ready``, ``turn <n>``, ``backoff`` (a retry wait begins,
after its ``llm/retry`` is durable), ``wake`` (the wait ended), ``done <n> <reason>``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys

SESSION = "crash"
ROUTE = "deepseek"
MODEL = "deepseek-v4-flash"
POLICY = {
    "mode": "normal",
    "max_retries": 2,
    "backoff": {"initial_delay_ms": 40, "max_delay_ms": 80, "jitter_ratio": 0},
}


def say(*words: object) -> None:
    print(*words, flush=True)


def sse_body(rng: random.Random) -> list[bytes]:
    events = [{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    events += [
        {"choices": [{"index": 0, "delta": {"content": f"part {i} "}}]}
        for i in range(rng.randint(2, 6))
    ]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events.append({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 3}})
    out = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
    out.append(b"data: [DONE]\n\n")
    return out


async def main(path: str, seed: int) -> None:
    from modelwire.adapters.deepseek import DeepSeekAdapter
    from modelwire.agent import Agent
    from modelwire.retry import RetryPlugin
    from modelwire.runtime import LlmRuntime
    from modelwire.session import open_log

    rng = random.Random(seed)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            roll = rng.random()
            if roll < 0.45:
                body = b'{"error":{"message":"overloaded, try again"}}'
                writer.write(
                    b"HTTP/1.1 503 Busy\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
            elif roll < 0.55:
                writer.transport.abort()
                return
            else:
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                )
                for event in sse_body(rng):
                    writer.write(event)
                    await writer.drain()
                    await asyncio.sleep(rng.uniform(0.0, 0.015))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    async def announced_sleep(seconds: float) -> None:
        say("backoff")
        await asyncio.sleep(seconds)
        say("wake")

    log = await open_log(f"sqlite:///{path}")
    runtime = LlmRuntime()
    runtime.register_adapter(
        [ROUTE],
        DeepSeekAdapter(
            api_key=os.environ["RELIABILITY_KEY"],
            base_url=url,
            env={},
            retry_policy=POLICY,
            stream_idle_timeout_ms=500,
        ),
    )
    agent = Agent(
        runtime=runtime,
        log=log,
        provider=ROUTE,
        model=MODEL,
        plugins=[RetryPlugin(sleep=announced_sleep, random=lambda: 0.5)],
    )
    say("ready")
    n = 0
    while True:
        n += 1
        say("turn", n)
        result = await agent.run_turn(SESSION, f"tiny turn {n}")
        say("done", n, result.reason.kind)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
