"""`invoke_agent` / `execute_tool` spans of an instrumented `Agent` (the SDK's in-memory exporter),
on the DeepSeek adapter talking to a real server on 127.0.0.1 and a real SQLite session log.

Rules pinned: one `invoke_agent` span per turn, root of its trace, with the agent name, session
and turn; the turn's model calls and tool calls are its children, and a model call a tool makes
is the tool span's child (the context crosses the tool's task); model-call spans carry turn,
step and attempt; a failed turn carries `error.type` = its failure code, a cancelled one
`ABORTED`; failing, timed-out and unknown tools carry their codes; tool arguments and results
only when opted in; a resumed turn is a span too, its attempts numbered on; `instrument_agent`
adds only the agent's spans; disposing removes the hooks.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from otel_helpers import (
    Call,
    Otel,
    Server,
    assert_no_secret,
    attrs,
    deepseek_runtime,
    parent_of,
    span_id,
    tool_body,
)

import modelwire as mw
from modelwire.agent import Agent, RunContext, Tool
from modelwire.session import SessionLog, open_log
from modelwire.telemetry import instrument, instrument_agent

MODEL = "deepseek-v4-flash"


async def _no_wait(seconds: float) -> None:
    return None


async def test_a_turn_span_parents_its_model_calls_and_tools_and_a_tool_parents_its_own_calls(
    otel: Otel, log: SessionLog
) -> None:
    async with Server(
        [tool_body(Call("call_1", "lookup", '{"q": "tides"}')), "inner answer", "final answer"]
    ) as server:
        rt = deepseek_runtime(server.url)

        async def lookup(q: str) -> str:
            """Look `q` up with a model call of its own (no session: not the turn's call)."""
            inner = await rt.generate(mw.GenerateOptions("deepseek", MODEL, (mw.user_message(q),)))
            return "".join(b.text for b in inner.message.content if isinstance(b, mw.TextBlock))

        agent = Agent(rt, log, "deepseek", MODEL, tools=[lookup])
        instrument(agent, agent_name="helper", **otel.kwargs())
        result = await agent.run_turn("s-7", "what about the tides?")
    assert result.reason.kind == "completed"
    (turn,) = otel.named("invoke_agent")
    (tool,) = otel.named("execute_tool")
    step_one, inner, step_two = otel.named("chat ")
    assert turn.name == "invoke_agent helper" and turn.kind is SpanKind.INTERNAL
    assert turn.parent is None
    assert attrs(turn) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "helper",
        "gen_ai.provider.name": "deepseek",
        "gen_ai.request.model": MODEL,
        "gen_ai.conversation.id": "s-7",
        "modelwire.turn": 1,
        "modelwire.turn.end_reason": "completed",
        "gen_ai.usage.input_tokens": 20 + 12,  # the turn's two calls, not the tool's own
        "gen_ai.usage.output_tokens": 5 + 3,
    }
    assert turn.status.status_code is StatusCode.UNSET
    assert tool.name == "execute_tool lookup" and tool.kind is SpanKind.INTERNAL
    assert attrs(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "gen_ai.conversation.id": "s-7",
        "modelwire.turn": 1,
        "modelwire.step": 1,
    }
    assert parent_of(tool) == span_id(turn)
    assert parent_of(step_one) == span_id(turn) and parent_of(step_two) == span_id(turn)
    assert parent_of(inner) == span_id(tool)  # the context crossed into the tool's task
    trace_ids = {s.context.trace_id for s in otel.spans() if s.context is not None}
    assert len(trace_ids) == 1
    for span, step in ((step_one, 1), (step_two, 2)):
        a = attrs(span)
        assert (a["modelwire.turn"], a["modelwire.step"], a["modelwire.attempt"]) == (1, step, 1)
        assert a["gen_ai.conversation.id"] == "s-7"
    assert attrs(step_one)["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert "modelwire.turn" not in attrs(inner)  # another call than the turn's
    assert not [s for s in otel.spans() if "gen_ai.tool.call.arguments" in attrs(s)]
    assert_no_secret(otel.spans())


async def test_a_failed_turn_carries_error_type_its_failure_code(
    otel: Otel, log: SessionLog
) -> None:
    async with Server([429]) as server:
        agent = Agent(deepseek_runtime(server.url), log, "deepseek", MODEL)
        instrument(agent, **otel.kwargs())
        result = await agent.run_turn("s1", "hi")
    assert result.reason.kind == "error"
    (turn,) = otel.named("invoke_agent")
    (call,) = otel.named("chat ")
    assert attrs(turn)["error.type"] == "RATE_LIMIT"
    assert attrs(turn)["modelwire.turn.end_reason"] == "error"
    assert turn.status.status_code is StatusCode.ERROR and turn.status.description == "RATE_LIMIT"
    assert "gen_ai.agent.name" not in attrs(turn) and turn.name == "invoke_agent"
    assert attrs(call)["error.type"] == "RATE_LIMIT" and parent_of(call) == span_id(turn)


async def test_failing_timed_out_and_unknown_tools_are_error_spans_with_their_codes(
    otel: Otel, log: SessionLog
) -> None:
    def boom() -> str:
        """Always fails."""
        raise ValueError("no luck")

    async def slow() -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "never"

    calls = [Call("c1", "boom", "{}"), Call("c2", "slow", "{}"), Call("c3", "nope", "{}")]
    async with Server([tool_body(*calls), "sorry"]) as server:
        agent = Agent(
            deepseek_runtime(server.url),
            log,
            "deepseek",
            MODEL,
            tools=[boom, Tool.from_function(slow, timeout_ms=5_000)],
            sleep=_no_wait,  # the tool timeout elapses at once
        )
        instrument(agent, **otel.kwargs())
        result = await agent.run_turn("s1", "try them")
    assert result.reason.kind == "completed"
    (turn,) = otel.named("invoke_agent")
    tools = {attrs(s)["gen_ai.tool.name"]: s for s in otel.named("execute_tool")}
    codes = {name: attrs(s)["error.type"] for name, s in tools.items()}
    assert codes == {"boom": "TOOL_FAILED", "slow": "TOOL_TIMEOUT", "nope": "UNKNOWN_TOOL"}
    for span in tools.values():
        assert span.status.status_code is StatusCode.ERROR
        assert parent_of(span) == span_id(turn)
        assert "no luck" not in repr(attrs(span))  # the code, never the exception text
    assert "error.type" not in attrs(turn)


async def test_a_turn_cancelled_from_a_tool_is_aborted(otel: Otel, log: SessionLog) -> None:
    def stop(ctx: RunContext) -> str:
        """Cancels the turn it runs in."""
        ctx.signal.cancel("user")
        return "stopping"

    async with Server([tool_body(Call("c1", "stop", "{}"))]) as server:
        agent = Agent(deepseek_runtime(server.url), log, "deepseek", MODEL, tools=[stop])
        instrument(agent, **otel.kwargs())
        result = await agent.run_turn("s1", "stop")
    assert result.reason.kind == "aborted"
    (turn,) = otel.named("invoke_agent")
    assert attrs(turn)["error.type"] == "ABORTED"
    assert attrs(turn)["modelwire.turn.end_reason"] == "aborted"
    assert turn.status.status_code is StatusCode.ERROR


@pytest.mark.parametrize("capture", [False, True])
async def test_tool_arguments_and_results_are_recorded_only_when_opted_in(
    otel: Otel, log: SessionLog, capture: bool
) -> None:
    def echo(text: str) -> str:
        """Echoes."""
        return f"echo: {text}"

    async with Server([tool_body(Call("c1", "echo", '{"text": "ping"}')), "done"]) as server:
        agent = Agent(deepseek_runtime(server.url), log, "deepseek", MODEL, tools=[echo])
        instrument(agent, capture_content=capture, **otel.kwargs())
        await agent.run_turn("s1", "echo ping")
    (tool,) = otel.named("execute_tool")
    a = attrs(tool)
    if capture:
        assert a["gen_ai.tool.call.arguments"] == '{"text": "ping"}'
        assert "echo: ping" in a["gen_ai.tool.call.result"]
    else:
        assert "gen_ai.tool.call.arguments" not in a and "gen_ai.tool.call.result" not in a
    assert_no_secret(otel.spans())


async def test_instrument_agent_alone_adds_only_the_agent_spans(
    otel: Otel, log: SessionLog
) -> None:
    async with Server(["hello"]) as server:
        agent = Agent(deepseek_runtime(server.url), log, "deepseek", MODEL)
        instrument_agent(agent, tracer_provider=otel.tracer_provider)
        await agent.run_turn("s1", "hi")
    assert [s.name for s in otel.spans()] == ["invoke_agent"]


async def test_disposing_an_agent_instrumentation_removes_its_hooks_and_spans(
    otel: Otel, log: SessionLog
) -> None:
    async with Server(["one", "two"]) as server:
        agent = Agent(deepseek_runtime(server.url), log, "deepseek", MODEL)
        dispose = instrument(agent, **otel.kwargs())
        again = instrument(agent, **otel.kwargs())  # already instrumented: nothing added
        await agent.run_turn("s1", "hi")
        again()
        dispose()
        assert (len(agent.hooks.on_turn), len(agent.hooks.on_tool)) == (0, 0)
        await agent.run_turn("s1", "hi again")
    assert sorted(s.name for s in otel.spans()) == ["chat deepseek-v4-flash", "invoke_agent"]


async def test_a_resumed_turn_is_an_invoke_agent_span_with_its_attempts_numbered_on(
    otel: Otel, log: SessionLog, tmp_path: Path
) -> None:
    async with Server(["hello there", "again"]) as server:
        rt = deepseek_runtime(server.url)
        first = await open_log(f"sqlite:///{tmp_path / 'first.db'}")
        try:
            await Agent(rt, first, "deepseek", MODEL).run_turn("s1", "hi")
            events = await first.read("s1")
        finally:
            await first.close()
        cut = next(i for i, e in enumerate(events) if e.type == "assistant/chunk")
        for event in events[: cut + 1]:  # a process that died one chunk into its first attempt
            await log.append("s1", event.data)
        agent = Agent(rt, log, "deepseek", MODEL)
        instrument(agent, **otel.kwargs())
        result = await agent.resume_turn("s1")
    assert (result.turn, result.reason.kind) == (1, "completed")
    (turn,) = otel.named("invoke_agent")
    (call,) = otel.named("chat ")
    assert attrs(turn)["modelwire.turn"] == 1
    assert attrs(turn)["modelwire.turn.end_reason"] == "completed"
    a = attrs(call)
    assert (a["modelwire.turn"], a["modelwire.step"], a["modelwire.attempt"]) == (1, 1, 2)
    assert parent_of(call) == span_id(turn)


async def test_a_pause_and_the_decisions_are_span_events_of_the_turn_spans(
    otel: Otel, log: SessionLog
) -> None:
    """Issue 35: the pausing turn's span says which calls wait; the resumed turn's span carries
    one event per decision, at the decision's log time (the reason only when opted in)."""
    ran: list[str] = []

    def pay(args: dict[str, object]) -> str:
        ran.append("pay")
        return "paid"

    tools = [
        Tool("pay", "Pay.", {"type": "object"}, pay, needs_approval=True),
        Tool("wipe", "Wipe.", {"type": "object"}, lambda args: "wiped", needs_approval=True),
    ]
    calls = [Call("call_1", "pay", "{}"), Call("call_2", "wipe", "{}")]
    async with Server([tool_body(*calls), "done"]) as server:
        agent = Agent(deepseek_runtime(server.url), log, "deepseek", MODEL, tools=tools)
        instrument(agent, **otel.kwargs())
        paused = await agent.run_turn("s-approve", "pay, then wipe")
        await agent.decide("s-approve", "call_1", True, by="alice")
        await agent.decide("s-approve", "call_2", False, "never", by="bob")
        done = await agent.resume_turn("s-approve")
    assert (paused.reason.kind, done.reason.kind, ran) == ("paused", "completed", ["pay"])
    first, second = otel.named("invoke_agent")
    assert attrs(first)["modelwire.turn.end_reason"] == "paused"
    [pause] = first.events
    assert pause.name == "modelwire.turn.paused"
    assert dict(pause.attributes or {}) == {
        "modelwire.tool.call.ids": ("call_1", "call_2"),
        "modelwire.tool.names": ("pay", "wipe"),
    }
    assert attrs(second)["modelwire.turn"] == 1
    decisions = [e for e in second.events if e.name == "modelwire.tool.decision"]
    assert [dict(e.attributes or {}) for e in decisions] == [
        {
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.name": "pay",
            "modelwire.approved": True,
            "modelwire.decided_by": "alice",
        },
        {
            "gen_ai.tool.call.id": "call_2",
            "gen_ai.tool.name": "wipe",
            "modelwire.approved": False,
            "modelwire.decided_by": "bob",
        },
    ]
    logged = [e.time for e in await log.read("s-approve") if e.type == "tool/decision"]
    assert [e.timestamp for e in decisions] == [t * 1_000_000 for t in logged]
    assert [s.attributes["gen_ai.tool.name"] for s in otel.named("execute_tool")] == ["pay"]
