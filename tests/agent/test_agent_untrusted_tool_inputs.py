"""Issue 29, tools: what a model sends is validated strictly and never ends a turn as `UNKNOWN`.

Rules pinned: a string is never a number (`"nan"`, `"5"`, `"inf"` do not reach a `float` or an
`int` parameter, and `[1.5, "nan", 3]` is not a `list[float]` answer); arguments or an answer
nesting past `MAX_JSON_DEPTH` are a classified failure naming the limit (an `INVALID_ARGS`
result the model sees, an `OUTPUT_INVALID` end of the turn) and the turn goes on or ends
cleanly; a tool that ran and returned text or JSON holding a lone surrogate has its result
stored (text: U+FFFD; JSON: ASCII escapes), never lost.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_helpers import Rig, of_type, text_script, tool_script

from modelwire import GenerateOptions, LlmRuntime, OutputSchema, user_message
from modelwire.agent import FINAL_TOOL, Tool
from modelwire.errors import ErrorCode
from modelwire.vocab import Error, Finish, ResolvedModelInfo, TextBlock, ToolResultBlock
from modelwire.vocab.json import MAX_JSON_DEPTH

SID = "untrusted"
DEEP = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
LIMIT_TEXT = f"deeper than {MAX_JSON_DEPTH} levels (the limit)"


def _result_text(record: Any) -> str:
    block = record.message.content[0]
    assert isinstance(block, ToolResultBlock)
    return "".join(b.text for b in block.content if isinstance(b, TextBlock))


async def _one_call(rig: Rig, tool: Any, name: str, arguments: str) -> Any:
    rig.adapter.queue(tool_script("c1", name, arguments), text_script("done"))
    result = await rig.agent(tools=[tool]).run_turn(SID, "go")
    assert (result.reason.kind, result.output) == ("completed", "done")
    (record,) = of_type(await rig.log.read(SID), "tool/result")
    return record


@pytest.mark.parametrize("value", ['"nan"', '"NaN"', '"inf"', '"-Infinity"', '"5"', "1e999"])
async def test_a_string_or_an_out_of_range_number_never_reaches_a_float_parameter(
    rig: Rig, value: str
) -> None:
    seen: list[float] = []

    def scale(x: float) -> str:
        seen.append(x)
        return "scaled"

    record = await _one_call(rig, scale, "scale", f'{{"x": {value}}}')
    assert (record.is_error, record.error_code) == (True, "INVALID_ARGS")
    assert "$.x" in _result_text(record) or "out of range" in _result_text(record)
    assert seen == []


async def test_a_string_is_not_an_int_or_a_bool_parameter(rig: Rig) -> None:
    def pick(n: int, flag: bool) -> str:
        return "picked"

    record = await _one_call(rig, pick, "pick", '{"n": "5", "flag": "true"}')
    assert (record.is_error, record.error_code) == (True, "INVALID_ARGS")
    assert "Expected `int`, got `str` - at `$.n`" in _result_text(record)


@pytest.mark.parametrize("kind", ["typed", "hand-written"])
async def test_arguments_nested_past_the_depth_limit_are_an_invalid_args_result_naming_it(
    rig: Rig, kind: str
) -> None:
    ran: list[object] = []

    def nest(x: list[Any]) -> str:
        ran.append(x)
        return "ran"

    made = (
        Tool.from_function(nest)
        if kind == "typed"
        else Tool("nest", "d", {"type": "object"}, lambda args: ran.append(args) or "ran")
    )
    record = await _one_call(rig, made, "nest", f'{{"x": {DEEP}}}')
    assert (record.is_error, record.error_code) == (True, "INVALID_ARGS")
    assert LIMIT_TEXT in _result_text(record) and "'nest'" in _result_text(record)
    assert ran == []
    at_limit = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)  # the object is a level
    rig.adapter.queue(tool_script("c2", "nest", f'{{"x": {at_limit}}}'), text_script("ok"))
    await rig.agent(tools=[made]).run_turn(SID, "again")
    assert of_type(await rig.log.read(SID), "tool/result")[-1].is_error is False


def _final(arguments: str) -> list[Any]:
    return tool_script("f1", FINAL_TOOL, arguments)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ('{"result": [1.5, "nan", 3]}', "Expected `float`, got `str` - at `$.result[1]`"),
        ('{"result": [1.5, "2", 3]}', "Expected `float`, got `str` - at `$.result[1]`"),
        ('{"result": ' + DEEP + "}", LIMIT_TEXT),
    ],
    ids=["nan-string", "digit-string", "too-deep"],
)
async def test_a_list_float_answer_is_validated_strictly_and_fails_classified(
    rig: Rig, answer: str, problem: str
) -> None:
    rig.adapter.queue(_final(answer), _final(answer))
    result = await rig.agent(output_type=list[float], output_retries=1).run_turn(SID, "numbers")
    assert result.reason.kind == "error"
    failure = result.reason.failure  # type: ignore[union-attr]
    assert failure.code == ErrorCode.OUTPUT_INVALID and problem in failure.message
    rig.adapter.queue(_final('{"result": [1.5, 2, 3]}'))
    fine = await rig.agent(output_type=list[float]).run_turn("fine", "numbers")
    assert fine.output == [1.5, 2.0, 3.0]


async def test_a_structured_answer_nested_past_the_limit_is_output_invalid(rig: Rig) -> None:
    rig.adapter.info = ResolvedModelInfo(
        provider="scripted", id="m1", name="m1", structured_output="native-strict"
    )
    rig.adapter.queue(text_script(DEEP), text_script(DEEP))
    result = await rig.agent(output_type=list[Any], output_retries=1).run_turn(SID, "deep")
    failure = result.reason.failure  # type: ignore[union-attr]
    assert failure.code == ErrorCode.OUTPUT_INVALID and LIMIT_TEXT in failure.message


async def test_the_runtime_schema_check_refuses_an_answer_nested_past_the_limit(rig: Rig) -> None:
    rig.adapter.info = ResolvedModelInfo(
        provider="scripted", id="m1", name="m1", structured_output="emulated"
    )
    rig.adapter.queue(text_script(DEEP))
    runtime: LlmRuntime = rig.runtime
    schema = OutputSchema("deep", {"type": "array"})
    options = GenerateOptions("scripted", "m1", (user_message("deep?"),), output=schema)
    chunks = [c async for c in runtime.stream(options)]
    finish = chunks[-1]
    assert isinstance(finish, Finish) and isinstance(finish.reason, Error)
    assert finish.reason.failure.code == ErrorCode.OUTPUT_INVALID
    assert f"nests JSON deeper than {MAX_JSON_DEPTH} levels" in finish.reason.failure.message


@pytest.mark.parametrize(
    ("returned", "stored"),
    [
        ("bad \ud800 text", "bad \ufffd text"),
        ("pair \ud83d\ude00 ok", "pair \U0001f600 ok"),
        ({"key": "lone \udfff"}, '{"key":"lone \\udfff"}'),
        ([TextBlock("block \ud800")], "block \ufffd"),
    ],
    ids=["text", "surrogate-pair", "json-value", "blocks"],
)
async def test_a_tool_result_with_a_lone_surrogate_is_stored_never_lost(
    rig: Rig, returned: object, stored: str
) -> None:
    runs: list[int] = []

    def emit() -> object:
        runs.append(1)
        return returned

    made = Tool("emit", "d", {"type": "object"}, lambda args: emit())
    record = await _one_call(rig, made, "emit", "{}")
    assert (record.is_error, _result_text(record), runs) == (False, stored, [1])
    if isinstance(returned, dict):
        assert json.loads(_result_text(record)) == returned  # the escapes keep the value exact
    replayed = rig.adapter.requests[1].messages[-1]  # the model got the stored result
    assert replayed == record.message


async def test_a_tool_error_with_a_lone_surrogate_is_stored(rig: Rig) -> None:
    def fail() -> str:
        raise ValueError("broken \ud800 here")

    record = await _one_call(rig, fail, "fail", "{}")
    assert (record.is_error, record.error_code) == (True, "TOOL_FAILED")
    assert "broken \ufffd here" in _result_text(record)
