"""Issue 29, OpenAI Responses over a WebSocket: a completed response returns at once, and a
message over the cap is a size failure, not a network one.

Rules pinned against a real aiohttp WebSocket server on 127.0.0.1: once ``response.completed``
arrived the call returns and the client closes the socket itself, while the server still holds it
open and never answers a close (the old client waited up to 10 s for the close handshake); a
message over `MAX_EVENT_BYTES` (one 20 MB frame, or 20 MB of 100-byte continuation frames) ends
in one `MALFORMED_RESPONSE` naming the limit, is not retried by the runtime's default policy, and
is refused from the frame headers in linear work (a running total, not a re-summed list).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import WSMsgType, web
from providers_fixtures import FIXTURES, load_case, sse_frames, start_site

from modelwire import Error, GenerateOptions, LlmRuntime, Stop, user_message
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.codes import DEFAULT_RETRYABLE_CODES
from modelwire.wire.sse import MAX_EVENT_BYTES

BIG = 20 << 20
GUARD_S = 60.0  # a hang guard only: every case here returns in well under a second


def _frames() -> list[str]:
    body, _ = load_case(FIXTURES / "openai-responses" / "fantasy-resp-gpt41-web-search.sse")
    return sse_frames(body)


class HoldingServer:
    """Per socket: reads the request, sends `frames`, then `after` (hold open, a big message, a
    flood of fragments), recording upgrades and what the client sent after the request."""

    def __init__(self, frames: list[str], after: str) -> None:
        self.frames = frames
        self.after = after
        self.upgrades = 0
        self.client_sent: list[WSMsgType] = []
        self.release = asyncio.Event()
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _tail(self, ws: web.WebSocketResponse, request: web.Request) -> None:
        if self.after == "hold":  # never closes and never answers a close: only the test ends it
            while True:
                msg = await ws.receive()
                self.client_sent.append(msg.type)
                if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.ERROR):
                    break
            await self.release.wait()
        elif self.after == "one-big-frame":
            await ws.send_str("x" * BIG)
        elif self.after == "tiny-fragments":
            transport = request.transport
            assert transport is not None
            first = bytes([0x01, 100]) + b"x" * 100  # a text frame without FIN
            more = (bytes([0x00, 100]) + b"x" * 100) * 1000  # 1,000 continuation frames
            transport.write(first)
            for _ in range(BIG // len(more) + 1):
                if transport.is_closing():
                    return
                transport.write(more)
                while transport.get_write_buffer_size() > 1 << 20 and not transport.is_closing():
                    await asyncio.sleep(0.001)  # backpressure: the client reads at its pace

    async def __aenter__(self) -> HoldingServer:
        async def handle(request: web.Request) -> web.StreamResponse:
            self.upgrades += 1
            ws = web.WebSocketResponse(autoclose=False)
            await ws.prepare(request)
            msg = await ws.receive()
            assert msg.type == WSMsgType.TEXT and json.loads(msg.data)["type"] == "response.create"
            try:
                for frame in self.frames:
                    await ws.send_str(frame)
                await self._tail(ws, request)
            except (ConnectionError, asyncio.CancelledError):
                pass  # the client hung up first, as it should
            return ws

        app = web.Application()
        app.router.add_get("/v1/responses", handle)
        self._runner, self.url = await start_site(app)
        self.url += "/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release.set()
        assert self._runner is not None
        await self._runner.cleanup()


def _runtime(url: str) -> LlmRuntime:
    route = {
        "api": "openai-responses",
        "base_url": url,
        "transport": "websocket",
        "api_key_env": "OPENAI_KEY",
        "models": [{"id": "gpt-4.1"}],
    }
    rt = LlmRuntime()
    adapter = ProvidersAdapter.from_config(
        {"providers": {"ws": route}}, env={"OPENAI_KEY": "sk-ws-secret"}
    )
    adapter.register(rt)
    return rt


async def _generate(server: HoldingServer) -> Any:
    options = GenerateOptions("ws", "gpt-4.1", (user_message("hi"),))
    async with asyncio.timeout(GUARD_S):
        return await _runtime(server.url).generate(options)


async def test_a_completed_response_returns_without_waiting_for_the_close_handshake() -> None:
    async with HoldingServer(_frames(), "hold") as server:
        result = await _generate(server)
        assert result.finish == Stop()
        assert not server.release.is_set()  # the server still held the socket when it returned
        async with asyncio.timeout(GUARD_S):
            while not server.client_sent:
                await asyncio.sleep(0.01)
    assert server.client_sent == [WSMsgType.CLOSE]  # the client closed it, cleanly
    assert server.upgrades == 1


@pytest.mark.parametrize("after", ["one-big-frame", "tiny-fragments"])
async def test_a_message_over_the_limit_is_one_size_failure_naming_it_and_never_retried(
    after: str,
) -> None:
    async with HoldingServer(_frames()[:2], after) as server:
        result = await _generate(server)
    assert isinstance(result.finish, Error), result.finish
    failure = result.finish.failure
    assert failure.code == "MALFORMED_RESPONSE" and failure.code not in DEFAULT_RETRYABLE_CODES
    assert f"larger than the {MAX_EVENT_BYTES}-byte limit" in failure.message
    assert "sk-ws-secret" not in failure.message
    assert server.upgrades == 1  # not retried
