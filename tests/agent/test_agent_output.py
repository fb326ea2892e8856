"""Typed outputs: `output_type` asks for the answer as the route allows (structured output, a
forced or an offered final-answer tool), validates it into the type, sends a rejected answer back
for `output_retries` corrections (logged), then ends the turn in `OUTPUT_INVALID`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypedDict

import msgspec
import pytest
from agent_helpers import Rig, of_type, text_script, tool_script
from test_agent_resume import _after, _dead, _is

from modelwire.agent import FINAL_TOOL, Agent, Tool
from modelwire.errors import HarnessError
from modelwire.events import OutputCorrection
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Finish,
    OutputSchema,
    PluginSource,
    ResolvedModelInfo,
    Stop,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    ToolCalls,
    ToolChoiceTool,
)

SID = "typed"


class City(msgspec.Struct):
    name: str
    population: int


class StrictCity(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    population: int


@dataclasses.dataclass
class Pair:
    left: int
    right: int


class Row(TypedDict):
    id: int


CITY = '{"name": "Tokyo", "population": 14000000}'


def _advertise(rig: Rig, **info: Any) -> None:
    rig.adapter.info = ResolvedModelInfo(provider="scripted", id="m1", name="m1", **info)


def _final(arguments: str, call_id: str = "f1") -> list[StreamChunk]:
    return tool_script(call_id, FINAL_TOOL, arguments)


def _corrections(events: Sequence[Any]) -> list[OutputCorrection]:
    return of_type(events, "output/correction")


async def test_offered_final_tool_without_route_support(rig: Rig) -> None:
    rig.adapter.queue(_final(CITY))
    result = await rig.agent(output_type=City, system="Be brief.").run_turn(SID, "city?")
    assert (result.reason.kind, result.output) == ("completed", City("Tokyo", 14000000))
    (request,) = rig.adapter.requests
    assert [t.name for t in request.tools or ()] == [FINAL_TOOL]
    assert request.tool_choice is None and request.output is None
    assert request.system is not None and request.system.startswith("Be brief.\n\n")
    assert f"call the `{FINAL_TOOL}` tool" in request.system
    schema = msgspec.json.decode(msgspec.json.encode((request.tools or ())[0].parameters))
    assert schema == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["name", "population"],
    }
    (record,) = of_type(await rig.log.read(SID), "tool/result")
    assert (record.name, record.is_error) == (FINAL_TOOL, False)


async def test_forced_final_tool_where_the_route_advertises_tool_choice(rig: Rig) -> None:
    _advertise(rig, tool_choice=True)
    rig.adapter.queue(_final(CITY), tool_script("c1", "lookup", "{}"), _final(CITY, "f2"))
    await rig.agent(output_type=City).run_turn(SID, "city?")
    assert rig.adapter.requests[0].tool_choice == ToolChoiceTool(FINAL_TOOL)
    assert rig.adapter.requests[0].system is None  # forced: no instruction needed

    def lookup() -> str:
        return "Tokyo"

    result = await rig.agent(output_type=City, tools=[lookup]).run_turn(SID, "again")
    assert [r.tool_choice for r in rig.adapter.requests[1:]] == ["required", "required"]
    assert result.output == City("Tokyo", 14000000)
    assert [t.name for t in rig.adapter.requests[1].tools or ()] == ["lookup", FINAL_TOOL]


async def test_structured_output_where_the_route_advertises_it(rig: Rig) -> None:
    _advertise(rig, structured_output="native-json", tool_choice=True)
    rig.adapter.queue(text_script(CITY))
    result = await rig.agent(output_type=City).run_turn(SID, "city?")
    assert result.output == City("Tokyo", 14000000)
    (request,) = rig.adapter.requests
    assert request.tools is None and request.tool_choice is None
    assert isinstance(request.output, OutputSchema) and request.output.name == "City"
    assert request.output.strict is False  # the struct's schema is not closed


async def test_rejected_structured_answer_is_corrected_once_and_logged(rig: Rig) -> None:
    """native-json: the runtime validates the answer; OUTPUT_INVALID becomes a correction."""
    _advertise(rig, structured_output="native-json")
    rig.adapter.queue(text_script('{"name": "Tokyo"}'), text_script(CITY))
    result = await rig.agent(output_type=City).run_turn(SID, "city?")
    assert (result.reason.kind, result.output) == ("completed", City("Tokyo", 14000000))
    events = await rig.log.read(SID)
    (correction,) = _corrections(events)
    assert (correction.turn, correction.step, correction.correction) == (1, 1, 1)
    assert "population" in correction.problem
    asked = rig.adapter.requests[1].messages[-1]
    assert asked.role == "user" and asked.source == PluginSource("modelwire.output")
    assert "population" in asked.content[0].text  # type: ignore[union-attr]
    assert [e.data.step for e in events if e.type == "step/start"] == [1, 2]


async def test_corrections_are_bounded_then_output_invalid(rig: Rig) -> None:
    rig.adapter.queue(
        _final('{"name": "Tokyo", "population": "many"}'),
        _final('{"name": "Tokyo"}', "f2"),
    )
    result = await rig.agent(output_type=City).run_turn(SID, "city?")
    assert result.reason.kind == "error" and result.output is None
    assert result.failure is not None and result.failure.code == "OUTPUT_INVALID"
    assert "Object missing required field `population`" in result.failure.message
    events = await rig.log.read(SID)
    (correction,) = _corrections(events)
    assert "Expected `int`, got `str` - at `$.population`" in correction.problem
    first, second = of_type(events, "tool/result")
    assert (first.is_error, first.error_code) == (True, "OUTPUT_INVALID")
    assert (second.is_error, second.error_code) == (True, "OUTPUT_INVALID")
    assert rig.adapter.requests[1].messages[-1] == first.message  # told as the tool's error
    assert of_type(events, "turn/end")[-1].reason.failure.code == "OUTPUT_INVALID"


async def test_text_instead_of_the_final_tool_asks_for_the_tool(rig: Rig) -> None:
    rig.adapter.queue(text_script("It is Tokyo."), _final(CITY))
    result = await rig.agent(output_type=City, output_retries=2).run_turn(SID, "city?")
    assert result.output == City("Tokyo", 14000000)
    asked = rig.adapter.requests[1].messages[-1]
    assert asked.source == PluginSource("modelwire.output")
    assert FINAL_TOOL in asked.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("output_type", "answer", "expected"),
    [
        (int, '{"result": 42}', 42),
        (list[str], '{"result": ["a", "b"]}', ["a", "b"]),
        (Pair, '{"left": 1, "right": 2}', Pair(1, 2)),
        (Row, '{"id": 7}', {"id": 7}),
    ],
    ids=["int", "list", "dataclass", "typeddict"],
)
async def test_plain_types_dataclasses_and_typeddicts(
    rig: Rig, output_type: Any, answer: str, expected: object
) -> None:
    rig.adapter.queue(_final(answer))
    result = await rig.agent(output_type=output_type).run_turn(SID, "?")
    assert result.output == expected
    params = (rig.adapter.requests[0].tools or ())[0].parameters
    wrapped = output_type in (int, list[str])
    assert ("result" in params["properties"]) is wrapped  # type: ignore[index,operator]


async def test_per_turn_output_type_and_plain_text_default(rig: Rig) -> None:
    rig.adapter.queue(text_script("plain"), _final(CITY))
    agent = rig.agent()
    assert (await agent.run_turn(SID, "text")).output == "plain"
    typed = await agent.run_turn(SID, "typed", output_type=City)
    assert typed.output == City("Tokyo", 14000000)
    assert rig.adapter.requests[0].tools is None  # the plain turn offered no final tool


def test_bad_output_types_and_a_clashing_tool_are_refused(rig: Rig) -> None:
    class Opaque:
        pass

    with pytest.raises(HarnessError) as info:
        rig.agent(output_type=Opaque)
    assert info.value.code == "INVALID_CONFIG" and "output_type" in info.value.message
    clash = Tool(FINAL_TOOL, "mine", {"type": "object"}, lambda args: "x")
    with pytest.raises(HarnessError) as named:
        rig.agent(output_type=City, tools=[clash])
    assert named.value.code == "INVALID_CONFIG" and FINAL_TOOL in named.value.message
    with pytest.raises(HarnessError) as retries:
        rig.agent(output_type=City, output_retries=-1)
    assert retries.value.code == "INVALID_CONFIG" and "output_retries" in retries.value.message


async def test_resume_keeps_the_correction_count_from_the_log(rig: Rig) -> None:
    """A process died after one correction: the resumed turn has no correction left."""
    rig.adapter.queue(_final('{"name": "x"}'), _final(CITY, "f2"))
    source = rig.agent(output_type=City)
    await source.run_turn("source", "city?")
    events = await rig.log.read("source")
    log = await _dead(events, _after(events, _is("output/correction")) + 1)  # + step/end
    rig.adapter.requests.clear()
    rig.adapter.queue(_final('{"name": "y"}', "f3"))
    agent = Agent(rig.runtime, log, "scripted", "m1", output_type=City)
    result = await agent.resume_turn("resumed")
    assert result.failure is not None and result.failure.code == "OUTPUT_INVALID"
    assert len(_corrections(await log.read("resumed"))) == 1


async def test_resume_accepts_a_final_answer_committed_before_the_crash(rig: Rig) -> None:
    rig.adapter.queue(_final(CITY))
    await rig.agent(output_type=City).run_turn("source", "city?")
    events = await rig.log.read("source")
    log = await _dead(events, _after(events, _is("tool/call")))  # died running the final tool
    result = await Agent(rig.runtime, log, "scripted", "m1", output_type=City).resume_turn(
        "resumed"
    )
    assert (result.reason.kind, result.output) == ("completed", City("Tokyo", 14000000))
    (record,) = of_type(await log.read("resumed"), "tool/result")
    assert record.error_code == "TOOL_INTERRUPTED"


async def test_a_final_call_beside_other_tools_runs_them_all(rig: Rig) -> None:
    calls: list[str] = []

    def note(text: str) -> str:
        calls.append(text)
        return "noted"

    both = [
        BlockStart(0, "tool-call"),
        BlockEnd(0, ToolCallBlock("c1", "note", '{"text": "hi"}')),
        BlockStart(1, "tool-call"),
        BlockEnd(1, ToolCallBlock("f1", FINAL_TOOL, CITY)),
        Finish(ToolCalls()),
    ]
    rig.adapter.queue(both)
    result = await rig.agent(output_type=City, tools=[note]).run_turn(SID, "go")
    assert result.output == City("Tokyo", 14000000) and calls == ["hi"]
    names = [r.name for r in of_type(await rig.log.read(SID), "tool/result")]
    assert names == ["note", FINAL_TOOL]
    assert len(rig.adapter.requests) == 1


async def test_text_blocks_of_a_structured_answer_are_joined(rig: Rig) -> None:
    _advertise(rig, structured_output="native-strict")  # enforced: the agent still validates
    chunks: list[StreamChunk] = [
        BlockStart(0, "text"),
        BlockEnd(0, TextBlock('{"name": "Tokyo", ')),
        BlockStart(1, "text"),
        BlockEnd(1, TextBlock('"population": 1}')),
        Finish(Stop()),
    ]
    rig.adapter.queue(chunks, text_script('{"name": "Tokyo", "population": -1.5}'))
    result = await rig.agent(output_type=StrictCity).run_turn(SID, "?")
    assert result.output == StrictCity("Tokyo", 1)
    assert rig.adapter.requests[0].output.strict is True  # type: ignore[union-attr]
    again = await rig.agent(output_type=StrictCity, output_retries=0).run_turn(SID, "?")
    assert again.failure is not None and again.failure.code == "OUTPUT_INVALID"
    assert "Expected `int`, got `float`" in again.failure.message


@pytest.mark.parametrize("died_after", ["step/end", "output/correction"])
async def test_resume_after_a_rejected_answer_corrects_it_once(rig: Rig, died_after: str) -> None:
    """Died after the rejected Step ended (the correction not yet logged) or after the correction
    was logged (its message not yet entered): either way one correction, asked for again."""
    _advertise(rig, structured_output="native-json")
    rig.adapter.queue(text_script('{"name": "x"}'), text_script(CITY))
    await rig.agent(output_type=City).run_turn("source", "city?")
    events = await rig.log.read("source")
    log = await _dead(events, _after(events, _is(died_after)))
    rig.adapter.requests.clear()
    rig.adapter.queue(text_script(CITY))
    agent = Agent(rig.runtime, log, "scripted", "m1", output_type=City)
    result = await agent.resume_turn("resumed")
    assert (result.reason.kind, result.output) == ("completed", City("Tokyo", 14000000))
    resumed = await log.read("resumed")
    assert [c.correction for c in _corrections(resumed)] == [1]
    asked = rig.adapter.requests[0].messages[-1]
    assert asked.source == PluginSource("modelwire.output")
