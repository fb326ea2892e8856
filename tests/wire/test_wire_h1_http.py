"""The streaming client end to end (`wire.http.stream_post` over `wire.h1` and `wire.pool`):
framings, reuse, stale connections, faults, TLS, flow control, against real local servers."""

from __future__ import annotations

import asyncio
import gc
import ssl
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
import trustme
from wire_helpers import SSE_HEAD, Conn, RawServer, chunk, read_request

from modelwire import LlmError
from modelwire.wire.http import close_sessions, stream_post
from modelwire.wire.watchdog import IdleWatchdog

MakeServer = Callable[[Conn], Awaitable[RawServer]]


def _post(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[bytes]:
    return stream_post(
        url + "/v1/chat",
        b'{"a": 1}',
        headers or {"Authorization": "Bearer sk-secret-value"},
        provider="Acme",
        endpoint=url,
        watchdog=IdleWatchdog(5000),
    )


async def _drain(url: str, headers: dict[str, str] | None = None) -> bytes:
    gen = _post(url, headers)
    try:
        return b"".join([b async for b in gen])
    finally:
        await gen.aclose()  # type: ignore[attr-defined]


def _serve(reply: bytes, *, keep: bool = True) -> Conn:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(reply)
            await writer.drain()
            if not keep:
                return

    return handler


async def test_h1_content_length_body_streams_and_the_connection_is_reused(
    raw_server: MakeServer,
) -> None:
    srv = await raw_server(_serve(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\ndata: x\n\n"))
    for _ in range(3):
        assert await _drain(srv.url) == b"data: x\n\n"
    assert srv.connections == 1


async def test_h1_body_until_close_is_read_whole_and_never_reused(raw_server: MakeServer) -> None:
    srv = await raw_server(_serve(b"HTTP/1.1 200 OK\r\n\r\ndata: x\n\n", keep=False))
    for _ in range(2):
        assert await _drain(srv.url) == b"data: x\n\n"
    assert srv.connections == 2


async def test_h1_connection_close_header_is_honoured(raw_server: MakeServer) -> None:
    reply = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok"
    srv = await raw_server(_serve(reply))
    for _ in range(2):
        assert await _drain(srv.url) == b"ok"
    assert srv.connections == 2


async def test_h1_early_close_with_the_body_already_whole_keeps_the_connection(
    raw_server: MakeServer,
) -> None:
    # The pump stops at the protocol's end marker; the terminal chunk came in the same read.
    srv = await raw_server(_serve(SSE_HEAD + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"))
    for _ in range(3):
        gen = _post(srv.url)
        assert await gen.__anext__() == b"data: [DONE]\n\n"
        await gen.aclose()  # type: ignore[attr-defined]
    assert srv.connections == 1


async def test_h1_idle_connection_closed_by_the_server_is_replaced(raw_server: MakeServer) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + chunk(b"data: 1\n\n") + b"0\r\n\r\n")
        await writer.drain()  # then close: the pooled connection goes stale

    srv = await raw_server(handler)
    assert await _drain(srv.url) == b"data: 1\n\n"
    await asyncio.wait_for(srv.closed.wait(), 2)
    await asyncio.sleep(0)  # the client sees the EOF
    assert await _drain(srv.url) == b"data: 1\n\n"
    assert srv.connections == 2


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        (
            SSE_HEAD + chunk(b"data: 1\n\n") + b"zz\r\n",
            "the chunked response body is malformed (invalid character in chunk size)",
        ),
        (SSE_HEAD + chunk(b"data: 1\n\n") + b"40\r\nshort", "the response body was cut off"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\nshort", "the response body was cut off"),
    ],
)
async def test_h1_broken_body_is_a_transport_stream_failure_after_its_good_bytes(
    raw_server: MakeServer, wire: bytes, reason: str
) -> None:
    srv = await raw_server(_serve(wire, keep=False))
    got: list[bytes] = []
    with pytest.raises(LlmError) as info:
        async for data in _post(srv.url):
            got.append(data)
    assert info.value.code == "TRANSPORT"
    assert info.value.message == f"Acme API stream from {srv.url} failed: {reason}"
    assert b"".join(got).startswith(b"data: 1\n\n" if b"data: 1" in wire else b"short")


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        (b"", "the server closed the connection"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "the response is not HTTP/1.1"),
    ],
)
async def test_h1_no_http_answer_is_a_transport_request_failure(
    raw_server: MakeServer, wire: bytes, reason: str
) -> None:
    srv = await raw_server(_serve(wire, keep=False))
    with pytest.raises(LlmError) as info:
        await _drain(srv.url)
    assert (info.value.code, info.value.message) == (
        "TRANSPORT",
        f"Acme API request to {srv.url} failed: {reason}",
    )


async def test_h1_header_injection_is_refused_before_anything_is_sent(
    raw_server: MakeServer,
) -> None:
    srv = await raw_server(_serve(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"))
    with pytest.raises(LlmError) as info:
        await _drain(srv.url, {"X-Note": "a\r\nX-Injected: sk-secret-value"})
    assert info.value.code == "TRANSPORT"
    assert "the request header 'X-Note' is not valid" in info.value.message
    assert "sk-secret-value" not in info.value.message
    assert srv.connections <= 1  # a pooled connection may have been opened; nothing was sent


async def test_h1_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(LlmError) as info:
        await _drain("ftp://127.0.0.1:1")
    assert (
        info.value.message == "Acme API request to ftp://127.0.0.1:1 failed: the URL is not valid"
    )


async def test_h1_request_carries_host_length_and_the_exact_body(raw_server: MakeServer) -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()

    srv = await raw_server(handler)
    await _drain(srv.url)
    head, _, body = seen[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/chat HTTP/1.1"
    assert f"Host: {srv.url.removeprefix('http://')}".encode() in lines
    assert b"Content-Length: 8" in lines and body == b'{"a": 1}'


async def test_h1_large_body_read_slowly_arrives_whole(raw_server: MakeServer) -> None:
    # More than the high-water mark is sent at once: reading pauses, then resumes as it drains.
    payload = b"".join(b"data: %06d\n\n" % i for i in range(60_000))
    srv = await raw_server(_serve(SSE_HEAD + chunk(payload) + b"0\r\n\r\n"))
    got: list[bytes] = []
    async for data in _post(srv.url):
        got.append(data)
        await asyncio.sleep(0)
    assert b"".join(got) == payload


async def test_h1_close_sessions_closes_the_idle_pooled_connections(raw_server: MakeServer) -> None:
    srv = await raw_server(_serve(SSE_HEAD + chunk(b"data: 1\n\n") + b"0\r\n\r\n"))
    assert await _drain(srv.url) == b"data: 1\n\n"
    assert not srv.closed.is_set()
    await close_sessions()
    await asyncio.wait_for(srv.closed.wait(), 2)


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def trust(ca: trustme.CA, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The client trusts `ca` through SSL_CERT_FILE, set after the process made other TLS
    contexts (it is read per context, not once per process)."""
    with ca.cert_pem.tempfile() as path:
        monkeypatch.setenv("SSL_CERT_FILE", path)
        yield


async def _tls_server(ca: trustme.CA, reply: bytes) -> tuple[asyncio.Server, str]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)

    async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await read_request(reader)
            writer.write(reply)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_conn, "127.0.0.1", 0, ssl=context)
    return server, f"https://localhost:{server.sockets[0].getsockname()[1]}"


async def test_h1_tls_stream_verified_against_the_trust_store(ca: trustme.CA, trust: None) -> None:
    server, url = await _tls_server(ca, SSE_HEAD + chunk(b"data: secure\n\n") + b"0\r\n\r\n")
    try:
        assert await _drain(url) == b"data: secure\n\n"
    finally:
        server.close()
        await close_sessions()


async def test_h1_tls_certificate_not_trusted_is_a_tls_failure(ca: trustme.CA) -> None:
    server, url = await _tls_server(ca, b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
    try:
        with pytest.raises(LlmError) as info:
            await _drain(url)
        assert info.value.message == (
            f"Acme API request to {url} failed: TLS handshake failed: certificate verify "
            "failed: unable to get local issuer certificate"
        )
    finally:
        server.close()
        await close_sessions()


async def test_h1_close_sessions_also_closes_a_connection_lent_to_a_stream(
    raw_server: MakeServer,
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + chunk(b"data: 1\n\n"))
        await writer.drain()
        await reader.read()  # the stream stays open until the client closes it

    srv = await raw_server(handler)
    gen = _post(srv.url)
    assert await gen.__anext__() == b"data: 1\n\n"
    await close_sessions()
    await asyncio.wait_for(srv.closed.wait(), 2)
    with pytest.raises(LlmError) as info:
        await gen.__anext__()
    assert info.value.message.endswith("failed: the response body was cut off")


def test_h1_a_finished_event_loop_is_not_kept_alive_by_its_pools() -> None:
    # The per-loop tables are keyed weakly; their loop-shutdown closers drop the entries.
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def one() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            await writer.drain()

        srv = await asyncio.start_server(handler, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
        loops.append(weakref.ref(asyncio.get_running_loop()))
        assert await _drain(url) == b"ok"
        srv.close()

    for _ in range(3):
        asyncio.run(one())
    gc.collect()
    assert [ref() for ref in loops] == [None, None, None]


_HOSTILE = {
    "chunk-2^80-after-a-good-chunk": (
        SSE_HEAD + chunk(b"data: 1\n\n") + b"%x\r\n" % 2**80,
        "stream from",
        "the chunked response body is malformed (chunk size overflow)",
    ),
    "100-continue-flood": (
        b"HTTP/1.1 100 Continue\r\n\r\n" * 5000,
        "request to",
        "the response head is too large",
    ),
    "10000-obs-fold-lines": (
        b"HTTP/1.1 200 OK\r\nX-A: a\r\n" + b" folded\r\n" * 10_000 + b"\r\n",
        "request to",
        "the response head is malformed (unexpected whitespace after header value)",
    ),
    "bare-lf-in-a-request-id": (
        b"HTTP/1.1 429 Too Many\r\nx-request-id: req-1\nInjected: yes\r\ncontent-length: 0\r\n\r\n",
        "request to",
        "the response head is malformed (missing expected CR after header value)",
    ),
    "head-over-64-kib-in-one-read": (
        b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"p" * 70_000 + b"\r\ncontent-length: 2\r\n\r\nok",
        "request to",
        "the response head is too large",
    ),
}


@pytest.mark.parametrize("case", list(_HOSTILE), ids=list(_HOSTILE))
async def test_h1_hostile_framings_end_in_one_classified_failure(
    raw_server: MakeServer, case: str
) -> None:
    """Issue 29's HTTP-client cases: each is one TRANSPORT failure (never a clean end, never a
    request id from a broken head), found without re-parsing (one read of each)."""
    wire, stage, reason = _HOSTILE[case]
    srv = await raw_server(_serve(wire, keep=False))
    got: list[bytes] = []
    with pytest.raises(LlmError) as info:
        async for data in _post(srv.url):
            got.append(data)
    assert (info.value.code, info.value.message) == (
        "TRANSPORT",
        f"Acme API {stage} {srv.url} failed: {reason}",
    )
    assert info.value.failure.request_id is None
    assert got == ([b"data: 1\n\n"] if stage == "stream from" else [])


async def test_h1_content_length_with_transfer_encoding_fails_and_never_reuses_the_connection(
    raw_server: MakeServer,
) -> None:
    both = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n"
    srv = await raw_server(_serve(both + chunk(b"hello") + b"0\r\n\r\n"))
    for _ in range(2):
        with pytest.raises(LlmError) as info:
            await _drain(srv.url)
        assert info.value.code == "TRANSPORT"
        assert info.value.message.endswith(
            "the response head is malformed (Transfer-Encoding can't be present with Content-Length)"
        )
    assert srv.connections == 2  # the first connection was closed, not reused


async def test_h1_a_redirect_is_not_followed_and_its_failure_names_the_location(
    raw_server: MakeServer,
) -> None:
    moved = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: https://elsewhere.test/v1/chat\r\n"
    srv = await raw_server(_serve(moved + b"content-length: 0\r\n\r\n"))
    with pytest.raises(LlmError) as info:
        await _drain(srv.url)
    assert info.value.status == 307
    assert info.value.message == (
        "Acme API error (HTTP 307) redirecting to https://elsewhere.test/v1/chat"
    )
    assert srv.connections == 1
