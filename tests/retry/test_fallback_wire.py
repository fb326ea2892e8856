"""Issue 18, fallbacks over real HTTP: a loopback aiohttp server behind two `ProvidersAdapter` routes.

Route `alpha` is served under `/a`, route `beta` under `/b`; each answers its queued handlers in
order, then its default one (`alpha`: 503 overloaded). The turn runs on a real log (memory,
SQLite and, when `MODELWIRE_TEST_POSTGRES_URL` is set, PostgreSQL) with `RetryPlugin` (its
waits go through a recording sleep) and `FallbackPlugin`. The replay-crossing case answers the
first step from a recorded Anthropic stream (thinking with a signature, then a tool call).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from retry_helpers import RecordingSleep, Samples, check_invariants, of_type, types

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.agent import Agent, Tool
from modelwire.retry import DEFAULT_FALLBACK_CODES, FallbackPlugin, RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import SessionLog
from modelwire.session.events import encode_event_data

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures"
THINKING_THEN_TOOL = FIXTURES / "anthropic-messages" / "anth-haiku45-thinking-then-tool.sse"
ANTHROPIC_MODEL = "claude-haiku-4-5-20251001"
KEYS = {"ALPHA_KEY": "sk-alpha-secret-0123456789", "BETA_KEY": "sk-beta-secret-9876543210"}
POLICY = {
    "mode": "normal",
    "max_retries": 2,
    "backoff": {"initial_delay_ms": 10, "max_delay_ms": 10, "jitter_ratio": 0},
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def status(code: int, message: str) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return web.json_response({"error": {"message": message, "type": "error"}}, status=code)

    return handle


def sse_bytes(body: bytes) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(body)
        await response.write_eof()
        return response

    return handle


def chat_answer(text: str) -> Handler:
    events = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}},
    ]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return sse_bytes(body.encode())


@dataclass
class TwoRoutes:
    """The loopback server: `/a/...` is route alpha, `/b/...` route beta."""

    url: str = ""
    queued: dict[str, list[Handler]] = field(default_factory=lambda: {"a": [], "b": []})
    default: dict[str, Handler] = field(
        default_factory=lambda: {"a": status(503, "alpha is overloaded")}
    )
    bodies: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"a": [], "b": []})

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        route = request.path.split("/")[1]
        self.bodies[route].append(json.loads(await request.read()))
        queue = self.queued[route]
        handler = queue.pop(0) if queue else self.default.get(route)
        assert handler is not None, f"nothing queued for /{route}"
        return await handler(request)


@pytest.fixture
async def server() -> AsyncIterator[TwoRoutes]:
    state = TwoRoutes()
    app = web.Application()
    app.router.add_route("POST", "/{tail:.*}", state.dispatch)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    state.url = f"http://127.0.0.1:{port}"
    try:
        yield state
    finally:
        await runner.cleanup()


def providers(url: str, *, alpha_api: str = "openai-completions") -> dict[str, Any]:
    alpha_base, alpha_model = f"{url}/a/v1", "a1"
    if alpha_api == "anthropic-messages":
        alpha_base, alpha_model = f"{url}/a", ANTHROPIC_MODEL
    return {
        "providers": {
            "alpha": {
                "api": alpha_api,
                "base_url": alpha_base,
                "api_key_env": "ALPHA_KEY",
                "models": [{"id": alpha_model}],
                "retry_policy": POLICY,
            },
            "beta": {
                "api": "openai-completions",
                "base_url": f"{url}/b/v1",
                "api_key_env": "BETA_KEY",
                "models": [{"id": "b1"}],
                "retry_policy": POLICY,
            },
        }
    }


def agent(log: SessionLog, config: dict[str, Any], sleep: RecordingSleep, **kwargs: Any) -> Agent:
    runtime = LlmRuntime()
    ProvidersAdapter.from_config(config, env=KEYS).register(runtime)
    on = kwargs.pop("on", DEFAULT_FALLBACK_CODES)
    kwargs.setdefault("model", "a1")
    return Agent(
        runtime=runtime,
        log=log,
        provider="alpha",
        plugins=[
            RetryPlugin(random=Samples(0.5), sleep=sleep),
            FallbackPlugin(chain=[("beta", "b1")], on=on),
        ],
        **kwargs,
    )


async def _raw_log(log: SessionLog, sid: str) -> str:
    return "\n".join(encode_event_data(sid, e.data)[1].decode() for e in await log.read(sid))


async def test_a_route_answering_503_falls_back_to_the_route_answering_200(
    server: TwoRoutes, any_log: SessionLog, sid: str
) -> None:
    server.queued["b"].append(chat_answer("beta answers"))
    sleep = RecordingSleep()
    result = await agent(any_log, providers(server.url), sleep).run_turn(sid, "hi")

    assert (result.reason.kind, result.text) == ("completed", "beta answers")
    assert (len(server.bodies["a"]), len(server.bodies["b"])) == (3, 1)  # 1 + its 2 retries
    events = await any_log.read(sid)
    assert [(r.provider, r.retry, r.failure.status) for r in of_type(events, "llm/retry")] == [
        ("alpha", 1, 503),
        ("alpha", 2, 503),
    ]
    assert sleep.delays_ms == [10, 10]  # the route's policy, through the injected sleep
    (record,) = of_type(events, "llm/fallback")
    assert (record.from_route, record.from_model, record.to_route, record.to_model) == (
        "alpha",
        "a1",
        "beta",
        "b1",
    )
    assert (record.attempt, record.position, record.failure.code) == (3, 1, "SERVER")
    assert "alpha is overloaded" in record.failure.message
    (message,) = of_type(events, "assistant/message")
    assert (message.attempt, message.message.source.provider) == (4, "beta")
    assert [c.provider for c in of_type(events, "request/context")] == ["alpha", "beta"]
    assert server.bodies["a"][0]["messages"] == server.bodies["b"][0]["messages"]
    assert of_type(events, "turn/end")[0].reason.kind == "completed"
    check_invariants(events)
    raw = await _raw_log(any_log, sid)
    assert not [k for k in KEYS.values() if k in raw]  # no key in any event


async def test_context_overflow_on_a_route_falls_back_at_once(
    server: TwoRoutes, any_log: SessionLog, sid: str
) -> None:
    server.queued["a"].append(
        status(400, "This model's maximum context length is 8192 tokens, you sent 9100")
    )
    server.queued["b"].append(chat_answer("a bigger window"))
    sleep = RecordingSleep()
    on = (*DEFAULT_FALLBACK_CODES, "CONTEXT_WINDOW_EXCEEDED")
    result = await agent(any_log, providers(server.url), sleep, on=on).run_turn(sid, "hi")

    assert result.text == "a bigger window"
    assert (len(server.bodies["a"]), len(server.bodies["b"])) == (1, 1)  # no retry on alpha
    events = await any_log.read(sid)
    assert of_type(events, "llm/retry") == [] and sleep.delays == []
    (record,) = of_type(events, "llm/fallback")
    assert (record.attempt, record.failure.code, record.failure.status) == (
        1,
        "CONTEXT_WINDOW_EXCEEDED",
        400,
    )
    check_invariants(events)


async def test_the_end_of_the_chain_fails_the_turn_with_the_last_failure(
    server: TwoRoutes, any_log: SessionLog, sid: str
) -> None:
    server.default["b"] = status(503, "beta is overloaded too")
    result = await agent(any_log, providers(server.url), RecordingSleep()).run_turn(sid, "hi")

    failure = result.failure
    assert failure is not None
    assert (failure.code, failure.status) == ("SERVER", 503)
    assert failure.message.startswith("llm-fallback: fallback chain exhausted (beta:b1)")
    assert "beta is overloaded too" in failure.message
    assert (len(server.bodies["a"]), len(server.bodies["b"])) == (3, 3)  # a fresh budget on beta
    events = await any_log.read(sid)
    assert [(r.provider, r.retry) for r in of_type(events, "llm/retry")] == [
        ("alpha", 1),
        ("alpha", 2),
        ("beta", 1),
        ("beta", 2),
    ]
    assert len(of_type(events, "llm/fallback")) == 1
    check_invariants(events)


async def test_replay_state_crossing_providers_drops_signatures_and_keeps_reasoning_as_text(
    server: TwoRoutes, any_log: SessionLog, sid: str
) -> None:
    recorded = THINKING_THEN_TOOL.read_bytes()
    signature = next(
        json.loads(line[6:])["delta"]["signature"]
        for line in recorded.decode().splitlines()
        if '"signature_delta"' in line
    )
    server.queued["a"].append(sse_bytes(recorded))  # step 1 on alpha: thinking, then a tool call
    server.queued["b"].append(chat_answer("It is 1.2.3, a version with a sense of humour."))
    version = Tool("fixed_version", "the version", {"type": "object"}, lambda args: "1.2.3")
    config = providers(server.url, alpha_api="anthropic-messages")
    result = await agent(
        any_log, config, RecordingSleep(), model=ANTHROPIC_MODEL, tools=[version]
    ).run_turn(sid, "Use fixed_version, then tell me the version with a joke.")

    assert result.text == "It is 1.2.3, a version with a sense of humour."
    # step 2 on alpha (503, then its retries) still replays the same model's signed thinking
    step_two = server.bodies["a"][1]
    assistant = next(m for m in step_two["messages"] if m["role"] == "assistant")
    thinking = next(b for b in assistant["content"] if b["type"] == "thinking")
    assert thinking["signature"] == signature
    # the fallback request to beta (another provider): no signature, the reasoning as text
    (beta,) = server.bodies["b"]
    assert signature not in json.dumps(beta)
    assistant = next(m for m in beta["messages"] if m["role"] == "assistant")
    content = assistant["content"]
    text = content if isinstance(content, str) else "".join(p["text"] for p in content)
    assert "Let me first call the fixed_version tool" in text
    assert "reasoning_content" not in assistant and "thinking" not in assistant
    (call,) = assistant["tool_calls"]
    assert call["function"]["name"] == "fixed_version"
    tool = next(m for m in beta["messages"] if m["role"] == "tool")
    assert (tool["tool_call_id"], tool["content"]) == (call["id"], "1.2.3")

    events = await any_log.read(sid)
    (record,) = of_type(events, "llm/fallback")
    assert (record.step, record.from_model, record.to_route) == (2, ANTHROPIC_MODEL, "beta")
    assert [(s.turn, s.step) for s in of_type(events, "step/start")] == [(1, 1), (1, 2)]
    assert "tool/result" in types(events)
    check_invariants(events)
