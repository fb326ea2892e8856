"""A key the provider echoes in a *successful* answer's metadata appears nowhere.

A real aiohttp.web server on 127.0.0.1 (`reliability_success_echo`) answers every adapter —
DeepSeek and the providers' Chat Completions, Responses, Anthropic Messages, Gemini, Mistral and
Bedrock ConverseStream —
with good answers (a tool call, then text) whose response id, model name, system fingerprint, item
ids, tool call id and response headers all carry the credential it received. Each adapter runs an
`Agent` turn (the tool runs, the answer follows) on a real SQLite log file under OpenTelemetry's
in-memory SDK; then every surface is scanned: the chunks, the
result, the log events, an export file, the inspector's pages and API over real HTTP, the CLI's
`sessions show` (text and JSON), `sessions list`, `sessions export` and `replay`, and every span
attribute and metric point. A control run with harmless values shows the id and model do reach
those surfaces, so the scan cannot pass by looking where nothing is. The canary is not shaped
like an API key: only redaction of the request's own credentials can hide it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import msgspec
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from reliability_success_echo import (
    ANSWER,
    KINDS,
    NAMELESS,
    SAFE_ID,
    SIGNATURE,
    TOOL,
    TOOL_RESULT,
    SuccessEchoServer,
)
from test_reliability_canary import KEY, KEY_ENV, _cli, _no_canary_in_log_records, assert_clean

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.agent import Agent, Tool
from modelwire.runtime import LlmRuntime
from modelwire.session import open_log
from modelwire.session.export import export_session
from modelwire.telemetry import instrument
from modelwire.ui import serve
from modelwire.vocab import GenerateOptions, ToolCallDelta, user_message

# the failure-path sweep's canary, CLI runner and log-record scan (an autouse fixture)
__all__ = ["_no_canary_in_log_records"]

MODEL = "canary-model"


class Telemetry:
    """In-memory OpenTelemetry providers: every span and every metric point, as text."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def span_attributes(self) -> list[dict[str, object]]:
        return [dict(span.attributes or {}) for span in self.exporter.get_finished_spans()]

    def text(self) -> str:
        parts = []
        for span in self.exporter.get_finished_spans():
            parts += [span.name, repr(dict(span.attributes or {})), span.status.description or ""]
            parts += [repr(dict(event.attributes or {})) for event in span.events]
        data = self.reader.get_metrics_data()
        assert data is not None
        parts.append(data.to_json())
        return "\n".join(parts)


def _runtime(kind: str, url: str) -> tuple[LlmRuntime, str, str]:
    runtime = LlmRuntime()
    if kind == "deepseek":
        adapter = DeepSeekAdapter(api_key=KEY, base_url=url, env={})
        runtime.register_adapter(["deepseek"], adapter)
        return runtime, "deepseek", "deepseek-v4-flash"
    profile = {"api": kind, "base_url": url, "api_key_env": KEY_ENV, "models": [{"id": MODEL}]}
    providers = ProvidersAdapter.from_config({"providers": {kind: profile}}, env={KEY_ENV: KEY})
    providers.register(runtime)
    return runtime, kind, MODEL


async def _turns(server: SuccessEchoServer, log_url: str, telemetry: Telemetry) -> list[str]:
    """One good turn per adapter (chunks and result scanned); returns the session ids."""
    log = await open_log(log_url)
    sessions = []
    try:
        for kind in KINDS:
            server.kind = kind
            runtime, route, model = _runtime(kind, server.url)
            options = GenerateOptions(provider=route, model=model, messages=(user_message("hi"),))
            chunks = [chunk async for chunk in runtime.stream(options)]
            assert_clean(msgspec.json.encode(chunks).decode(), f"the chunks of {kind}")
            assert_clean(repr(chunks), f"the chunk reprs of {kind}")
            assert any(isinstance(c, ToolCallDelta) for c in chunks), kind
            tool = Tool(TOOL, "Look a thing up", {"type": "object"}, lambda args: TOOL_RESULT)
            agent = Agent(runtime=runtime, log=log, provider=route, model=model, tools=[tool])
            dispose = instrument(
                agent,
                tracer_provider=telemetry.tracer_provider,
                meter_provider=telemetry.meter_provider,
            )
            try:
                result = await agent.run_turn(f"success-{kind}", "hi")
            finally:
                dispose()
                await agent.close()
            assert result.reason.kind == "completed", (kind, result.reason)
            assert result.text == ANSWER, kind
            assert_clean(repr(result), f"the TurnResult of {kind}")
            events = await log.read(f"success-{kind}")
            for event in events:
                assert_clean(msgspec.json.encode(event).decode(), f"{kind} log event {event.type}")
            export = Path(log_url.removeprefix("sqlite:///")).with_suffix(f".{kind}.jsonl")
            await export_session(log, f"success-{kind}", export)
            assert_clean(export.read_text(encoding="utf-8"), f"the {kind} export file")
            sessions.append(f"success-{kind}")
    finally:
        await log.close()
    assert server.received and all(key == KEY for key in server.received), server.received
    # an opaque replay blob shaped like a key (but not the key) goes back to the provider intact
    assert any(json.dumps(SIGNATURE) in body for body in server.bodies)  # Anthropic, after the tool
    return sessions


async def _inspector(log_url: str, session_id: str) -> str:
    """Every inspector page and API answer about `session_id`, over real HTTP."""
    server = await serve(log_url)
    where = {"id": session_id}
    attempt = {**where, "turn": "1", "step": "1", "attempt": "1"}
    paths = [
        ("/", {}),
        ("/session", where),
        ("/api/sessions", {}),
        ("/api/session", where),
        ("/api/attempt", attempt),
        ("/api/chunks", attempt),
        ("/api/events", where),
    ]
    bodies = []
    try:
        async with aiohttp.ClientSession() as http:
            for path, params in paths:
                async with http.get(server.url.rstrip("/") + path, params=params) as response:
                    assert response.status == 200, (path, await response.text())
                    bodies.append(await response.text())
    finally:
        await server.close()
    return "\n".join(bodies)


CLI_SESSIONS = ("success-deepseek", "success-openai-responses")
"""The sessions the CLI shows (a subprocess each, so not all six: the log events it renders are
scanned for every adapter above); the Responses one carries the most metadata (item ids)."""


async def _every_surface(tmp_path: Path, *, echo: bool) -> tuple[dict[str, str], Telemetry]:
    """Run the turns and gather each surface's text by name (`assert_clean` scans each one as
    it comes)."""
    log_url = f"sqlite:///{tmp_path / 'success.db'}"
    telemetry = Telemetry()
    async with SuccessEchoServer() as server:
        server.echo = echo
        sessions = await _turns(server, log_url, telemetry)
    surfaces = {"spans and metrics": telemetry.text()}
    for sid in sessions:
        surfaces[f"inspector {sid}"] = page = await _inspector(log_url, sid)
        assert_clean(page, f"the inspector pages of {sid}")
    export = tmp_path / "cli-export.jsonl"
    commands = {f"show --json {sid}": ("sessions", "show", sid, "--json") for sid in CLI_SESSIONS}
    commands |= {
        f"show --events {sid}": ("sessions", "show", sid, "--events") for sid in CLI_SESSIONS
    }
    commands["export"] = ("sessions", "export", CLI_SESSIONS[1], str(export))
    if echo:  # these show no response metadata: the control run has nothing to find there
        commands["list"] = ("sessions", "list")
    results = await asyncio.gather(
        *(_cli(tmp_path, *args, "--log", log_url) for args in commands.values())
    )
    for name, (code, text) in zip(commands, results, strict=True):
        assert code == 0, text
        surfaces[name] = text
    surfaces["export file"] = export.read_text(encoding="utf-8")
    if echo:
        code, surfaces["replay"] = await _cli(tmp_path, "replay", str(export))
        assert code == 0, surfaces["replay"]
    return surfaces, telemetry


async def test_a_key_echoed_in_a_successful_answers_metadata_reaches_no_surface(
    tmp_path: Path,
) -> None:
    surfaces, telemetry = await _every_surface(tmp_path, echo=True)
    for name, text in surfaces.items():
        assert_clean(text, name)
    calls = [a for a in telemetry.span_attributes() if a.get("gen_ai.operation.name") == "chat"]
    assert len(calls) == 2 * len(KINDS)  # the tool call, then the answer
    assert not [a for a in calls if "gen_ai.response.id" in a]  # a redacted id is no id
    tools = [a for a in telemetry.span_attributes() if a.get("gen_ai.tool.name") == TOOL]
    assert len(tools) == len(KINDS)
    assert all(str(a.get("gen_ai.tool.call.id")).startswith("call_redacted_") for a in tools)


async def test_harmless_response_metadata_still_reaches_every_surface(tmp_path: Path) -> None:
    surfaces, telemetry = await _every_surface(tmp_path, echo=False)
    calls = [a for a in telemetry.span_attributes() if a.get("gen_ai.operation.name") == "chat"]
    named = 2 * (len(KINDS) - len(NAMELESS))  # two calls per protocol whose stream names ids
    assert [a.get("gen_ai.response.id") for a in calls].count(SAFE_ID) == named
    tools = [a for a in telemetry.span_attributes() if a.get("gen_ai.tool.name") == TOOL]
    assert all(SAFE_ID in str(a.get("gen_ai.tool.call.id")) for a in tools)  # Responses: call|item
    assert len(tools) == len(KINDS)
    assert sum(a.get("gen_ai.response.model") == "served-model" for a in calls) >= 5
    missing = [name for name, text in surfaces.items() if SAFE_ID not in text]
    assert missing == ["export"]  # it says where it wrote: the file ("export file") has them
