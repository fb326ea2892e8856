"""A raw asyncio HTTP/1.1 loopback server for byte-level faults, and DeepSeek agent wiring.

Each request is answered by the next queued behaviour (an async function over the connection):
a full SSE body, an HTTP error status, a reset before or after the headers, a partial body then
a reset or a clean EOF, or a stall. Request bodies are recorded byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent, AgentPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import SessionLog

ROUTE = "deepseek-official"
MODEL = "deepseek-v4-flash"
API_KEY = "sk-retry-wire-secret-0123456789"
FAST_POLICY = {
    "mode": "normal",
    "max_retries": 2,
    "backoff": {"initial_delay_ms": 10, "max_delay_ms": 10, "jitter_ratio": 0},
}

Behaviour = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
CHUNKED_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def delta(finish: str | None = None, **fields: object) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


def usage(prompt: int, completion: int, hit: int = 0) -> dict[str, object]:
    return {
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_cache_hit_tokens": hit,
            "prompt_cache_miss_tokens": prompt - hit,
        },
    }


def sse_text(payloads: Iterable[object], *, done: bool = True) -> bytes:
    parts = [
        f"data: {p if isinstance(p, str) else json.dumps(p, separators=(',', ':'))}\n\n"
        for p in payloads
    ]
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def answer(text: str, *, prompt: int = 10, completion: int = 2) -> Behaviour:
    return sse(delta(role="assistant", content=text), delta("stop"), usage(prompt, completion))


def sse(*payloads: object, done: bool = True) -> Behaviour:
    body = sse_text(payloads, done=done)

    async def behave(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD + body)
        await writer.drain()
        writer.close()

    return behave


def raw_sse_file(body: bytes) -> Behaviour:
    async def behave(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD + body)
        await writer.drain()
        writer.close()

    return behave


def status(code: int, message: str, headers: dict[str, str] | None = None) -> Behaviour:
    body = json.dumps({"error": {"message": message, "type": "error"}}).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    head = (
        f"HTTP/1.1 {code} Error\r\nContent-Type: application/json\r\n{extra}"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()

    async def behave(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(head + body)
        await writer.drain()
        writer.close()

    return behave


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def reset() -> Behaviour:
    """Reset the connection before any response byte."""

    async def behave(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _reset(writer)

    return behave


def partial_then_reset(*payloads: object) -> Behaviour:
    """A chunked 200 with the given SSE events (none: headers only), then a reset."""
    body = sse_text(payloads, done=False)

    async def behave(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_HEAD)
        if body:
            writer.write(f"{len(body):x}\r\n".encode() + body + b"\r\n")
        await writer.drain()
        await asyncio.sleep(0.02)
        _reset(writer)

    return behave


def partial_then_eof(*payloads: object) -> Behaviour:
    """A close-delimited 200 with the given SSE events and no `[DONE]`, then a clean close."""
    return sse(*payloads, done=False)


def stall(*payloads: object) -> Behaviour:
    """A 200 with the given events, then silence until the client gives up."""
    body = sse_text(payloads, done=False)

    async def behave(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD + body)
        await writer.drain()
        await reader.read()  # returns when the client drops the connection
        writer.close()

    return behave


@dataclass
class RawServer:
    """An HTTP endpoint on 127.0.0.1 answering queued behaviours; `bodies` holds raw bodies."""

    port: int = 0
    bodies: list[bytes] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    behaviours: list[Behaviour] = field(default_factory=list)
    server: asyncio.Server | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *behaviours: Behaviour) -> None:
        self.behaviours.extend(behaviours)

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)  # type: ignore[arg-type]
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            self.paths.append(lines[0].split(" ")[1])
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            self.bodies.append(await reader.readexactly(length))
            assert self.behaviours, "no response queued"
            await self.behaviours.pop(0)(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.tasks.discard(task)  # type: ignore[arg-type]


def free_port() -> int:
    """A port nothing listens on right now (for a refused connection)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def deepseek_agent(
    url: str,
    log: SessionLog,
    *,
    plugins: Iterable[AgentPlugin] = (),
    retry_policy: Any = None,
    idle_ms: float = 1000,
    **kwargs: Any,
) -> Agent:
    """An agent on a runtime serving `ROUTE` with the real DeepSeek adapter pointed at `url`."""
    runtime = LlmRuntime()
    adapter = DeepSeekAdapter(
        api_key=API_KEY,
        base_url=url,
        env={},
        retry_policy=FAST_POLICY if retry_policy is None else retry_policy,
        stream_idle_timeout_ms=idle_ms,
    )
    runtime.register_adapter([ROUTE], adapter)
    return Agent(runtime=runtime, log=log, provider=ROUTE, model=MODEL, plugins=plugins, **kwargs)
