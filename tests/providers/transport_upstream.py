"""An upstream for the transport tests: one aiohttp app on 127.0.0.1, over HTTP or HTTPS (a
trustme CA, optionally requiring a client certificate), serving what each request kind needs:
``POST /v1/chat/completions`` (a DeepSeek/OpenAI chat SSE stream), ``GET /v1/models`` (a model
list) and ``GET /v1/responses`` (an OpenAI Responses WebSocket replaying a recorded stream).
Every request's headers are kept (`seen`), so a test can tell a proxied request (`Via`) from a
direct one."""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import trustme
from aiohttp import WSMsgType, web
from providers_fixtures import sse_frames

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.vocab import (
    Error,
    Finish,
    GenerateOptions,
    ModelDiscoveryRequest,
    TextDelta,
    user_message,
)
from modelwire.wire import Transport

_CHAT = [
    {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "hel"}}]},
    {
        "id": "c1",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    },
]
SSE = b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in _CHAT) + b"data: [DONE]\n\n"
RESPONSES_CASE = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures"
RESPONSES_CASE = RESPONSES_CASE / "openai-responses" / "fantasy-resp-azure-gpt5mini-tool.sse"


def _frames() -> list[str]:
    if not RESPONSES_CASE.exists():
        raise RuntimeError(f"recorded fixture absent: {RESPONSES_CASE} (CI must fail, not skip)")
    return sse_frames(RESPONSES_CASE.read_bytes())


class Upstream:
    """``async with Upstream(ca, tls=True) as up: up.url`` (…/v1)."""

    def __init__(
        self, ca: trustme.CA | None = None, *, tls: bool = False, client_ca: bool = False
    ) -> None:
        self.ca = ca
        self.tls = tls
        self.client_ca = client_ca
        self.seen: list[dict[str, str]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    def _app(self) -> web.Application:
        frames = _frames()

        async def chat(request: web.Request) -> web.StreamResponse:
            self.seen.append({k.lower(): v for k, v in request.headers.items()})
            await request.read()
            return web.Response(body=SSE, content_type="text/event-stream")

        async def models(request: web.Request) -> web.StreamResponse:
            self.seen.append({k.lower(): v for k, v in request.headers.items()})
            return web.json_response({"data": [{"id": "m-one"}, {"id": "m-two"}]})

        async def responses(request: web.Request) -> web.StreamResponse:
            self.seen.append({k.lower(): v for k, v in request.headers.items()})
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            msg = await ws.receive()
            assert msg.type == WSMsgType.TEXT
            for frame in frames:
                await ws.send_str(frame)
            await ws.close()
            return ws

        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        app.router.add_get("/v1/models", models)
        app.router.add_get("/v1/responses", responses)
        return app

    async def __aenter__(self) -> Upstream:
        context = None
        if self.tls:
            assert self.ca is not None
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
            if self.client_ca:
                context.verify_mode = ssl.CERT_REQUIRED
                self.ca.configure_trust(context)
        self._runner = web.AppRunner(self._app())
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"{'https' if self.tls else 'http'}://localhost:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def deepseek(url: str, **settings: Any) -> DeepSeekAdapter:
    return DeepSeekAdapter(api_key="sk-upstream-secret", base_url=url, **settings)


def providers(
    url: str, *, websocket: bool = False, transport: Transport | None = None, **settings: Any
) -> ProvidersAdapter:
    route: dict[str, Any] = {
        "api": "openai-responses" if websocket else "openai-completions",
        "base_url": url,
        "api_key_env": "UPSTREAM_KEY",
        "models": [{"id": "m"}],
        **settings,
    }
    if websocket:
        route["transport"] = "websocket"
    return ProvidersAdapter.from_config(
        {"providers": {"p": route}}, env={"UPSTREAM_KEY": "sk-upstream-secret"}, transport=transport
    )


async def stream_text(adapter: DeepSeekAdapter | ProvidersAdapter, route: str) -> str:
    """One call's text; it must finish without an error (a failure before the stream raises)."""
    options = GenerateOptions(
        route, "m" if route == "p" else "deepseek-chat", (user_message("hi"),)
    )
    text, last = [], None
    async for chunk in adapter.stream(options):
        last = chunk
        if isinstance(chunk, TextDelta):
            text.append(chunk.text)
    assert isinstance(last, Finish) and not isinstance(last.reason, Error), last
    return "".join(text)


async def discover(adapter: ProvidersAdapter, url: str) -> list[str]:
    found = await adapter.discover_models(
        ModelDiscoveryRequest(provider="p", base_url=url, api="openai-completions")
    )
    return [m.id for m in found]


__all__ = ["SSE", "Upstream", "deepseek", "discover", "providers", "stream_text"]
