"""Helpers for the DeepSeek adapter tests: a real loopback HTTP server and chunk folding."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from modelwire import (
    BlockEnd,
    BlockStart,
    Finish,
    GenerateOptions,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
    user_message,
)
from modelwire.adapters.deepseek import DeepSeekAdapter

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Recorded:
    """One request the loopback server received."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Server:
    """A real aiohttp server on 127.0.0.1 serving queued handlers for POST /chat/completions."""

    url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    handlers: list[Handler] = field(default_factory=list)
    default: Handler | None = None

    def queue(self, *handlers: Handler) -> None:
        self.handlers.extend(handlers)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            Recorded(request.path, {k.lower(): v for k, v in request.headers.items()}, body)
        )
        handler = self.handlers.pop(0) if self.handlers else self.default
        assert handler is not None, "no response queued"
        return await handler(request)


async def start_server(server: Server) -> web.AppRunner:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.dispatch)
    runner = web.AppRunner(app, handle_signals=False, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    server.url = f"http://127.0.0.1:{port}"
    return runner


def sse_bytes(payloads: Iterable[object], *, done: bool = True) -> bytes:
    """Render payloads (dicts are JSON-encoded, str sent as-is) as SSE `data:` events."""
    parts = []
    for p in payloads:
        text = p if isinstance(p, str) else json.dumps(p, separators=(",", ":"))
        parts.append(f"data: {text}\n\n")
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def raw_response(
    body: bytes,
    *,
    pieces: Sequence[int] | None = None,
    delay: float = 0.0,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Handler:
    """A handler streaming `body` (optionally cut at the given sizes, with delays between)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=status, headers=headers or {})
        resp.content_type = "text/event-stream"
        await resp.prepare(request)
        if pieces is None:
            await resp.write(body)
        else:
            pos = 0
            for size in pieces:
                if pos >= len(body):
                    break
                await resp.write(body[pos : pos + size])
                pos += size
                if delay:
                    await asyncio.sleep(delay)
            if pos < len(body):
                await resp.write(body[pos:])
        await resp.write_eof()
        return resp

    return handle


def sse_response(payloads: Iterable[object], *, done: bool = True, **kw: Any) -> Handler:
    return raw_response(sse_bytes(payloads, done=done), **kw)


def json_error(status: int, body: object, headers: dict[str, str] | None = None) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        text = body if isinstance(body, str) else json.dumps(body)
        return web.Response(status=status, text=text, headers=headers or {})

    return handle


def text_chunk(text: str, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"delta": {"content": text}, "finish_reason": finish}], **extra}


def options(text: str = "hi", **kw: Any) -> GenerateOptions:
    kw.setdefault("provider", "deepseek-official")
    kw.setdefault("model", "deepseek-v4-flash")
    return GenerateOptions(messages=(user_message(text),), **kw)


def make_adapter(server: Server | None = None, **kw: Any) -> DeepSeekAdapter:
    kw.setdefault("api_key", "sk-test-key-123456")
    if server is not None:
        kw.setdefault("base_url", server.url)
    kw.setdefault("env", {})
    return DeepSeekAdapter(**kw)


async def collect(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    return [c async for c in stream]


@dataclass
class Folded:
    """The neutral result of a chunk stream (mirrors fixtures' expected.json)."""

    text: str
    reasoning: str | None
    tool_calls: list[dict[str, str]]
    finish: Finish | None
    usage: UsageChunk | None
    kinds: list[str]


def fold(chunks: Sequence[StreamChunk]) -> Folded:
    text: list[str] = []
    reasoning: list[str] = []
    tools: dict[int, dict[str, Any]] = {}
    finish = None
    usage = None
    kinds = []
    for c in chunks:
        kinds.append(c.type)
        if isinstance(c, TextDelta):
            text.append(c.text)
        elif isinstance(c, ReasoningDelta):
            reasoning.append(c.text)
        elif isinstance(c, ToolCallDelta):
            t = tools.setdefault(c.index, {"id": "", "name": "", "args": []})
            t["id"] = c.id or t["id"]
            t["name"] = c.name or t["name"]
            t["args"].append(c.arguments_delta)
        elif isinstance(c, UsageChunk):
            usage = c
        elif isinstance(c, Finish):
            finish = c
        else:
            assert isinstance(c, (BlockStart, BlockEnd))
    return Folded(
        "".join(text),
        "".join(reasoning) if reasoning else None,
        [
            {"id": t["id"], "name": t["name"], "arguments_raw": "".join(t["args"])}
            for _, t in sorted(tools.items())
        ],
        finish,
        usage,
        kinds,
    )


HELLO = [
    text_chunk("hel"),
    text_chunk("lo", "stop", usage={"prompt_tokens": 3, "completion_tokens": 1}),
]
