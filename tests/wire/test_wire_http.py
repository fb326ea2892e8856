"""The shared HTTP transport: failure mapping, idle watchdog, error-body cap, connection release."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from wire_helpers import SSE_HEAD, Conn, RawServer, chunk, read_request

from modelwire import LlmError
from modelwire.wire.http import MAX_ERROR_BODY_BYTES, stream_post
from modelwire.wire.watchdog import IdleWatchdog

MakeServer = Callable[[Conn], Awaitable[RawServer]]


async def drain(url: str, *, idle_ms: float = 2000) -> list[bytes]:
    gen = stream_post(
        url + "/chat/completions",
        b"{}",
        {"Content-Type": "application/json"},
        provider="Acme",
        endpoint=url,
        watchdog=IdleWatchdog(idle_ms, message=f"Acme stream idle timeout after {idle_ms}ms"),
        fallback_request_id_headers=("x-acme-request-id",),
        secrets=("sk-secret-value",),
    )
    try:
        return [b async for b in gen]
    finally:
        await gen.aclose()


async def test_b10_refused_connection_is_transport_before_headers() -> None:
    with pytest.raises(LlmError) as info:
        await drain("http://127.0.0.1:1")
    assert info.value.code == "TRANSPORT"
    assert info.value.message == "Acme API request to http://127.0.0.1:1 failed: connection refused"
    assert isinstance(info.value.__cause__, OSError)


async def test_b44_socket_drop_mid_body_is_transport_stream_failure(raw_server: MakeServer) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + chunk(b"data: {}\n\n") + b"40\r\npartial")
        await writer.drain()

    srv = await raw_server(handler)
    with pytest.raises(LlmError) as info:
        await drain(srv.url)
    assert info.value.code == "TRANSPORT"
    assert info.value.message.startswith(f"Acme API stream from {srv.url} failed: ")


async def test_b40_idle_body_times_out_and_transfer_is_aborted(raw_server: MakeServer) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + chunk(b": hello\n\n"))
        await writer.drain()
        await reader.read()  # returns when the client drops the connection

    srv = await raw_server(handler)
    with pytest.raises(LlmError) as info:
        await drain(srv.url, idle_ms=100)
    assert info.value.code == "TIMEOUT"
    assert info.value.message == "Acme stream idle timeout after 100ms"
    await asyncio.wait_for(srv.closed.wait(), 2)


async def test_b40_watchdog_covers_the_wait_for_headers(raw_server: MakeServer) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()

    srv = await raw_server(handler)
    with pytest.raises(LlmError) as info:
        await drain(srv.url, idle_ms=80)
    assert info.value.code == "TIMEOUT"


async def test_b40_pulses_every_30ms_keep_a_250ms_watchdog_alive(raw_server: MakeServer) -> None:
    # 15 pulses (~450 ms in all, past the budget: only the resets keep it alive) with room for a
    # loaded machine between two of them
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD)
        for _ in range(15):
            writer.write(chunk(b": keep-alive\n\n"))
            await writer.drain()
            await asyncio.sleep(0.03)
        writer.write(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()

    srv = await raw_server(handler)
    body = b"".join(await drain(srv.url, idle_ms=250))
    assert body.endswith(b"data: [DONE]\n\n")


async def test_b40_consumer_time_between_reads_is_not_counted(raw_server: MakeServer) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD)
        for i in range(3):
            writer.write(chunk(f"data: {i}\n\n".encode()))
            await writer.drain()
            await asyncio.sleep(0.02)
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    srv = await raw_server(handler)
    gen = stream_post(
        srv.url, b"{}", {}, provider="Acme", endpoint=srv.url, watchdog=IdleWatchdog(60)
    )
    got = []
    async for data in gen:
        got.append(data)
        await asyncio.sleep(0.15)  # slow consumer: longer than the idle budget
    assert b"".join(got) == b"data: 0\n\ndata: 1\n\ndata: 2\n\n"


async def test_error_body_read_is_capped_at_1_mib(raw_server: MakeServer) -> None:
    sent = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        size = 8 * MAX_ERROR_BODY_BYTES
        writer.write(
            f"HTTP/1.1 503 Service Unavailable\r\ncontent-length: {size}\r\n"
            "x-acme-request-id: rid-1\r\n\r\n".encode()
        )
        try:
            for _ in range(size // 65536):
                writer.write(b"<" * 65536)
                await writer.drain()
        except ConnectionError:
            pass
        sent.set()

    srv = await raw_server(handler)
    with pytest.raises(LlmError) as info:
        await asyncio.wait_for(drain(srv.url), 10)
    assert info.value.code == "SERVER"
    assert info.value.message == "Acme API error (HTTP 503)"
    assert info.value.failure.request_id == "rid-1"


async def test_2xx_without_body_is_empty_response(raw_server: MakeServer) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        await writer.drain()

    srv = await raw_server(handler)
    with pytest.raises(LlmError) as info:
        await drain(srv.url)
    assert (info.value.code, info.value.message) == (
        "EMPTY_RESPONSE",
        "Acme API returned no response body",
    )


def _keepalive_server() -> Conn:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(SSE_HEAD + chunk(b"data: x\n\n") + b"0\r\n\r\n")
            await writer.drain()

    return handler


async def test_connection_reused_after_full_read(raw_server: MakeServer) -> None:
    srv = await raw_server(_keepalive_server())
    for _ in range(3):
        assert b"".join(await drain(srv.url)) == b"data: x\n\n"
    assert srv.connections == 1


async def test_connection_dropped_after_early_close(raw_server: MakeServer) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + chunk(b"data: 1\n\n"))
        await writer.drain()
        await reader.read()

    srv = await raw_server(handler)
    gen = stream_post(
        srv.url, b"{}", {}, provider="Acme", endpoint=srv.url, watchdog=IdleWatchdog(5000)
    )
    assert await gen.__anext__() == b"data: 1\n\n"
    await gen.aclose()
    await asyncio.wait_for(srv.closed.wait(), 2)


async def test_caller_cancellation_stays_cancelled_and_releases(raw_server: MakeServer) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + chunk(b"data: 1\n\n"))
        await writer.drain()
        await reader.read()

    srv = await raw_server(handler)
    task = asyncio.create_task(drain(srv.url, idle_ms=5000))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(srv.closed.wait(), 2)


async def test_redirect_is_not_followed_and_maps_to_http_code(raw_server: MakeServer) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /elsewhere\r\ncontent-length: 0\r\n\r\n"
        )
        await writer.drain()

    srv = await raw_server(handler)
    with pytest.raises(LlmError) as info:
        await drain(srv.url)
    assert info.value.code == "HTTP_307"
    assert srv.connections == 1
