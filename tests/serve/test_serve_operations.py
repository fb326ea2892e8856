"""Operations and bad input: Responses through the SDK, structured output, fallbacks and retries
from the route's policy (decisions in the log), /metrics, a client that disconnects mid-stream,
malformed bodies, unknown models, oversized bodies, keys in the URL, a malformed embeddings body."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import openai
import pytest
from serve_helpers import ADMIN, MockServer, Reply, anthropic_text, chat_text, config, gateway

from modelwire.serve.handlers import GATEWAY

FAST = {
    "mode": "normal",
    "max_retries": 1,
    "backoff": {"initial_delay_ms": 1, "max_delay_ms": 1, "jitter_ratio": 0},
}
HEADERS = {"Authorization": f"Bearer {ADMIN}"}


def _client(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key=ADMIN, max_retries=0)


def _server_error() -> Reply:
    return Reply(
        status=500, body=json.dumps({"error": {"message": "upstream down", "type": "server_error"}})
    )


async def test_responses_whole_and_streamed_through_the_openai_sdk() -> None:
    async with (
        MockServer([chat_text("one"), chat_text("t", "wo")]) as up,
        MockServer([anthropic_text("x")]) as an,
    ):
        async with gateway(config(up.url, an.url)) as (_, url):
            client = _client(url)
            whole = await client.responses.create(model="oa:m", input="hi", instructions="be brief")
            assert whole.output_text == "one" and whole.status == "completed"
            assert whole.usage is not None and whole.usage.input_tokens == 7
            assert up.bodies[0]["messages"][0]["content"] == "be brief"
            async with client.responses.stream(
                model="oa:m", input=[{"role": "user", "content": "hi"}]
            ) as stream:
                deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
                final = await stream.get_final_response()
            assert "".join(deltas) == "two" and final.output_text == "two"


async def test_structured_output_json_schema_reaches_the_route() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    async with (
        MockServer([chat_text('{"n":', "4}")]) as up,
        MockServer([anthropic_text("x")]) as an,
    ):
        async with gateway(config(up.url, an.url)) as (_, url):
            reply = await _client(url).chat.completions.create(
                model="oa:m",
                messages=[{"role": "user", "content": "2+2"}],
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "sum", "schema": schema, "strict": True},
                },
            )
            assert json.loads(reply.choices[0].message.content or "") == {"n": 4}
            sent = up.bodies[0]
            assert "sum" in json.dumps(sent) and "additionalProperties" in json.dumps(sent)


async def test_a_failing_route_is_retried_then_falls_back_and_the_log_holds_the_decisions() -> None:
    async with (
        MockServer([_server_error()]) as up,
        MockServer([anthropic_text("from ", "backup")]) as an,
    ):
        settings = config(
            up.url, an.url, fallbacks={"oa:m": ["an:claude-x"]}, models={"main": "oa:m"}
        )
        settings["providers"]["oa"]["retry_policy"] = FAST
        async with gateway(settings) as (app, url):
            reply = await _client(url).chat.completions.create(
                model="main", messages=[{"role": "user", "content": "hi"}]
            )
            assert reply.choices[0].message.content == "from backup"
            assert len(up.bodies) == 2  # the first attempt and its one retry
            log = app[GATEWAY].log
            (info,) = await log.sessions()
            types = [e.type for e in await log.read(info.session_id)]
            assert types.count("llm/retry") == 1 and types.count("llm/fallback") == 1
            fallback = await log.latest(info.session_id, "llm/fallback")
            assert fallback is not None and fallback.data.to_route == "an"  # type: ignore[attr-defined]


async def test_an_upstream_failure_reaches_the_client_with_its_status_and_shape() -> None:
    async with MockServer([_server_error()]) as up, MockServer([anthropic_text("x")]) as an:
        settings = config(up.url, an.url)
        settings["providers"]["oa"]["retry_policy"] = FAST
        async with gateway(settings) as (_, url):
            with pytest.raises(openai.APIStatusError) as failed:
                await _client(url).chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}]
                )
            assert failed.value.status_code == 502 and failed.value.code == "SERVER"
            assert "oa:m" in failed.value.message
            assert "sk-upstream" not in json.dumps(failed.value.body)


async def test_metrics_count_requests_tokens_cost_and_latency_per_route_and_key() -> None:
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url)) as (_, url):
            await _client(url).chat.completions.create(
                model="oa:m", messages=[{"role": "user", "content": "hi"}]
            )
            with pytest.raises(openai.NotFoundError):
                await _client(url).chat.completions.create(
                    model="nope:m", messages=[{"role": "user", "content": "hi"}]
                )
            async with aiohttp.ClientSession() as http, http.get(url + "/metrics") as resp:
                text = await resp.text()
                assert resp.headers["Content-Type"].startswith("text/plain")
    assert (
        'modelwire_gateway_requests_total{endpoint="/v1/chat/completions",route="oa",key="admin",status="200"} 1'
        in text
    )
    assert 'modelwire_gateway_tokens_total{route="oa",key="admin",kind="output"} 3' in text
    assert 'modelwire_gateway_cost_usd_total{route="oa",key="admin"} 0.013' in text
    assert 'modelwire_gateway_errors_total{route="-",key="admin",code="NO_ADAPTER"} 1' in text
    assert 'modelwire_gateway_request_seconds_count{route="oa",key="admin"} 1' in text
    assert ADMIN not in text


async def test_a_client_that_disconnects_mid_stream_cancels_the_upstream_call() -> None:
    slow = chat_text(*[f"w{i}" for i in range(50)])
    slow.delay = 0.05
    async with MockServer([slow]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url)) as (app, url):
            body = {
                "model": "oa:m",
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            }
            async with aiohttp.ClientSession() as http:
                resp = await http.post(url + "/v1/chat/completions", json=body, headers=HEADERS)
                await resp.content.readline()  # the stream started
                resp.close()  # the client goes away
            log = app[GATEWAY].log
            for _ in range(200):  # a hang guard: the turn ends once the upstream call is cancelled
                sessions = await log.sessions()
                end = await log.latest(sessions[0].session_id, "turn/end") if sessions else None
                if end is not None:
                    break
                await asyncio.sleep(0.05)
            assert end is not None and end.data.reason.kind == "aborted"  # type: ignore[attr-defined]
            message = await log.latest(sessions[0].session_id, "assistant/message")
            assert message is None or message.data.interrupted  # type: ignore[attr-defined]
            for _ in range(200):
                if up.closed:
                    break
                await asyncio.sleep(0.05)
            assert up.closed == 1  # the upstream stream was cut, not read to its end


@pytest.mark.parametrize(
    ("path", "body", "status", "code", "needle"),
    [
        ("/v1/chat/completions", b"{not json", 400, "INVALID_REQUEST", "not valid JSON"),
        ("/v1/chat/completions", b"[1]", 400, "INVALID_REQUEST", "must be a JSON object"),
        (
            "/v1/chat/completions",
            b'{"model": "oa:m"}',
            400,
            "INVALID_REQUEST",
            "messages: is required",
        ),
        (
            "/v1/chat/completions",
            b'{"model": "oa:m", "messages": [{"role": "user", "content": 5}]}',
            400,
            "INVALID_REQUEST",
            "messages[0].content",
        ),
        (
            "/v1/chat/completions",
            b'{"model": "ghost", "messages": [{"role": "user", "content": "x"}]}',
            404,
            "UNKNOWN_MODEL",
            "'ghost'",
        ),
        (
            "/v1/chat/completions",
            b'{"model": "ghost:m", "messages": [{"role": "user", "content": "x"}]}',
            404,
            "NO_ADAPTER",
            "no route 'ghost'",
        ),
        (
            "/v1/messages",
            b'{"model": "an:claude-x", "messages": []}',
            400,
            "INVALID_REQUEST",
            "max_tokens: is required",
        ),
        (
            "/v1/chat/completions?api_key=mwk_leaked",
            b"{}",
            400,
            "INVALID_REQUEST",
            "never in the URL",
        ),
        (
            "/v1/embeddings",
            b'{"model": "oa:m", "input": 5}',
            400,
            "INVALID_REQUEST",
            "input:",
        ),
    ],
)
async def test_bad_input_gets_a_clear_error_in_the_clients_shape(
    path: str, body: bytes, status: int, code: str, needle: str
) -> None:
    async with MockServer([chat_text("x")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url)) as (_, url):
            async with (
                aiohttp.ClientSession() as http,
                http.post(url + path, data=body, headers=HEADERS) as resp,
            ):
                payload: Any = await resp.json()
    assert resp.status == status
    error = payload["error"]
    assert error["code"] == code and needle in error["message"]
    if path.startswith("/v1/messages"):
        assert payload["type"] == "error" and error["type"] == "invalid_request_error"
    assert "mwk_leaked" not in json.dumps(payload)
    assert up.bodies == []


async def test_a_body_over_the_limit_is_413() -> None:
    async with MockServer([chat_text("x")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url, max_body_bytes=1000)) as (_, url):
            body = {"model": "oa:m", "messages": [{"role": "user", "content": "x" * 2000}]}
            with pytest.raises(openai.APIStatusError) as big:
                await _client(url).chat.completions.create(**body)  # type: ignore[call-overload]
    assert big.value.status_code == 413 and "1000 bytes" in big.value.message


async def test_telemetry_gives_a_server_span_per_request_parent_of_the_upstream_span() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url), telemetry=True, tracer_provider=provider) as (
            _,
            url,
        ):
            client = openai.AsyncOpenAI(
                base_url=url + "/v1",
                api_key=ADMIN,
                max_retries=0,
                default_headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"},
            )
            await client.chat.completions.create(
                model="oa:m", messages=[{"role": "user", "content": "hi"}]
            )
    spans = {s.name: s for s in exporter.get_finished_spans()}
    server = spans["POST /v1/chat/completions"]
    (upstream,) = [s for s in spans.values() if s is not server]
    assert upstream.attributes is not None and upstream.attributes["gen_ai.request.model"] == "m"
    assert upstream.parent is not None and upstream.parent.span_id == server.context.span_id
    assert format(server.context.trace_id, "032x") == trace_id  # the client's trace
    assert server.attributes is not None and server.attributes["http.response.status_code"] == 200
    assert ADMIN not in str(server.attributes) + str(upstream.attributes)


async def test_a_body_that_never_arrives_whole_is_408() -> None:
    async with MockServer([chat_text("x")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url, read_timeout_ms=100)) as (_, url):
            host, port = url.removeprefix("http://").split(":")
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer "
                + ADMIN.encode()
                + b'\r\nContent-Length: 500\r\n\r\n{"model"'
            )
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)  # a hang guard
            body = await asyncio.wait_for(reader.read(2000), 30)
            writer.close()
    assert head.startswith(b"HTTP/1.1 408")
    assert b'"code":"TIMEOUT"' in body.replace(b" ", b"")
    assert up.bodies == []


def test_one_config_file_serves_chat_and_serve(tmp_path: Any) -> None:
    from serve_helpers import UPSTREAM_KEYS, toml_config

    from modelwire.agent.setup import open_runtime

    path = tmp_path / "shared.toml"
    path.write_text(
        toml_config(config("http://127.0.0.1:9", "http://127.0.0.1:9", models={"f": "oa:m"}))
    )
    runtime = open_runtime(path, env=UPSTREAM_KEYS)  # `modelwire chat` reads the same file
    assert "oa" in [p.id for p in runtime.list_providers()]


async def test_requests_on_one_session_are_its_turns_in_order() -> None:
    slow = chat_text("a", "b", "c")
    slow.delay = 0.02
    async with MockServer([slow]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url)) as (app, url):
            client = openai.AsyncOpenAI(
                base_url=url + "/v1",
                api_key=ADMIN,
                max_retries=0,
                default_headers={"x-modelwire-session": "chat-42"},
            )
            replies = await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="oa:m", messages=[{"role": "user", "content": f"q{i}"}]
                    )
                    for i in range(3)
                )
            )
            assert [r.choices[0].message.content for r in replies] == ["abc"] * 3
            events = await app[GATEWAY].log.read("chat-42")
    starts = [e.data.turn for e in events if e.type == "turn/start"]  # type: ignore[attr-defined]
    ends = [e.data.turn for e in events if e.type == "turn/end"]  # type: ignore[attr-defined]
    assert starts == ends == [1, 2, 3]
    order = [e.type for e in events if e.type in ("turn/start", "turn/end")]
    assert order == ["turn/start", "turn/end"] * 3  # one at a time, never interleaved
