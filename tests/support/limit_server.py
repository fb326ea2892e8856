"""Shared by the rate-limit tests of every adapter: a fake epoch-seconds clock, and a 127.0.0.1
server that publishes rate-limit headers and counts the requests it holds in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from aiohttp import web

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
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False)
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
