"""OpenTelemetry GenAI spans and metrics for model calls (the SDK's in-memory exporter and reader),
over the DeepSeek adapter and the providers adapter talking to a real server on 127.0.0.1.

Rules pinned: one CLIENT span per model call named `chat <model>` with the GenAI attributes; a
failed call (429) carries `error.type` = the failure code and status ERROR; a retried step gives
one span per attempt; token usage and duration histograms are recorded; message content only
when opted in; `import modelwire` does not import OpenTelemetry.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import modelwire as mw
from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.telemetry import instrument


def _chat_body(text: str) -> bytes:
    chunks = [
        {
            "id": "chatcmpl-1",
            "model": "served-model",
            "choices": [{"index": 0, "delta": {"content": text}}],
        },
        {
            "id": "chatcmpl-1",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 12,
                "completion_tokens": 3,
                "prompt_tokens_details": {"cached_tokens": 4},
                "prompt_cache_hit_tokens": 4,
                "prompt_cache_miss_tokens": 8,
            },
        },
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


class Server:
    """Answers each POST with the next scripted reply: an int status (error JSON) or SSE text."""

    def __init__(self, replies: list[int | str]) -> None:
        self.replies = replies
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Server:
        async def handle(request: web.Request) -> web.StreamResponse:
            await request.read()
            reply = self.replies.pop(0)
            if isinstance(reply, int):
                body = {"error": {"message": "slow down", "type": "rate_limit"}}
                return web.json_response(body, status=reply, headers={"retry-after": "0"})
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(_chat_body(reply))
            await response.write_eof()
            return response

        app = web.Application()
        app.router.add_post("/{tail:.*}", handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


@pytest.fixture
def otel() -> tuple[TracerProvider, InMemorySpanExporter, MeterProvider, InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    return tracer_provider, exporter, MeterProvider(metric_readers=[reader]), reader


def _deepseek(url: str) -> mw.LlmRuntime:
    rt = mw.LlmRuntime()
    rt.register_adapter(
        ["deepseek"], DeepSeekAdapter(api_key="sk-test-key-000000", base_url=url, env={})
    )
    return rt


def _ask(route: str = "deepseek", model: str = "deepseek-v4-flash") -> mw.GenerateOptions:
    return mw.GenerateOptions(
        route, model, (mw.user_message("hi"),), temperature=0.5, max_tokens=64
    )


async def test_a_successful_call_is_one_client_span_with_the_genai_attributes(otel: Any) -> None:
    tracer_provider, exporter, meter_provider, reader = otel
    async with Server(["hello"]) as server:
        rt = _deepseek(server.url)
        instrument(rt, tracer_provider=tracer_provider, meter_provider=meter_provider)
        result = await rt.generate(_ask())
    assert result.finish == mw.Stop()
    (span,) = exporter.get_finished_spans()
    assert span.name == "chat deepseek-v4-flash"
    assert span.kind is SpanKind.CLIENT
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "deepseek"
    assert attrs["gen_ai.request.model"] == "deepseek-v4-flash"
    assert attrs["gen_ai.request.temperature"] == 0.5
    assert attrs["gen_ai.request.max_tokens"] == 64
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["gen_ai.usage.input_tokens"] == 12
    assert attrs["gen_ai.usage.output_tokens"] == 3
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 4
    assert "error.type" not in attrs
    assert "gen_ai.input.messages" not in attrs  # content only when opted in
    assert span.status.status_code is not StatusCode.ERROR
    metrics = _metrics(reader)
    assert sorted(metrics["gen_ai.client.token.usage"]) == [("input", 12), ("output", 3)]
    assert metrics["gen_ai.client.operation.duration"] == [("chat", 1)]


def _metrics(reader: InMemoryMetricReader) -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:  # type: ignore[attr-defined]
                    attrs = dict(point.attributes or {})
                    key = str(attrs.get("gen_ai.token.type", attrs.get("gen_ai.operation.name")))
                    value = int(point.sum) if metric.name.endswith("token.usage") else point.count
                    out.setdefault(metric.name, []).append((key, value))
    return out


async def test_a_429_is_a_span_with_error_type_the_failure_code(otel: Any) -> None:
    tracer_provider, exporter, meter_provider, _ = otel
    async with Server([429]) as server:
        rt = _deepseek(server.url)
        instrument(rt, tracer_provider=tracer_provider, meter_provider=meter_provider)
        result = await rt.generate(_ask())
    assert isinstance(result.finish, mw.Error)
    (span,) = exporter.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert attrs["error.type"] == "RATE_LIMIT"
    assert attrs["gen_ai.response.finish_reasons"] == ("error",)
    assert span.status.status_code is StatusCode.ERROR


async def test_a_retried_step_gives_one_span_per_attempt(otel: Any) -> None:
    from modelwire.agent import Agent
    from modelwire.retry import RetryPlugin
    from modelwire.session import open_log

    tracer_provider, exporter, meter_provider, _ = otel
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async with Server([429, "recovered"]) as server:
        rt = _deepseek(server.url)
        instrument(rt, tracer_provider=tracer_provider, meter_provider=meter_provider)
        log = await open_log("memory:")
        agent = Agent(rt, log, "deepseek", "deepseek-v4-flash", plugins=[RetryPlugin(sleep=sleep)])
        result = await agent.run_turn("s1", "hi")
    assert result.reason.kind == "completed" and slept
    first, second = exporter.get_finished_spans()
    assert dict(first.attributes or {})["error.type"] == "RATE_LIMIT"
    assert "error.type" not in dict(second.attributes or {})
    assert dict(second.attributes or {})["gen_ai.conversation.id"] == "s1"


async def test_the_providers_adapter_call_names_the_response_id_and_model(otel: Any) -> None:
    tracer_provider, exporter, meter_provider, _ = otel
    async with Server(["hi there"]) as server:
        profile = {
            "api": "openai-completions",
            "base_url": server.url + "/v1",
            "api_key_env": "GW_KEY",
            "models": [{"id": "m"}],
        }
        adapter = ProvidersAdapter.from_config({"providers": {"gw": profile}}, env={"GW_KEY": "k"})
        rt = mw.LlmRuntime()
        adapter.register(rt)
        instrument(
            rt, tracer_provider=tracer_provider, meter_provider=meter_provider, capture_content=True
        )
        await rt.generate(_ask("gw", "m"))
    (span,) = exporter.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.response.id"] == "chatcmpl-1"
    assert attrs["gen_ai.response.model"] == "served-model"
    assert attrs["gen_ai.output.messages"] == "hi there"
    assert "hi" in str(attrs["gen_ai.input.messages"])


async def test_disposing_the_instrumentation_stops_the_spans(otel: Any) -> None:
    tracer_provider, exporter, meter_provider, _ = otel
    async with Server(["one", "two"]) as server:
        rt = _deepseek(server.url)
        dispose = instrument(rt, tracer_provider=tracer_provider, meter_provider=meter_provider)
        await rt.generate(_ask())
        dispose()
        await rt.generate(_ask())
    assert len(exporter.get_finished_spans()) == 1


def test_import_modelwire_does_not_import_opentelemetry() -> None:
    probe = "import sys, modelwire, modelwire.telemetry; print(any(m.startswith('opentelemetry') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
