"""Tools: run after the assistant message is committed; every failure becomes an error result."""

from __future__ import annotations

import asyncio

import pytest
from agent_helpers import Rig, of_type, text_script, tool_script, types

from modelwire.agent import Tool, run_tool_call
from modelwire.errors import HarnessError
from modelwire.vocab import TextBlock, ToolCallBlock, ToolResultBlock

SID = "s1"


def _result_text(record: object) -> str:
    block = record.message.content[0]  # type: ignore[attr-defined]
    assert isinstance(block, ToolResultBlock)
    return "".join(b.text for b in block.content if isinstance(b, TextBlock))


async def test_tools_two_step_turn_logs_call_and_result_and_feeds_the_next_step(rig: Rig) -> None:
    async def lookup(args: dict[str, object]) -> str:
        await asyncio.sleep(0)
        return f"weather in {args['city']}: sunny"

    rig.adapter.queue(tool_script("c1", "weather", '{"city":"Oslo"}'), text_script("Sunny."))
    result = await rig.agent(tools=[Tool("weather", "w", {"type": "object"}, lookup)]).run_turn(
        SID, "weather?"
    )
    events = await rig.log.read(SID)
    order = types(events)
    assert order.index("assistant/message") < order.index("tool/call") < order.index("tool/result")
    (call,) = of_type(events, "tool/call")
    (record,) = of_type(events, "tool/result")
    assert (call.call_id, call.name, call.arguments) == ("c1", "weather", '{"city":"Oslo"}')
    assert (record.call_id, record.is_error, record.error_code) == ("c1", False, None)
    assert _result_text(record) == "weather in Oslo: sunny"
    assert rig.adapter.requests[1].messages[-1] == record.message
    assert record.message.content[0].tool_call_id == "c1"
    assert result.text == "Sunny."
    assert [m.role for m in result.messages] == ["user", "assistant", "user", "assistant"]


async def test_tools_harness_error_becomes_an_error_result_with_name_and_code(rig: Rig) -> None:
    def deny(args: dict[str, object]) -> str:
        raise HarnessError("path outside workspace", "ACCESS_DENIED")

    rig.adapter.queue(tool_script("c1", "read", '{"path":"/etc"}'), text_script("sorry"))
    result = await rig.agent(tools=[Tool("read", "r", {"type": "object"}, deny)]).run_turn(SID, "x")
    (record,) = of_type(await rig.log.read(SID), "tool/result")
    assert (record.is_error, record.error_code) == (True, "ACCESS_DENIED")
    text = _result_text(record)
    assert "'read'" in text and "ACCESS_DENIED" in text and "path outside workspace" in text
    assert record.message.content[0].is_error is True
    assert result.reason.kind == "completed"


async def test_tools_invalid_json_arguments_yield_an_error_result(rig: Rig) -> None:
    calls: list[object] = []
    rig.adapter.queue(tool_script("c1", "t", '{"a": 1,'), text_script("ok"))
    tool = Tool("t", "d", {"type": "object"}, lambda a: calls.append(a))
    result = await rig.agent(tools=[tool]).run_turn(SID, "x")
    (record,) = of_type(await rig.log.read(SID), "tool/result")
    assert (record.is_error, record.error_code) == (True, "INVALID_ARGS")
    assert "not valid JSON" in _result_text(record)
    assert calls == []
    assert result.reason.kind == "completed"


@pytest.mark.parametrize(
    ("arguments", "code", "fragment"),
    [
        ("[1,2]", "INVALID_ARGS", "must be a JSON object"),
        ('"text"', "INVALID_ARGS", "must be a JSON object"),
    ],
    ids=["array", "string"],
)
async def test_tools_non_object_arguments_yield_an_error_result(
    arguments: str, code: str, fragment: str
) -> None:
    tool = Tool("t", "d", {"type": "object"}, lambda a: "never")
    outcome = await run_tool_call(ToolCallBlock("c", "t", arguments), {"t": tool})
    assert (outcome.is_error, outcome.error_code) == (True, code)
    assert fragment in outcome.message.content[0].content[0].text  # type: ignore[union-attr]


async def test_tools_unknown_tool_yields_an_error_result() -> None:
    outcome = await run_tool_call(ToolCallBlock("c", "ghost", "{}"), {})
    assert (outcome.is_error, outcome.error_code) == (True, "UNKNOWN_TOOL")
    assert "ghost" in outcome.message.content[0].content[0].text  # type: ignore[union-attr]


async def test_tools_other_exceptions_yield_tool_failed() -> None:
    def crash(args: dict[str, object]) -> str:
        raise ZeroDivisionError("division by zero")

    outcome = await run_tool_call(ToolCallBlock("c", "t", ""), {"t": Tool("t", "d", {}, crash)})
    assert (outcome.is_error, outcome.error_code) == (True, "TOOL_FAILED")
    assert "ZeroDivisionError" in outcome.message.content[0].content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", (TextBlock("plain"),)),
        ({"b": 1, "a": [True, None]}, (TextBlock('{"b":1,"a":[true,null]}'),)),
        ([TextBlock("x"), TextBlock("y")], (TextBlock("x"), TextBlock("y"))),
        (None, ()),
        (42, (TextBlock("42"),)),
    ],
    ids=["text", "json-object", "blocks", "none", "number"],
)
async def test_tools_return_values_become_result_content(value: object, expected: object) -> None:
    outcome = await run_tool_call(
        ToolCallBlock("c", "t", "{}"), {"t": Tool("t", "d", {}, lambda a: value)}
    )
    assert not outcome.is_error
    assert outcome.message.content[0].content == expected  # type: ignore[union-attr]


def test_tools_duplicate_names_are_rejected(rig: Rig) -> None:
    tool = Tool("t", "d", {}, lambda a: "")
    with pytest.raises(HarnessError) as info:
        rig.agent(tools=[tool, Tool("t", "other", {}, lambda a: "")])
    assert info.value.code == "INVALID_CONFIG"
    assert "'t'" in info.value.message


def test_tools_bad_definitions_are_rejected() -> None:
    with pytest.raises(HarnessError):
        Tool("", "d", {}, lambda a: "")
    with pytest.raises(HarnessError):
        Tool("t", "d", [], lambda a: "")  # type: ignore[arg-type]
    with pytest.raises(HarnessError):
        Tool("t", "d", {}, "not callable")  # type: ignore[arg-type]


async def test_tools_several_calls_run_in_order_and_all_results_reach_the_model(rig: Rig) -> None:
    from modelwire.vocab import BlockEnd, BlockStart, Finish, ToolCalls

    chunks = []
    for i, cid in enumerate(("a", "b")):
        chunks += [
            BlockStart(i, "tool-call"),
            BlockEnd(i, ToolCallBlock(cid, "echo", f'{{"v":"{cid}"}}')),
        ]
    rig.adapter.queue([*chunks, Finish(ToolCalls())], text_script("done"))
    tool = Tool("echo", "d", {}, lambda a: a["v"])
    await rig.agent(tools=[tool]).run_turn(SID, "x")
    records = of_type(await rig.log.read(SID), "tool/result")
    assert [_result_text(r) for r in records] == ["a", "b"]
    assert [m.source.kind for m in rig.adapter.requests[1].messages[-2:]] == ["tool", "tool"]


async def test_tools_cancelled_mid_tool_leaves_no_unanswered_call_for_the_next_turn(
    rig: Rig,
) -> None:
    """A turn cancelled after its assistant message committed two tool calls but before their
    results: the next turn first answers both calls with `TOOL_INTERRUPTED` error results, so the
    next request never carries an unanswered tool call (providers reject one)."""
    started = asyncio.Event()

    async def slow(args: dict[str, object]) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    # Two tool calls in one response: re-index the second call's blocks so they stay distinct.
    first, second = tool_script("c1", "slow", "{}"), tool_script("c2", "slow", "{}")
    two_calls = [*first[:-1], *(_shift(chunk, 10) for chunk in second[:-1]), first[-1]]
    rig.adapter.queue(two_calls, text_script("ok"))
    agent = rig.agent(tools=[Tool("slow", "s", {"type": "object"}, slow)])
    task = asyncio.create_task(agent.run_turn(SID, "go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    result = await agent.run_turn(SID, "again")
    assert result.reason.kind == "completed"
    events = await rig.log.read(SID)
    records = of_type(events, "tool/result")
    assert [(r.call_id, r.is_error, r.error_code) for r in records] == [
        ("c1", True, "TOOL_INTERRUPTED"),
        ("c2", True, "TOOL_INTERRUPTED"),
    ]
    order = types(events)
    assert order.index("tool/result") < order.index("turn/start", order.index("turn/end"))
    answered = {
        block.tool_call_id
        for message in rig.adapter.requests[-1].messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
    }
    assert answered == {"c1", "c2"}


def _shift(chunk: object, by: int) -> object:
    import msgspec

    return msgspec.structs.replace(chunk, index=chunk.index + by)  # type: ignore[attr-defined,type-var]
