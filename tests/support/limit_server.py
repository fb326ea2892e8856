"""Shared by the rate-limit tests of every adapter: a fake epoch-seconds clock, a 127.0.0.1
server that publishes rate-limit headers and counts the requests it holds in flight, and two chat
turns that report the wait lines printed on stderr."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from aiohttp import web
from catchall import serve_all
from rich.console import Console

from modelwire.cli.chatopts import CallOptions
from modelwire.cli.chatsession import ChatSession
from modelwire.cli.chatview import ChatView
from modelwire.cli.routes import RouteSet
from modelwire.session import MemoryLog
from modelwire.wire.ratelimit import RateLimiter

T0 = 1_750_000_000.0


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
    """One scripted reply: a status, headers, and the SSE reads of a 200 (None: the server's
    default stream); any other status answers a JSON rate-limit error."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    reads: list[bytes] | None = None


class LimitServer:
    """Answers each request with the next `Answer` (the last one repeats) and counts the requests
    in flight. While `hold()` (polled) is true an arrived request is held, so all the concurrency
    a client lets through really meets here; `gate`, when set, holds every reply until it opens.
    `arrivals` are the `clock()` readings at each arrival (a test's fake clock)."""

    def __init__(
        self,
        answers: list[Answer],
        *,
        reads: Sequence[bytes],
        error: str = "slow down",
        hold: Callable[[], bool] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.answers = list(answers)
        self.reads = list(reads)
        self.error = error
        self.hold = hold
        self.clock = clock
        self.gate: asyncio.Event | None = None
        self.arrived = 0
        self.arrivals: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.arrived += 1
        if self.clock is not None:
            self.arrivals.append(self.clock())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            while self.hold is not None and self.hold():
                await asyncio.sleep(0.001)
            if self.gate is not None:
                await self.gate.wait()
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            if answer.status != 200:
                body = {"error": {"message": self.error, "type": "rate_limit_error"}}
                return web.json_response(body, status=answer.status, headers=answer.headers)
            headers = {"Content-Type": "text/event-stream", **answer.headers}
            response = web.StreamResponse(status=200, headers=headers)
            await response.prepare(request)
            for data in self.reads if answer.reads is None else answer.reads:
                await response.write(data)
            await response.write_eof()
            return response
        finally:
            self.in_flight -= 1

    async def __aenter__(self) -> LimitServer:
        self._runner, self.url = await serve_all(self._handle)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.gate is not None:
            self.gate.set()
        assert self._runner is not None
        await self._runner.cleanup()


async def chat_wait_lines(routes: RouteSet, route: str, model: str) -> list[str]:
    """Two chat turns through a `ChatSession` on `route` of `routes` (the first must complete
    without a word on stderr, the second complete too); the stderr lines that name a rate
    limit."""
    stderr = io.StringIO()
    view = ChatView(sink=None, reasoning=False, stderr=Console(file=stderr, width=200))
    chat = ChatSession(
        log=MemoryLog(),
        routes=routes,
        session_id="chat-1",
        route=route,
        model=model,
        system=None,
        options=CallOptions(),
        tools=[],
        view=view,
    )
    try:
        assert (await chat.send("hello")).kind == "completed"
        assert stderr.getvalue() == ""
        assert (await chat.send("again")).kind == "completed"
    finally:
        await chat.close()
    return [line for line in stderr.getvalue().splitlines() if "rate limit" in line]
