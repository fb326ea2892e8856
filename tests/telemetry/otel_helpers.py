"""Telemetry test helpers: a scripted chat-completions / Anthropic server on 127.0.0.1, the SDK's
in-memory exporter and metric reader, and views of what they hold."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import modelwire as mw
from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter

FIXTURES = Path("/work/shared/fixtures")
API_KEY = "sk-telemetry-secret-7f3a9c"
"""The credential every test route uses: it must never appear on a span."""


def _sse(chunks: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def chat_body(text: str) -> bytes:
    """A chat-completions stream answering `text`: 12 prompt tokens (4 cached), 3 completion."""
    return _sse(
        [
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
    )


@dataclass(frozen=True)
class Call:
    """A scripted tool call: the model asks for `name` with `arguments` (a JSON text)."""

    id: str
    name: str
    arguments: str


def tool_body(*calls: Call) -> bytes:
    """A chat-completions stream asking for `calls`: 20 prompt tokens, 5 completion."""
    deltas = [
        {
            "index": i,
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        for i, c in enumerate(calls)
    ]
    return _sse(
        [
            {"id": "chatcmpl-t", "choices": [{"index": 0, "delta": {"tool_calls": deltas}}]},
            {
                "id": "chatcmpl-t",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 5},
            },
        ]
    )


def fixture(path: str) -> bytes:
    """A recorded SSE stream from the shared fixtures."""
    return (FIXTURES / path).read_bytes()


Reply = int | str | bytes
"""A scripted reply: an HTTP status (an error JSON), answer text, or a raw SSE body."""


@dataclass
class Server:
    """Answers each POST with the next scripted reply."""

    replies: list[Reply]
    url: str = ""
    paths: list[str] = field(default_factory=list)
    _runner: web.AppRunner | None = None

    async def __aenter__(self) -> Server:
        async def handle(request: web.Request) -> web.StreamResponse:
            await request.read()
            self.paths.append(request.path)
            reply = self.replies.pop(0)
            if isinstance(reply, int):
                body = {"error": {"message": "slow down", "type": "rate_limit_error"}}
                return web.json_response(body, status=reply, headers={"retry-after": "0"})
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(chat_body(reply) if isinstance(reply, str) else reply)
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


def deepseek_runtime(url: str) -> mw.LlmRuntime:
    """A runtime whose route `deepseek` is the DeepSeek adapter on `url`."""
    rt = mw.LlmRuntime()
    rt.register_adapter(["deepseek"], DeepSeekAdapter(api_key=API_KEY, base_url=url, env={}))
    return rt


def providers_runtime(url: str, api: str = "openai-completions", model: str = "m") -> mw.LlmRuntime:
    """A runtime whose route `gw` is the providers adapter speaking `api` on `url`."""
    base = url + ("/v1" if api.startswith("openai") else "")
    profile = {"api": api, "base_url": base, "api_key_env": "GW_KEY", "models": [{"id": model}]}
    adapter = ProvidersAdapter.from_config({"providers": {"gw": profile}}, env={"GW_KEY": API_KEY})
    rt = mw.LlmRuntime()
    adapter.register(rt)
    return rt


@dataclass
class Otel:
    """An SDK tracer provider exporting to memory and a meter provider read in memory."""

    tracer_provider: TracerProvider
    exporter: InMemorySpanExporter
    meter_provider: MeterProvider
    reader: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        """The finished spans, in end order."""
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        """The finished spans whose name starts with `prefix`, in start order."""
        found = [s for s in self.spans() if s.name.startswith(prefix)]
        return sorted(found, key=lambda s: s.start_time or 0)

    def points(self, name: str) -> list[tuple[dict[str, Any], float]]:
        """(attributes, sum) of every data point of metric `name`."""
        data = self.reader.get_metrics_data()
        out: list[tuple[dict[str, Any], float]] = []
        if data is None:
            return out
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        for point in metric.data.data_points:
                            out.append((dict(point.attributes or {}), point.sum))  # type: ignore[union-attr]
        return out

    def kwargs(self) -> dict[str, Any]:
        """The providers, as `instrument` takes them."""
        return {"tracer_provider": self.tracer_provider, "meter_provider": self.meter_provider}


@pytest.fixture
def otel() -> Otel:
    """Fresh in-memory OpenTelemetry providers."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    return Otel(tracer_provider, exporter, MeterProvider(metric_readers=[reader]), reader)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    """A span's attributes as a plain dict."""
    return dict(span.attributes or {})


def parent_of(span: ReadableSpan) -> int | None:
    """The span id of `span`'s parent (None for a root)."""
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    """`span`'s own id."""
    assert span.context is not None
    return int(span.context.span_id)


def assert_no_secret(spans: Sequence[ReadableSpan]) -> None:
    """No attribute, status or event of any span holds the API key."""
    for span in spans:
        texts = [repr(v) for v in (span.attributes or {}).values()]
        texts.append(span.status.description or "")
        texts.extend(repr(e.attributes) for e in span.events)
        assert not [t for t in texts if API_KEY in t], span.name


@pytest.fixture
async def log(tmp_path: Path) -> Any:
    """A session log in a real SQLite file."""
    from modelwire.session import open_log

    opened = await open_log(f"sqlite:///{tmp_path / 'telemetry-log.db'}")
    try:
        yield opened
    finally:
        await opened.close()
