"""Required loop scenarios against the real `DeepSeekAdapter` and a loopback HTTP server.

Parametrized over the `log` fixture: in-memory, SQLite (tmp file) and PostgreSQL (when
`MODELWIRE_TEST_POSTGRES_URL` is set).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from agent_helpers import FlakyFlushLog, RetryTimes, of_type, types
from aiohttp import web

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent, Tool
from modelwire.runtime import LlmRuntime
from modelwire.session import SessionLog, StepStart
from modelwire.vocab import TextBlock, ToolCallBlock
from modelwire.wire.http import close_sessions

ROUTE = "deepseek-official"
MODEL = "deepseek-v4-flash"
API_KEY = "sk-scenario-secret-0123456789"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class LoopbackServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 answering queued handlers in order."""

    url: str = ""
    bodies: list[dict[str, object]] = field(default_factory=list)
    handlers: list[Handler] = field(default_factory=list)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append(json.loads(await request.read()))
        assert self.handlers, "no response queued"
        return await self.handlers.pop(0)(request)


def sse(*payloads: dict[str, object]) -> Handler:
    body = "".join(f"data: {json.dumps(p)}\n\n" for p in payloads) + "data: [DONE]\n\n"

    async def handle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(body.encode())
        await response.write_eof()
        return response

    return handle


def status(code: int, message: str) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return web.json_response({"error": {"message": message}}, status=code)

    return handle


def delta(finish: str | None = None, **fields: object) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


USAGE = {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}


def text_answer(text: str) -> Handler:
    return sse(delta(role="assistant", content=text), delta("stop"), USAGE)


def tool_answer(call_id: str, name: str, arguments: str) -> Handler:
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    return sse(delta(role="assistant", tool_calls=[call]), delta("tool_calls"), USAGE)


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    srv = LoopbackServer()
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
        await close_sessions()
        await runner.cleanup()


def runtime_for(server: LoopbackServer) -> LlmRuntime:
    runtime = LlmRuntime()
    adapter = DeepSeekAdapter(
        api_key=API_KEY,
        base_url=server.url,
        env={},
        retry_policy={"mode": "normal", "max_retries": 2},
    )
    runtime.register_adapter([ROUTE], adapter)
    return runtime


def _agent(server: LoopbackServer, log: SessionLog, **kwargs: object) -> Agent:
    return Agent(runtime=runtime_for(server), log=log, provider=ROUTE, model=MODEL, **kwargs)  # type: ignore[arg-type]


async def test_scenario_two_step_tool_turn(
    server: LoopbackServer, log: SessionLog, sid: str
) -> None:
    server.handlers += [
        tool_answer("call_1", "lookup", '{"city":"Oslo"}'),
        text_answer("It is sunny in Oslo."),
    ]
    tool = Tool(
        "lookup",
        "weather by city",
        {"type": "object", "properties": {"city": {"type": "string"}}},
        lambda args: f"sunny in {args['city']}",
    )
    result = await _agent(server, log, tools=[tool]).run_turn(sid, "Weather in Oslo?")
    assert result.reason.kind == "completed"
    assert result.text == "It is sunny in Oslo."
    events = await log.read(sid)
    assert [e.seq for e in events] == list(range(len(events)))
    assert of_type(events, "step/start") == [StepStart(1, 1), StepStart(1, 2)]
    first_message = of_type(events, "assistant/message")[0].message
    assert first_message.content == (ToolCallBlock("call_1", "lookup", '{"city":"Oslo"}'),)
    (record,) = of_type(events, "tool/result")
    assert record.message.content[0].content == (TextBlock("sunny in Oslo"),)
    # the second request carries the tool round trip in DeepSeek's wire shape
    second = server.bodies[1]["messages"]
    assert isinstance(second, list)
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[2]["tool_call_id"] == "call_1"
    assert server.bodies[0]["tools"][0]["function"]["name"] == "lookup"  # type: ignore[index]
    assert API_KEY not in json.dumps([e.type for e in events]) + repr(events)


async def test_scenario_failed_then_successful_attempt(
    server: LoopbackServer, log: SessionLog, sid: str
) -> None:
    server.handlers += [status(503, "overloaded"), text_answer("recovered")]
    plugin = RetryTimes(1)
    result = await _agent(server, log, plugins=[plugin]).run_turn(sid, "hi")
    assert result.reason.kind == "completed"
    assert result.text == "recovered"
    assert len(server.bodies) == 2
    assert server.bodies[0] == server.bodies[1]  # the retried request is rebuilt identically
    (ctx,) = plugin.calls
    assert ctx.failure.code == "SERVER" and ctx.failure.status == 503
    events = await log.read(sid)
    assert of_type(events, "step/start") == [StepStart(1, 1)]
    chunks = [e for e in events if e.type == "assistant/chunk"]
    failed = [e for e in chunks if e.data.attempt == 1]
    ok = [e for e in chunks if e.data.attempt == 2]
    assert len(failed) == 1 and failed[0].data.chunk.reason.kind == "error"
    assert ok
    (message,) = of_type(events, "assistant/message")
    assert message.source_event_seqs == tuple(e.seq for e in ok)
    assert message.message.content == (TextBlock("recovered"),)
    assert "overloaded" not in json.dumps(server.bodies[1])


async def test_scenario_flush_failure_never_calls_the_adapter(
    server: LoopbackServer, log: SessionLog, sid: str
) -> None:
    server.handlers.append(text_answer("must not be requested"))
    flaky = FlakyFlushLog(log, fail_at={2})  # 1 = pre-step checkpoint, 2 = the request barrier
    result = await _agent(server, flaky).run_turn(sid, "hi")
    assert result.reason.kind == "error"
    assert result.failure is not None and result.failure.code == "LOG_UNAVAILABLE"
    assert server.bodies == []  # the server saw no request
    events = await log.read(sid)
    assert "assistant/chunk" not in types(events)
    assert types(events)[-2:] == ["step/end", "turn/end"]
    await log.flush()
