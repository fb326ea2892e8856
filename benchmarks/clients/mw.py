"""modelwire's clients: the DeepSeek adapter and the providers adapter, through `LlmRuntime`.

Each class imports its modelwire piece when it is instantiated; a piece that has not landed
(ImportError, or a missing name) is reported as "not available", never replaced by something
else. The full path is measured: HTTP -> SSE framer -> decode -> translate -> runtime boundary ->
BlockAssembler (generate) or the consumer's own loop over `LlmRuntime.stream` (stream).
"""

from __future__ import annotations

import importlib
from typing import Any

from .common import (
    API_KEY,
    MODEL,
    PROMPT,
    TOOL_DESCRIPTION,
    TOOL_SCHEMA,
    Client,
    Result,
    Unavailable,
)

_KEY_ENV = "MODELWIRE_BENCH_KEY"


def _get(module: str, name: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise Unavailable(f"{module} has not landed ({exc})") from exc
    try:
        return getattr(mod, name)
    except AttributeError:
        raise Unavailable(f"{module}.{name} has not landed") from None


def _version() -> str:
    try:
        from importlib.metadata import version

        return f"modelwire {version('modelwire')}"
    except Exception:
        return "modelwire"


def _usage(u: Any) -> dict[str, int | None] | None:
    if u is None:
        return None
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_read_tokens": u.cache_read_tokens,
        "reasoning_tokens": u.reasoning_tokens,
    }


def _finish(reason: Any) -> str:
    kind: str = reason.kind
    if kind in ("error", "aborted"):
        f = reason.failure
        raise AssertionError(f"modelwire call ended {kind}: {f.code}: {f.message}")
    return kind


class _Mw(Client):
    kind = "modelwire"
    checks_usage = True
    route = "bench"
    rt: Any  # the LlmRuntime, built in setup()
    registration: Any  # disposer of the route registration

    def __init__(self) -> None:
        self.LlmRuntime = _get("modelwire", "LlmRuntime")
        mw = importlib.import_module("modelwire")
        self.GenerateOptions = mw.GenerateOptions
        self.ToolSchema = mw.ToolSchema
        self.user_message = mw.user_message
        self.TextBlock, self.ReasoningBlock = mw.TextBlock, mw.ReasoningBlock
        self.ToolCallBlock = mw.ToolCallBlock

    def version(self) -> str:
        return _version()

    def options(self, tools: bool) -> Any:
        schema = self.ToolSchema("get_weather", TOOL_DESCRIPTION, TOOL_SCHEMA)
        return self.GenerateOptions(
            provider=self.route,
            model=self.model,
            messages=(self.user_message(PROMPT),),
            tools=(schema,) if tools else None,
        )

    model = MODEL

    async def stream(self, tools: bool) -> Result:
        res = await self.rt.generate(self.options(tools))
        finish = _finish(res.finish)
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, str]] = []
        for b in res.message.content:
            if isinstance(b, self.TextBlock):
                text.append(b.text)
            elif isinstance(b, self.ReasoningBlock):
                reasoning.append(b.text)
            elif isinstance(b, self.ToolCallBlock):
                calls.append({"id": b.id, "name": b.name, "arguments": b.arguments})
            else:
                raise AssertionError(f"unexpected block {type(b).__name__}")
        return Result("".join(text), "".join(reasoning), calls, _usage(res.usage), finish)

    async def close(self) -> None:
        self.registration()
        try:
            from modelwire.wire.http import close_sessions
        except ImportError:
            return
        await close_sessions()  # the pooled per-loop aiohttp session


class DeepSeekGenerate(_Mw):
    """`DeepSeekAdapter` registered on an `LlmRuntime`, one `await rt.generate(options)` per stream."""

    name = "modelwire DeepSeek adapter (LlmRuntime.generate)"
    route = "deepseek"

    def __init__(self) -> None:
        super().__init__()
        self.Adapter = _get("modelwire.adapters.deepseek", "DeepSeekAdapter")

    async def setup(self, base_url: str) -> None:
        self.rt = self.LlmRuntime()
        adapter = self.Adapter(api_key=API_KEY, base_url=base_url)
        self.registration = self.rt.register_adapter([self.route], adapter)


class DeepSeekOtel(DeepSeekGenerate):
    """The same calls with `modelwire.telemetry.instrument` on an OpenTelemetry SDK tracer and
    meter: every span is sampled and recorded and every measurement aggregated (an in-memory
    metric reader), nothing exported — the instrumentation's own cost, not an exporter's."""

    name = "modelwire DeepSeek adapter, OpenTelemetry-instrumented (LlmRuntime.generate)"

    async def setup(self, base_url: str) -> None:
        await super().setup(base_url)
        instrument = _get("modelwire.telemetry", "instrument")
        try:
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader
            from opentelemetry.sdk.trace import TracerProvider
        except ImportError as exc:
            raise Unavailable(f"the OpenTelemetry SDK is not installed ({exc})") from exc
        meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
        instrument(self.rt, tracer_provider=TracerProvider(), meter_provider=meters)


class DeepSeekStream(DeepSeekGenerate):
    """The same adapter through `LlmRuntime.stream`: the consumer folds every chunk itself."""

    name = "modelwire DeepSeek adapter (LlmRuntime.stream)"

    async def stream(self, tools: bool) -> Result:
        from modelwire import (
            BlockEnd,
            BlockStart,
            Finish,
            ReasoningDelta,
            TextDelta,
            ToolCallDelta,
            UsageChunk,
        )

        text: list[str] = []
        reasoning: list[str] = []
        args: dict[int, list[str]] = {}
        heads: dict[int, list[str | None]] = {}
        usage = finish = None
        async for c in self.rt.stream(self.options(tools)):
            if type(c) is TextDelta:
                text.append(c.text)
            elif type(c) is ReasoningDelta:
                reasoning.append(c.text)
            elif type(c) is ToolCallDelta:
                args.setdefault(c.index, []).append(c.arguments_delta)
                h = heads.setdefault(c.index, [None, None])
                if c.id:
                    h[0] = c.id
                if c.name:
                    h[1] = c.name
            elif type(c) is UsageChunk:
                usage = _usage(c.usage)
            elif type(c) is Finish:
                finish = _finish(c.reason)
            elif type(c) not in (BlockStart, BlockEnd):
                raise AssertionError(f"unexpected chunk {c!r}")
        calls = [
            {"id": heads[i][0] or "", "name": heads[i][1] or "", "arguments": "".join(args[i])}
            for i in sorted(args)
        ]
        return Result("".join(text), "".join(reasoning), calls, usage, finish)


class _Providers(_Mw):
    api = "?"
    suffix = "/v1"

    def __init__(self) -> None:
        super().__init__()
        self.Adapter = _get("modelwire.adapters.providers", "ProvidersAdapter")

    async def setup(self, base_url: str) -> None:
        self.rt = self.LlmRuntime()
        profile = {
            "api": self.api,
            "base_url": base_url + self.suffix,
            "api_key_env": _KEY_ENV,
            "models": [{"id": self.model}],
        }
        adapter = self.Adapter.from_config(
            {"providers": {self.route: profile}}, env={_KEY_ENV: API_KEY}
        )
        self.registration = adapter.register(self.rt)


class ProvidersChat(_Providers):
    """`ProvidersAdapter`, protocol `openai-completions`, through `LlmRuntime.generate`."""

    name = "modelwire providers: openai-completions (generate)"
    api = "openai-completions"
    route = "bench-chat"


class ProvidersResponses(_Providers):
    """`ProvidersAdapter`, protocol `openai-responses`, through `LlmRuntime.generate`."""

    name = "modelwire providers: openai-responses (generate)"
    proto = "responses"
    api = "openai-responses"
    route = "bench-responses"


class ProvidersAnthropic(_Providers):
    """`ProvidersAdapter`, protocol `anthropic-messages`, through `LlmRuntime.generate`."""

    name = "modelwire providers: anthropic-messages (generate)"
    proto = "anthropic"
    api = "anthropic-messages"
    route = "bench-anthropic"
    suffix = ""
    model = "claude-bench"
