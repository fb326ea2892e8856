"""OpenAI Responses over a WebSocket (`transport = "websocket"`, issue #16): one
`response.create` per call, the server's JSON event frames through the same translator, the
same failures as SSE. A real aiohttp WebSocket server on 127.0.0.1 replays recorded streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import WSMsgType, web
from providers_fixtures import (
    FIXTURES,
    check_assembled,
    fixture_cases,
    load_case,
    sse_frames,
    start_site,
)

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.assembler import BlockAssembler
from modelwire.errors import LlmError
from modelwire.vocab import Error, GenerateOptions, StreamChunk, user_message
from modelwire.wire.websocket import create_message, websocket_url


class WsServer:
    """Accepts one socket per call, records the first message and the upgrade headers, sends
    `frames`, then closes (optionally refusing the upgrade with `status`)."""

    def __init__(self, frames: list[str], *, status: int = 101) -> None:
        self.frames = frames
        self.status = status
        self.received: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> WsServer:
        async def handle(request: web.Request) -> web.StreamResponse:
            self.headers.append({k.lower(): v for k, v in request.headers.items()})
            if self.status != 101:
                return web.json_response(
                    {"error": {"message": "Incorrect API key provided", "type": "auth"}},
                    status=self.status,
                )
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            msg = await ws.receive()
            assert msg.type == WSMsgType.TEXT
            self.received.append(json.loads(msg.data))
            for frame in self.frames:
                await ws.send_str(frame)
            await ws.close()
            return ws

        app = web.Application()
        app.router.add_get("/v1/responses", handle)
        self._runner, self.url = await start_site(app)
        self.url += "/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def _adapter(url: str, model: str = "gpt-4.1") -> ProvidersAdapter:
    route = {
        "api": "openai-responses",
        "base_url": url,
        "transport": "websocket",
        "api_key_env": "OPENAI_KEY",
        "models": [{"id": model}],
    }
    return ProvidersAdapter.from_config(
        {"providers": {"ws": route}}, env={"OPENAI_KEY": "sk-ws-secret"}
    )


async def _collect(
    adapter: ProvidersAdapter, model: str
) -> tuple[BlockAssembler, list[StreamChunk]]:
    asm = BlockAssembler()
    chunks: list[StreamChunk] = []
    options = GenerateOptions("ws", model, (user_message("hi"),))
    async for chunk in adapter.stream(options):
        chunks.append(chunk)
        asm.push(chunk)
    return asm, chunks


@pytest.mark.parametrize("sse", fixture_cases("openai-responses")[:12])
async def test_recorded_responses_stream_over_websocket_assembles_to_expected(sse: Path) -> None:
    body, expected = load_case(sse)
    async with WsServer(sse_frames(body)) as server:
        asm, chunks = await _collect(_adapter(server.url), "gpt-4.1")
    check_assembled("openai-responses", asm, expected, chunks)
    sent = server.received[0]
    assert sent["type"] == "response.create" and sent["model"] == "gpt-4.1"
    assert "stream" not in sent and "input" in sent
    assert server.headers[0]["authorization"] == "Bearer sk-ws-secret"


async def test_socket_closed_mid_response_is_the_truncated_stream_failure() -> None:
    body, _ = load_case(FIXTURES / "openai-responses" / "fantasy-resp-gpt41-web-search.sse")
    frames = sse_frames(body)
    async with WsServer(frames[: len(frames) // 2]) as server:
        asm, _ = await _collect(_adapter(server.url), "gpt-4.1")
    finish = asm.finish
    assert isinstance(finish, Error)  # as a body cut short on SSE: an error finish, no replay
    assert finish.failure.code == "TRANSPORT"
    assert "sk-ws-secret" not in finish.failure.message


async def test_refused_upgrade_maps_its_status_and_never_echoes_the_key() -> None:
    async with WsServer([], status=401) as server:
        with pytest.raises(LlmError) as info:
            await _collect(_adapter(server.url), "gpt-4.1")
    assert info.value.code == "AUTH" and info.value.status == 401
    assert "sk-ws-secret" not in info.value.message


async def test_a_non_json_frame_is_malformed() -> None:
    async with WsServer(["not json at all"]) as server:
        with pytest.raises(LlmError) as info:
            await _collect(_adapter(server.url), "gpt-4.1")
    assert info.value.code == "MALFORMED_RESPONSE"


def test_create_message_drops_transport_only_fields() -> None:
    message = json.loads(create_message(b'{"model":"m","stream":true,"background":false,"x":1}'))
    assert message == {"type": "response.create", "model": "m", "x": 1}
    assert (
        websocket_url("https://api.openai.com/v1/responses") == "wss://api.openai.com/v1/responses"
    )
    assert websocket_url("http://127.0.0.1:9/v1/responses") == "ws://127.0.0.1:9/v1/responses"
