"""Spec G.4 (adapter.spec) cases 1-32: requests, headers, HTTP failures, watchdog and abort,
against a real aiohttp server on 127.0.0.1 (directly and through `LlmRuntime`)."""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate
from typing import Any

import pytest
from aiohttp import web
from deepseek_helpers import (
    HELLO,
    Server,
    collect,
    json_error,
    make_adapter,
    options,
    sse_bytes,
    sse_response,
    text_chunk,
)

import modelwire.adapters.deepseek as deepseek_pkg
from modelwire import (
    BlockEnd,
    CallConfig,
    Error,
    Finish,
    GenerateOptions,
    ImageAttachmentRef,
    ImageBlock,
    LlmError,
    LlmRuntime,
    Stop,
    TextBlock,
    TokenUsage,
    user_message,
)
from modelwire.wire.attribution import user_agent

ROUTE = "deepseek-official"


def runtime_with(adapter: Any) -> LlmRuntime:
    rt = LlmRuntime()
    rt.register_adapter([ROUTE], adapter)
    return rt


def image_options(model: str) -> GenerateOptions:
    img = ImageBlock(ImageAttachmentRef("att", "image/png", 3, 1, 1))
    return GenerateOptions(
        provider=ROUTE, model=model, messages=(user_message([TextBlock("describe "), img]),)
    )


async def finish_of(rt: LlmRuntime, opts: GenerateOptions) -> Finish:
    chunks = await collect(rt.stream(opts))
    last = chunks[-1]
    assert isinstance(last, Finish)
    return last


async def failure(server: Server, handler: Any, **kw: Any) -> LlmError:
    server.queue(handler)
    with pytest.raises(LlmError) as info:
        await collect(make_adapter(server, **kw).stream(options()))
    return info.value


async def test_g4_01_end_to_end_text_through_runtime(server: Server) -> None:
    server.queue(sse_response(HELLO))
    rt = runtime_with(make_adapter(server))
    result = await rt.generate(options(provider=ROUTE))
    assert result.message.content == (TextBlock("hello"),)
    assert result.finish == Stop()
    assert result.usage == TokenUsage(3, 1)
    req = server.requests[0]
    body = req.json
    assert body["max_tokens"] == 256000 and body["reasoning_effort"] == "high"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert req.headers["user-agent"] == user_agent()
    assert req.headers["authorization"] == "Bearer sk-test-key-123456"
    assert not [h for h in req.headers if "session" in h or "compact" in h]
    assert not {"http-referer", "x-openrouter-title", "x-openrouter-categories"} & set(req.headers)


async def test_g4_02_vision_catalog_model_still_rejects_images_before_io(server: Server) -> None:
    models = [{"id": "vision", "input_modalities": ["text", "image"]}]
    rt = runtime_with(make_adapter(server, models=models))
    fin = await finish_of(rt, image_options("vision"))
    assert isinstance(fin.reason, Error) and fin.reason.failure.code == "UNSUPPORTED_CONTENT"
    assert server.requests == []


@pytest.mark.parametrize("model", ["deepseek-v4-flash", "unlisted-pass-through"])
async def test_g4_03_image_to_text_only_model_rejected_before_key_and_io(
    server: Server, model: str
) -> None:
    adapter = make_adapter(server, api_key=None, env={})  # keyless: a key lookup would fail first
    with pytest.raises(LlmError) as info:
        await collect(adapter.stream(image_options(model)))
    assert info.value.code == "UNSUPPORTED_CONTENT"
    assert f'"{model}"' in info.value.message
    assert server.requests == []


async def test_g4_04_vision_model_image_rejected_before_key_resolution(server: Server) -> None:
    adapter = make_adapter(
        server, api_key=None, env={}, models=[{"id": "v", "input_modalities": ["image", "text"]}]
    )
    with pytest.raises(LlmError) as info:
        await collect(adapter.stream(image_options("v")))
    assert info.value.code == "UNSUPPORTED_CONTENT"
    assert server.requests == []


async def test_g4_05_raw_chunk_kinds_through_runtime_stream(server: Server) -> None:
    server.queue(
        sse_response([text_chunk("x", "stop", usage={"prompt_tokens": 1, "completion_tokens": 1})])
    )
    chunks = await collect(runtime_with(make_adapter(server)).stream(options(provider=ROUTE)))
    assert [c.type for c in chunks] == ["block-start", "text-delta", "block-end", "usage", "finish"]


async def test_g4_06_session_id_is_never_sent_to_the_provider(server: Server) -> None:
    server.queue(sse_response(HELLO))
    await collect(make_adapter(server).stream(options(session_id="s-42")))
    req = server.requests[0]
    assert "s-42" not in repr(req.headers) and b"s-42" not in req.body


async def test_g4_07_compaction_purpose_changes_nothing_on_the_wire(server: Server) -> None:
    server.queue(sse_response(HELLO), sse_response(HELLO))
    adapter = make_adapter(server)
    await collect(adapter.stream(options(purpose="compaction")))
    await collect(adapter.stream(options()))
    a, b = server.requests
    assert a.body == b.body and set(a.headers) == set(b.headers)


async def test_g4_08_default_low_then_off_then_max(server: Server) -> None:
    server.default = sse_response(HELLO)
    rt = runtime_with(make_adapter(server, reasoning={"effort": "low"}))
    for effort in (None, "off", "max"):
        await rt.generate(options(provider=ROUTE, reasoning_effort=effort))
    bodies = [r.json for r in server.requests]
    assert [(b.get("thinking"), b.get("reasoning_effort")) for b in bodies] == [
        ({"type": "enabled"}, "low"),
        ({"type": "disabled"}, None),
        ({"type": "enabled"}, "max"),
    ]


async def test_g4_09_configured_max_tokens_is_default_explicit_wins(server: Server) -> None:
    server.default = sse_response(HELLO)
    rt = runtime_with(make_adapter(server, max_tokens=32000))
    await rt.generate(options(provider=ROUTE))
    await rt.generate(options(provider=ROUTE, max_tokens=8192))
    assert [r.json["max_tokens"] for r in server.requests] == [32000, 8192]


async def test_g4_10_thinking_disabled_sends_disabled_and_publishes_only_off(
    server: Server,
) -> None:
    server.queue(sse_response(HELLO))
    adapter = make_adapter(server, reasoning={"thinking": "disabled"})
    rt = runtime_with(adapter)
    await rt.generate(options(provider=ROUTE))
    body = server.requests[0].json
    assert body["thinking"] == {"type": "disabled"} and "reasoning_effort" not in body
    info = await rt.resolve_model_info(ROUTE, "deepseek-v4-flash")
    assert info.reasoning is not None
    assert [e.id for e in info.reasoning.efforts] == [
        "off"
    ] and info.reasoning.default_effort == "off"


async def test_g4_11_disabled_rejects_high_through_runtime_without_request(server: Server) -> None:
    rt = runtime_with(make_adapter(server, reasoning={"thinking": "disabled"}))
    fin = await finish_of(rt, options(provider=ROUTE, reasoning_effort="high"))
    assert isinstance(fin.reason, Error)
    assert fin.reason.failure.code == "UNSUPPORTED_REASONING_EFFORT"
    with pytest.raises(LlmError) as info:
        await rt.prepare_call(CallConfig(provider=ROUTE, model="m", reasoning_effort="high"))
    assert info.value.code == "UNSUPPORTED_REASONING_EFFORT"
    assert server.requests == []


@pytest.mark.parametrize("effort", ["high", "max"])
async def test_g4_12_disabled_rejects_effort_on_direct_adapter(server: Server, effort: str) -> None:
    adapter = make_adapter(server, reasoning={"thinking": "disabled"})
    with pytest.raises(LlmError) as info:
        await collect(adapter.stream(options(reasoning_effort=effort)))
    assert info.value.code == "UNSUPPORTED_REASONING_EFFORT"
    assert server.requests == []


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, "AUTH"),
        (403, "AUTH"),
        (429, "RATE_LIMIT"),
        (400, "INVALID_REQUEST"),
        (500, "SERVER"),
        (503, "SERVER"),
    ],
)
async def test_g4_13_status_maps_to_code(server: Server, status: int, code: str) -> None:
    err = await failure(server, json_error(status, {"error": {"message": f"boom {status}"}}))
    assert (err.code, err.failure.status) == (code, status)
    assert err.message == f"DeepSeek API error (HTTP {status}): boom {status}"


async def test_g4_14_400_context_wording_is_context_window_exceeded(server: Server) -> None:
    body = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens",
            "code": "context_length_exceeded",
        }
    }
    assert (await failure(server, json_error(400, body))).code == "CONTEXT_WINDOW_EXCEEDED"


async def test_g4_15_429_retry_after_and_request_id_through_runtime(server: Server) -> None:
    server.queue(
        json_error(
            429,
            {"error": {"message": "slow down"}},
            {"retry-after": "2", "x-request-id": "req-429"},
        )
    )
    fin = await finish_of(runtime_with(make_adapter(server)), options(provider=ROUTE))
    assert isinstance(fin.reason, Error)
    f = fin.reason.failure
    assert (f.code, f.status, f.provider_retry_after_ms, f.request_id) == (
        "RATE_LIMIT",
        429,
        2000,
        "req-429",
    )
    assert f.message == "DeepSeek API error (HTTP 429): slow down"


async def test_g4_16_503_http_date_retry_after_and_fallback_request_id(server: Server) -> None:
    when = formatdate(time.time() + 4, usegmt=True)
    headers = {"retry-after": when, "x-deepseek-request-id": "ds-1"}
    err = await failure(server, json_error(503, {"error": {"message": "busy"}}, headers))
    assert err.failure.request_id == "ds-1"
    assert err.failure.provider_retry_after_ms is not None
    assert 2000 < err.failure.provider_retry_after_ms <= 4000


@pytest.mark.parametrize(
    "value",
    ["0", "9" * 400, "not-a-date", "Thu, 01 Jan 1970 00:00:00 GMT"],
    ids=["zero", "400-digits", "text", "epoch-0"],
)
async def test_g4_17_unusable_retry_after_omitted(server: Server, value: str) -> None:
    err = await failure(
        server, json_error(429, {"error": {"message": "x"}}, {"retry-after": value})
    )
    assert err.failure.provider_retry_after_ms is None


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        pytest.param(
            400,
            {"message": "request too large for model context"},
            "CONTEXT_WINDOW_EXCEEDED",
            id="overflow",
        ),
        pytest.param(
            400,
            {"message": "invalid input: temperature exceeds maximum allowed value"},
            "INVALID_REQUEST",
            id="temperature",
        ),
        pytest.param(
            413,
            {"message": "too big", "code": "context_length_exceeded"},
            "INVALID_REQUEST",
            id="413",
        ),
    ],
)
async def test_g4_18_http_error_code_rows(
    server: Server, status: int, error: Any, code: str
) -> None:
    assert (await failure(server, json_error(status, {"error": error}))).code == code


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ({"message": "You exceeded your current quota", "code": "insufficient_quota"}, "QUOTA"),
        ({"message": "request rate limit exceeded"}, "RATE_LIMIT"),
    ],
    ids=["quota", "rate"],
)
async def test_g4_19_429_quota_vs_rate_limit(server: Server, error: Any, code: str) -> None:
    assert (await failure(server, json_error(429, {"error": error}))).code == code


async def test_g4_20_json_error_without_message_keeps_status_line(server: Server) -> None:
    err = await failure(server, json_error(500, {"error": {"type": "server_error"}}))
    assert (err.code, err.message) == ("SERVER", "DeepSeek API error (HTTP 500)")


async def test_g4_21_non_json_502_keeps_status_line(server: Server) -> None:
    err = await failure(server, json_error(502, "<html><h1>502 Bad Gateway</h1></html>"))
    assert err.code == "SERVER" and "HTTP 502" in err.message and "<html>" not in err.message


async def test_g4_22_unusual_status_418(server: Server) -> None:
    assert (await failure(server, json_error(418, "teapot"))).code == "HTTP_418"


async def test_g4_23_unbound_port_is_transport_with_exact_message() -> None:
    adapter = make_adapter(base_url="http://127.0.0.1:1")
    with pytest.raises(LlmError) as info:
        await collect(adapter.stream(options()))
    assert info.value.code == "TRANSPORT"
    assert (
        info.value.message
        == "DeepSeek API request to http://127.0.0.1:1 failed: connection refused"
    )


async def test_g4_24_pre_cancelled_consumer_makes_no_request(server: Server) -> None:
    server.default = sse_response(HELLO)
    rt = runtime_with(make_adapter(server))
    task = asyncio.create_task(collect(rt.stream(options(provider=ROUTE))))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert server.requests == []


async def test_g4_25_200_without_body_is_empty_response(server: Server) -> None:
    async def empty(request: web.Request) -> web.StreamResponse:
        return web.Response(status=200)

    err = await failure(server, empty)
    assert err.code == "EMPTY_RESPONSE" and err.message.endswith("no response body")


async def test_g4_26_socket_dropped_mid_body_is_transport() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        part = sse_bytes([text_chunk("a")], done=False)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            + f"{len(part):x}\r\n".encode()
            + part
            + b"\r\n"
            + b"ff\r\ndata: {"
        )
        await writer.drain()
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
    try:
        with pytest.raises(LlmError) as info:
            await collect(make_adapter(base_url=url).stream(options()))
        assert info.value.code == "TRANSPORT"
        assert info.value.message.startswith(f"DeepSeek API stream from {url} failed: ")
    finally:
        srv.close()


async def test_g4_27_cancel_mid_stream_before_any_chunk_tears_down(server: Server) -> None:
    closed = asyncio.Event()

    async def stall(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(b": waiting\n\n")
        try:
            await asyncio.sleep(10)
        finally:
            closed.set()
        return resp

    server.queue(stall)
    task = asyncio.create_task(
        collect(runtime_with(make_adapter(server)).stream(options(provider=ROUTE)))
    )
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(closed.wait(), 2)


async def test_g4_28_rejected_http_call_chains_original_cause() -> None:
    with pytest.raises(LlmError) as info:
        await collect(make_adapter(base_url="http://127.0.0.1:1").stream(options()))
    assert isinstance(info.value.cause, OSError)  # the connector error, chained as cause
    assert info.value.__cause__ is info.value.cause


async def test_g4_29_malformed_endpoint_keeps_cause_and_endpoint_in_message() -> None:
    # modelwire refuses a malformed endpoint when the adapter is configured, naming the field...
    with pytest.raises(LlmError) as bad:
        make_adapter(base_url="http://127.0.0.1:99999")
    assert bad.value.code == "INVALID_CONFIG" and "base_url" in bad.value.message
    # ...and a transport rejection keeps its cause and the endpoint in the message.
    with pytest.raises(LlmError) as info:
        await collect(make_adapter(base_url="http://127.0.0.1:1").stream(options()))
    assert info.value.code == "TRANSPORT"
    assert "http://127.0.0.1:1" in info.value.message and info.value.cause is not None


async def test_g4_30_idle_body_times_out_and_is_aborted(server: Server) -> None:
    closed = asyncio.Event()

    async def idle(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(sse_bytes([text_chunk("a")], done=False))
        try:
            await asyncio.sleep(10)
        finally:
            closed.set()
        return resp

    err = await failure(server, idle, stream_idle_timeout_ms=100)
    assert (err.code, err.message) == ("TIMEOUT", "DeepSeek stream idle timeout after 100ms")
    await asyncio.wait_for(closed.wait(), 2)


async def test_g4_31_keep_alives_every_75ms_keep_100ms_watchdog_alive(server: Server) -> None:
    async def slow(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        for _ in range(5):
            await resp.write(b": keep-alive\n\n")
            await asyncio.sleep(0.075)
        await resp.write(sse_bytes(HELLO))
        await resp.write_eof()
        return resp

    server.queue(slow)
    chunks = await collect(make_adapter(server, stream_idle_timeout_ms=100).stream(options()))
    assert chunks[-3] == BlockEnd(0, TextBlock("hello")) and chunks[-1] == Finish(Stop())


def test_g4_32_package_root_exports_only_adapter_and_config() -> None:
    assert set(deepseek_pkg.__all__) == {
        "DeepSeekAdapter",
        "DeepSeekConfig",
        "DeepSeekModel",
        "DeepSeekReasoning",
    }
    for name in (
        "build_body",
        "Translator",
        "SseDecoder",
        "failure_for_status",
        "serialize_messages",
    ):
        assert not hasattr(deepseek_pkg, name)
