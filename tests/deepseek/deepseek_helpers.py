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
    MaxTokens,
    ReasoningDelta,
    ReplayEnvelope,
    Stop,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    ToolCalls,
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


_FINISH = {"stop": Stop, "tool_calls": ToolCalls, "length": MaxTokens}


def check_folded(result: Folded, expected: dict[str, Any]) -> None:
    """The folded chunks equal a recording's neutral expected form (text, reasoning, raw tool
    arguments, finish, usage buckets; usage right before the single finish)."""
    assert result.text == expected["text"]
    assert result.reasoning == expected["reasoning"]
    assert result.tool_calls == [
        {"id": t["id"], "name": t["name"], "arguments_raw": t["arguments_raw"]}
        for t in expected["tool_calls"]
    ]
    assert result.finish is not None
    assert isinstance(result.finish.reason, _FINISH[expected["finish"]])
    want = expected["usage"]
    if want is None:
        assert result.usage is None
        return
    assert result.usage is not None
    got = result.usage.usage
    assert got.input_tokens == want["input_uncached"]
    assert (got.cache_read_tokens or 0) == (want["cache_read"] or 0)
    assert got.cache_write_tokens == want["cache_write"]
    assert got.output_tokens == want["output"]
    assert got.reasoning_tokens == want["reasoning"]
    # chunk protocol: usage right before the single terminal finish
    assert result.kinds[-2:] == ["usage", "finish"] and result.kinds.count("finish") == 1


def expected_of(path: Path) -> dict[str, Any]:
    return json.loads(path.with_suffix(".expected.json").read_text())


def recorded_response(path: Path) -> ReplayEnvelope:
    """The replay state a recorded stream's finish must carry: its first `id` and `model`."""
    response: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            payload = json.loads(line[5:])
            for wire, key in (("id", "response_id"), ("model", "response_model")):
                if payload.get(wire) and key not in response:
                    response[key] = payload[wire]
    assert response, f"{path.name} names no response id or model"
    return ReplayEnvelope(response)
