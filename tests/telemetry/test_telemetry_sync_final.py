"""Two telemetry edges: a blocking `generate_sync` call runs in the caller's trace context (its
span is the caller's child, though the call runs on the sync loop's thread), and the final-answer
tool of a typed-output turn is an `execute_tool` span like any other tool call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
from otel_helpers import (
    Otel,
    Server,
    attrs,
    deepseek_runtime,
    parent_of,
    span_id,
)

import modelwire as mw
from modelwire.agent import Agent
from modelwire.runtime.adapter import LlmAdapter
from modelwire.runtime.sync import run_sync
from modelwire.session import SessionLog
from modelwire.telemetry import instrument

MODEL = "deepseek-v4-flash"


class City(msgspec.Struct):
    name: str


def test_generate_sync_runs_in_the_callers_trace_context(otel: Otel) -> None:
    server = Server(["hello"])
    run_sync(server.__aenter__)  # served by the sync loop: the blocked caller is not its loop
    try:
        rt = deepseek_runtime(server.url)
        instrument(rt, **otel.kwargs())
        tracer = otel.tracer_provider.get_tracer("caller")
        with tracer.start_as_current_span("caller") as caller:
            result = rt.generate_sync(
                mw.GenerateOptions("deepseek", MODEL, (mw.user_message("hi"),))
            )
    finally:
        run_sync(lambda: server.__aexit__(None, None, None))
    assert result.finish == mw.Stop()
    (call,) = otel.named("chat ")
    assert parent_of(call) == caller.get_span_context().span_id
    assert call.context is not None
    assert call.context.trace_id == caller.get_span_context().trace_id


class AnswerTool(LlmAdapter):
    """A model without native structured output (no model info): it calls `lookup`, then
    answers through the final-answer tool."""

    def __init__(self) -> None:
        self.calls = [
            ("call_1", "lookup", '{"q": "capital"}'),
            ("call_9", "final_result", '{"name": "Lisbon"}'),
        ]

    async def resolve_model(self, provider: str, model: str) -> mw.ResolvedModelInfo:
        return mw.ResolvedModelInfo(provider=provider, id=model, name=model)

    async def stream(self, options: mw.GenerateOptions) -> AsyncIterator[mw.StreamChunk]:
        call_id, name, arguments = self.calls.pop(0)
        yield mw.BlockStart(0, "tool-call")
        yield mw.ToolCallDelta(0, call_id, arguments, name=name)
        yield mw.BlockEnd(0, mw.ToolCallBlock(call_id, name, arguments))
        yield mw.Finish(mw.ToolCalls())


async def test_the_final_answer_tool_is_an_execute_tool_span(otel: Otel, log: SessionLog) -> None:
    def lookup(q: str) -> str:
        """Look `q` up."""
        return "Lisbon"

    rt = mw.LlmRuntime()
    rt.register_adapter(["scripted"], AnswerTool())
    agent = Agent(rt, log, "scripted", "m1", tools=[lookup], output_type=City)
    instrument(agent, **otel.kwargs())
    result = await agent.run_turn("s-1", "the capital?")
    assert result.output == City("Lisbon")
    (turn,) = otel.named("invoke_agent")
    tools = {attrs(s)["gen_ai.tool.name"]: s for s in otel.named("execute_tool")}
    assert set(tools) == {"lookup", "final_result"}
    final = tools["final_result"]
    assert final.name == "execute_tool final_result"
    assert attrs(final)["gen_ai.tool.call.id"] == "call_9"
    assert parent_of(final) == span_id(turn)
