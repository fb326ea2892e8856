"""Validation failures round-trip through the real `DeepSeekAdapter` on a loopback server: a tool
call with invalid arguments, and a typed answer that needs a correction."""

from __future__ import annotations

import json

import msgspec
from agent_helpers import of_type
from test_agent_deepseek_scenarios import (
    MODEL,
    ROUTE,
    LoopbackServer,
    runtime_for,
    server,
    text_answer,
    tool_answer,
)

from modelwire.agent import FINAL_TOOL, Agent, tool
from modelwire.session import MemoryLog

__all__ = ["server"]

SID = "typed-deepseek"


class City(msgspec.Struct):
    name: str
    population: int


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


async def test_invalid_tool_arguments_reach_the_model_and_it_corrects_them(
    server: LoopbackServer,
) -> None:
    server.handlers += [
        tool_answer("call-1", "add", '{"a": 1, "b": "two"}'),
        tool_answer("call-2", "add", '{"a": 1, "b": 2}'),
        text_answer("3"),
    ]
    log = MemoryLog()
    agent = Agent(runtime_for(server), log, ROUTE, MODEL, tools=[add])
    result = await agent.run_turn(SID, "1 + 2?")
    assert (result.reason.kind, result.output) == ("completed", "3")
    (spec,) = server.bodies[0]["tools"]  # type: ignore[misc]
    assert spec["function"]["parameters"]["properties"]["a"] == {
        "type": "integer",
        "description": "The first.",
    }
    told = server.bodies[1]["messages"][-1]  # type: ignore[index]
    assert told["role"] == "tool" and told["tool_call_id"] == "call-1"
    assert "Expected `int`, got `str` - at `$.b`" in json.dumps(told["content"])
    codes = [r.error_code for r in of_type(await log.read(SID), "tool/result")]
    assert codes == ["INVALID_ARGS", None]


async def test_a_rejected_typed_answer_is_corrected_through_the_adapter(
    server: LoopbackServer,
) -> None:
    runtime = runtime_for(server)
    info = await runtime.resolve_model_info(ROUTE, MODEL)
    good = '{"name": "Tokyo", "population": 14000000}'
    if info.structured_output is not None:  # DeepSeek's JSON mode: the runtime validates
        server.handlers += [text_answer('{"name": "Tokyo"}'), text_answer(good)]
    else:
        server.handlers += [
            tool_answer("f1", FINAL_TOOL, '{"name": "Tokyo"}'),
            tool_answer("f2", FINAL_TOOL, good),
        ]
    log = MemoryLog()
    result = await Agent(runtime, log, ROUTE, MODEL, output_type=City).run_turn(SID, "city?")
    assert (result.reason.kind, result.output) == ("completed", City("Tokyo", 14000000))
    (correction,) = of_type(await log.read(SID), "output/correction")
    assert "population" in correction.problem
    assert "population" in json.dumps(server.bodies[1]["messages"][-1])
    assert len(server.bodies) == 2
