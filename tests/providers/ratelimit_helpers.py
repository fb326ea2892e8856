"""Helpers of the client-side rate-limit tests: a fake clock, and a loopback server that
publishes rate-limit headers and counts the requests it holds in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.wire.ratelimit import RateLimiter

T0 = 1_750_000_000.0

CHAT_TEXT = [
    b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n',
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
    b'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n',
    b"data: [DONE]\n\n",
]
"""A Chat Completions stream answering "hi" (usage 3/1)."""

ANTHROPIC_TEXT = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
    b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"hi"}}\n\n',
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":3}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]
"""An Anthropic Messages stream answering "hi"."""


class FakeTime:
    """Epoch-seconds clock plus a sleep that records each request and moves the clock on."""

    def __init__(self, now: float = T0) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)

    def limiter(self) -> RateLimiter:
        return RateLimiter(clock=self.clock, sleep=self.sleep)


@dataclass
class Answer:
    """One scripted reply: a status, headers, and the SSE reads of a 200 (else a JSON error)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    reads: list[bytes] = field(default_factory=lambda: list(CHAT_TEXT))


class LimitServer:
    """A 127.0.0.1 server answering each request with the next `Answer` (the last one repeats).

    It counts the requests in flight; while `hold()` (polled) is true, every arrived request is
    held, so all the concurrency a client lets through really meets at the server. `gate`, when
    set, holds every reply until it opens.
    """

    def __init__(self, answers: list[Answer], *, hold: Callable[[], bool] | None = None) -> None:
        self.answers = list(answers)
        self.hold = hold
        self.arrived = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.gate: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.arrived += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            while self.hold is not None and self.hold():
                await asyncio.sleep(0.001)
            if self.gate is not None:
                await self.gate.wait()
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            if answer.status != 200:
                body = {"error": {"message": "slow down", "type": "rate_limit_error"}}
                return web.json_response(body, status=answer.status, headers=answer.headers)
            headers = {"Content-Type": "text/event-stream", **answer.headers}
            response = web.StreamResponse(status=200, headers=headers)
            await response.prepare(request)
            for data in answer.reads:
                await response.write(data)
            await response.write_eof()
            return response
        finally:
            self.in_flight -= 1

    async def __aenter__(self) -> LimitServer:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.gate is not None:
            self.gate.set()
        assert self._runner is not None
        await self._runner.cleanup()


def acme(url: str, *, api: str = "openai-completions", **fields: Any) -> dict[str, Any]:
    """A one-route config (`acme`, model `m`) pointing at `url`."""
    base = url + ("/v1" if api == "openai-completions" else "")
    profile = {"api": api, "base_url": base, "api_key_env": "K", "models": [{"id": "m"}]}
    return {"providers": {"acme": {**profile, **fields}}}


def adapter(url: str, limiter: RateLimiter, **fields: Any) -> ProvidersAdapter:
    """The providers adapter of `acme(url, **fields)` using `limiter`."""
    return ProvidersAdapter.from_config(acme(url, **fields), env={"K": "k"}, rate_limiter=limiter)
