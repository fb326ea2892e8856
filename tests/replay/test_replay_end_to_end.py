"""The key test: record a retried agent turn against the real DeepSeek adapter, replay it exactly.

Recording: `DeepSeekAdapter` → a loopback aiohttp server that answers 503 first, then a tool
call, then text; `RetryPlugin` retries the failed attempt inside the Step. Replay: a fresh runtime
and a fresh memory log, the same Agent setup (tools included), `ReplayAdapter.from_file(export)`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import pytest
from aiohttp import web

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.replay import ReplayAdapter
from modelwire.agent import Agent, Tool
from modelwire.errors import ErrorCode, HarnessError
from modelwire.retry import RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import AssistantMessage, Event, MemoryLog, SessionLog, ToolResultRecord
from modelwire.session.export import export_session

ROUTE = "deepseek-official"
MODEL = "deepseek-v4-flash"
API_KEY = "sk-replay-e2e-secret-0123456789"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Loopback:
    url: str = ""
    handlers: list[Handler] = field(default_factory=list)
    requests: int = 0

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.requests += 1
        assert self.handlers, "no response queued"
        return await self.handlers.pop(0)(request)


def _sse(*payloads: dict[str, object]) -> Handler:
    body = "".join(f"data: {json.dumps(p)}\n\n" for p in payloads) + "data: [DONE]\n\n"

    async def handle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(body.encode())
        await response.write_eof()
        return response

    return handle


def _overloaded(request: web.Request) -> Awaitable[web.StreamResponse]:
    async def handle() -> web.StreamResponse:
        return web.json_response({"error": {"message": "server overloaded"}}, status=503)

    return handle()


def _delta(finish: str | None = None, **fields: object) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


_USAGE = {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}
_CALL = {
    "index": 0,
    "id": "call_1",
    "type": "function",
    "function": {"name": "lookup", "arguments": '{"city":"Oslo"}'},
}


@pytest.fixture
async def server() -> AsyncIterator[Loopback]:
    srv = Loopback()
    app = web.Application()
    app.router.add_post("/chat/completions", srv.dispatch)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    srv.url = f"http://127.0.0.1:{port}"
    try:
        yield srv
    finally:
        await runner.cleanup()


async def _no_wait(seconds: float) -> None:
    await asyncio.sleep(0)


def _tools() -> list[Tool]:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    return [Tool("lookup", "weather by city", schema, lambda args: f"sunny in {args['city']}")]


def _agent(runtime: LlmRuntime, log: SessionLog) -> Agent:
    return Agent(
        runtime=runtime,
        log=log,
        provider=ROUTE,
        model=MODEL,
        system="You are terse.",
        tools=_tools(),
        plugins=[RetryPlugin(sleep=_no_wait)],
    )


def _chunk_payloads(events: list[Event]) -> list[bytes]:
    return [msgspec.json.encode(e.data) for e in events if e.type == "assistant/chunk"]


def _committed(events: list[Event]) -> list[object]:
    out: list[object] = []
    for event in events:
        if isinstance(event.data, AssistantMessage):
            out.append(("assistant", event.data.message.content, event.data.usage))
        elif isinstance(event.data, ToolResultRecord):
            out.append(("tool", event.data.message.content))
    return out


async def _record(server: Loopback, path: Path) -> list[Event]:
    server.handlers += [
        _overloaded,
        _sse(
            _delta(role="assistant", reasoning_content="need weather"),
            _delta(tool_calls=[_CALL]),
            _delta("tool_calls"),
            _USAGE,
        ),
        _sse(_delta(role="assistant", content="Sunny in Oslo."), _delta("stop"), _USAGE),
    ]
    runtime = LlmRuntime()
    runtime.register_adapter([ROUTE], DeepSeekAdapter(api_key=API_KEY, base_url=server.url, env={}))
    log = MemoryLog()
    agent = _agent(runtime, log)
    result = await agent.run_turn("live", "Weather in Oslo?")
    await agent.close()
    assert result.reason.kind == "completed" and result.text == "Sunny in Oslo."
    assert server.requests == 3
    await export_session(log, "live", path)
    return await log.read("live")


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
async def test_replay_e2e_retried_step_replays_byte_identical_chunks_and_messages(
    server: Loopback, tmp_path: Path, strict: bool
) -> None:
    export = tmp_path / "session.jsonl"
    recorded = await _record(server, export)
    retried = [e for e in recorded if e.type == "llm/retry"]
    assert len(retried) == 1 and retried[0].data.failure.code == "SERVER"

    adapter = ReplayAdapter.from_file(export, strict=strict)
    assert [c.label for c in adapter.scripts[0].calls] == [
        "turn 1 step 1 attempt 1",
        "turn 1 step 1 attempt 2",
        "turn 1 step 2 attempt 1",
    ]
    runtime = LlmRuntime()
    runtime.register_adapter([ROUTE], adapter)
    log = MemoryLog()
    agent = _agent(runtime, log)
    result = await agent.run_turn("replayed", "Weather in Oslo?")
    await agent.close()
    assert result.reason.kind == "completed" and result.text == "Sunny in Oslo."
    replayed = await log.read("replayed")
    assert _chunk_payloads(replayed) == _chunk_payloads(recorded)
    assert _committed(replayed) == _committed(recorded)
    # the request facts match too: the replay re-publishes the recorded model defaults
    headers = [msgspec.json.encode(e.data) for e in replayed if e.type.startswith("request/")]
    assert headers == [
        msgspec.json.encode(e.data) for e in recorded if e.type.startswith("request/")
    ]
    adapter.assert_consumed()
    assert server.requests == 3  # the replay made no HTTP request
    assert API_KEY not in export.read_text()


async def test_replay_e2e_sidecar_hang_is_released_by_cancellation_within_100ms(
    server: Loopback, tmp_path: Path
) -> None:
    export = tmp_path / "session.jsonl"
    await _record(server, export)
    ready = tmp_path / "ready"
    sidecar = Path(f"{export}.override.json")
    sidecar.write_text(
        json.dumps({"patches": [{"at": 1, "entry": {"kind": "hang", "ready_file": str(ready)}}]})
    )
    runtime = LlmRuntime()
    runtime.register_adapter([ROUTE], ReplayAdapter.from_file(export))
    log = MemoryLog()
    agent = _agent(runtime, log)
    task = asyncio.create_task(agent.run_turn("hung", "Weather in Oslo?"))
    for _ in range(500):
        if ready.exists():
            break
        await asyncio.sleep(0.01)
    assert ready.exists(), "the hang entry never started"
    await asyncio.sleep(0.05)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):  # the hang is cut by cancellation
        await asyncio.wait_for(task, 60.0)
    events = await log.read("hung")
    assert events[-1].type == "turn/end" and events[-1].data.reason.kind == "aborted"
    interrupted = [e.data for e in events if isinstance(e.data, AssistantMessage)]
    assert interrupted and interrupted[-1].interrupted is True
    await agent.close()


async def test_replay_e2e_strict_mismatch_fails_the_turn_with_a_readable_diff(
    server: Loopback, tmp_path: Path
) -> None:
    export = tmp_path / "session.jsonl"
    await _record(server, export)
    runtime = LlmRuntime()
    runtime.register_adapter([ROUTE], ReplayAdapter.from_file(export, strict=True))
    agent = _agent(runtime, MemoryLog())
    result = await agent.run_turn("other", "Weather in Bergen?")
    await agent.close()
    assert result.reason.kind == "error"
    assert result.failure is not None and result.failure.code == ErrorCode.REPLAY_MISMATCH
    message = result.failure.message
    assert "model call #1 of session 'other'" in message
    assert '-          "text": "Weather in Oslo?"' in message
    assert '+          "text": "Weather in Bergen?"' in message


async def test_replay_e2e_lenient_replay_ignores_a_different_request(
    server: Loopback, tmp_path: Path
) -> None:
    export = tmp_path / "session.jsonl"
    await _record(server, export)
    runtime = LlmRuntime()
    runtime.register_adapter([ROUTE], ReplayAdapter.from_file(export))
    agent = _agent(runtime, MemoryLog())
    result = await agent.run_turn("other", "Weather in Bergen?")
    await agent.close()
    assert result.reason.kind == "completed" and result.text == "Sunny in Oslo."


# ---- bad input: a clear error at load, naming the file and the line --------------------------


async def _export_lines(server: Loopback, tmp_path: Path) -> tuple[Path, list[str]]:
    export = tmp_path / "session.jsonl"
    await _record(server, export)
    return export, export.read_text().splitlines()


def _load_error(path: Path) -> HarnessError:
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_file(path)
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert str(path) in caught.value.message
    return caught.value


async def test_replay_e2e_bad_export_missing_seq_names_file_and_line(
    server: Loopback, tmp_path: Path
) -> None:
    export, lines = await _export_lines(server, tmp_path)
    del lines[5]  # the event with seq 4
    export.write_text("\n".join(lines) + "\n")
    error = _load_error(export)
    assert "line 6" in error.message and "missing seq 4" in error.message


async def test_replay_e2e_bad_export_unknown_event_type_names_file_and_line(
    server: Loopback, tmp_path: Path
) -> None:
    export, lines = await _export_lines(server, tmp_path)
    lines[3] = lines[3].replace('"type":"', '"type":"bogus/', 1)
    export.write_text("\n".join(lines) + "\n")
    error = _load_error(export)
    assert "line 4" in error.message and "unknown event type" in error.message


async def test_replay_e2e_bad_export_truncated_last_line_names_file_and_line(
    server: Loopback, tmp_path: Path
) -> None:
    export, lines = await _export_lines(server, tmp_path)
    text = "\n".join(lines)
    export.write_text(text[: len(text) - 7])
    error = _load_error(export)
    assert f"line {len(lines)}" in error.message and "truncated" in error.message


async def test_replay_e2e_sidecar_naming_a_missing_call_names_file_and_field(
    server: Loopback, tmp_path: Path
) -> None:
    export, _ = await _export_lines(server, tmp_path)
    sidecar = Path(f"{export}.override.json")
    sidecar.write_text(json.dumps({"patches": [{"at": 7, "entry": {"kind": "hang"}}]}))
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_file(export)
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    message = caught.value.message
    assert str(sidecar) in message and "patches[0].at" in message
    assert "names call 7, which does not exist" in message and "has 3 call(s)" in message


async def test_replay_e2e_unfinished_call_names_file_and_line(
    server: Loopback, tmp_path: Path
) -> None:
    export, lines = await _export_lines(server, tmp_path)
    # drop the finish chunk of the last call (and renumber nothing: cut the tail instead)
    finish_line = max(
        i
        for i, line in enumerate(lines)
        if '"type":"assistant/chunk"' in line and '"finish"' in line
    )
    kept = lines[:finish_line]
    header = json.loads(kept[0])
    header["events"] = len(kept) - 1
    kept[0] = json.dumps(header, separators=(",", ":"))
    export.write_text("\n".join(kept) + "\n")
    error = _load_error(export)
    assert f"line {finish_line}" in error.message
    assert "model call 1/2 (attempt 1) ended without a finish chunk" in error.message
    assert "sidecar" in error.message
