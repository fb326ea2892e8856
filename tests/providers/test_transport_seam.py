"""The `Transport` seam (issue 31): a plugged transport carries every request of both adapters
(streaming POST, discovery, WebSocket), and the general request API (`fetch`, `send` +
`pieces`) serves any method with body bytes in and headers + body out."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from providers_fixtures import start_site
from transport_upstream import Upstream, discover, providers, stream_text

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.wire import H1Transport, Request, Response, Transport, WebSocket, fetch
from modelwire.wire.http import close_sessions
from modelwire.wire.transport import TooLarge


@pytest.fixture(autouse=True)
async def _fresh_pool() -> AsyncIterator[None]:
    yield
    await close_sessions()


class Recording:
    """A `Transport` that notes each request and hands it to the package's own."""

    def __init__(self) -> None:
        self.inner = H1Transport()
        self.seen: list[tuple[str, str]] = []

    async def send(self, request: Request) -> Response:
        self.seen.append((request.method, request.url))
        return await self.inner.send(request)

    async def websocket(self, request: Request, *, max_message_bytes: int = 1 << 20) -> WebSocket:
        self.seen.append(("WS", request.url))
        return await self.inner.websocket(request, max_message_bytes=max_message_bytes)


async def test_a_plugged_transport_carries_every_request_of_both_adapters() -> None:
    recording = Recording()
    plugged: Transport = recording
    async with Upstream() as up:
        ds = DeepSeekAdapter(api_key="sk-x", base_url=up.url, transport=plugged)
        assert await stream_text(ds, "deepseek") == "hello"
        route = providers(up.url, transport=plugged)
        assert await stream_text(route, "p") == "hello"
        assert await discover(route, up.url) == ["m-one", "m-two"]
        await stream_text(providers(up.url, websocket=True, transport=plugged), "p")
    assert recording.seen == [
        ("POST", f"{up.url}/chat/completions"),
        ("POST", f"{up.url}/chat/completions"),
        ("GET", f"{up.url}/models"),
        ("WS", f"{up.url}/responses"),
    ]


async def test_fetch_and_streaming_serve_any_method_with_bytes_in_and_out() -> None:
    async def echo(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if request.query.get("stream"):
            resp = web.StreamResponse(headers={"X-Method": request.method})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            for part in (b"one ", b"two ", body):
                await resp.write(part)
            await resp.write_eof()
            return resp
        return web.Response(body=body[::-1], headers={"X-Method": request.method}, status=201)

    app = web.Application()
    app.router.add_route("*", "/echo", echo)
    runner, base = await start_site(app)
    try:
        reply = await fetch(Request("PUT", f"{base}/echo", body=b"\x00\x01upload"))
        assert (reply.status, reply.headers["X-Method"], reply.body) == (
            201,
            "PUT",
            b"daolpu\x01\x00",
        )
        reply = await fetch(Request("DELETE", f"{base}/echo"))
        assert (reply.status, reply.body) == (201, b"")
        response = await H1Transport().send(Request("PATCH", f"{base}/echo?stream=1", body=b"x"))
        got = b"".join([b"".join(pieces) async for pieces in response.pieces()])
        await response.aclose()
        assert (response.headers["X-Method"], got) == ("PATCH", b"one two x")
        with pytest.raises(TooLarge):
            await fetch(Request("POST", f"{base}/echo", body=b"y" * 100), max_bytes=10)
    finally:
        await runner.cleanup()
