"""`Agent.resume_turn`: a turn a dead process left open is continued, not repaired and abandoned.

A dead process is simulated on the memory log: a real turn runs to its end on a source session,
then a fresh log receives only the prefix of its events up to the death point (every event a
process killed right after that append leaves behind). A new `Agent` resumes that prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from agent_helpers import (
    RetryTimes,
    Rig,
    error_script,
    of_type,
    text_script,
    tool_script,
    types,
)

from modelwire.agent import Agent, Tool
from modelwire.agent.resume import remaining_delay_ms, resume_point
from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import Event, MemoryLog
from modelwire.vocab import Finish, MaxTokens, TextBlock, ToolResultBlock

SRC, SID = "source", "resumed"


async def _source(
    rig: Rig, *scripts: Any, plugins: Sequence[Any] = (), **kwargs: Any
) -> list[Event]:
    """Run one complete turn on the source session and return its events."""
    rig.adapter.queue(*scripts)
    agent = rig.agent(plugins=plugins, **kwargs)
    await agent.run_turn(SRC, "hi")
    await agent.close()
    rig.adapter.requests.clear()
    return await rig.log.read(SRC)


def _after(events: Sequence[Event], pred: Callable[[Event], bool], nth: int = 1) -> int:
    """How many events a process that died right after the `nth` event matching `pred` left."""
    hits = [i for i, e in enumerate(events) if pred(e)]
    return hits[nth - 1] + 1


def _is(name: str) -> Callable[[Event], bool]:
    return lambda e: e.type == name


async def _dead(events: Sequence[Event], keep: int) -> MemoryLog:
    """A fresh memory log holding the first `keep` events of `events` (original times)."""
    log = MemoryLog()
    for event in events[:keep]:
        await log.append(SID, event.data)
    return log


def _agent(rig: Rig, log: MemoryLog, **kwargs: Any) -> Agent:
    return Agent(runtime=rig.runtime, log=log, provider="scripted", model="m1", **kwargs)


def _contiguous(events: Sequence[Event]) -> None:
    assert [e.seq for e in events] == list(range(len(events)))


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, args: dict[str, object]) -> str:
        self.calls += 1
        return f"ran {self.calls}"


# ---- nothing to resume ---------------------------------------------------------------------


async def test_resume_without_an_open_turn_raises_nothing_to_resume(rig: Rig) -> None:
    agent = rig.agent()
    with pytest.raises(HarnessError) as unknown:
        await agent.resume_turn("nobody")
    assert unknown.value.code == ErrorCode.NOTHING_TO_RESUME
    assert "'nobody'" in str(unknown.value) and "does not exist" in str(unknown.value)

    rig.adapter.queue(text_script("ok"))
    await agent.run_turn(SID, "hi")
    before = await rig.log.read(SID)
    with pytest.raises(HarnessError) as closed:
        await agent.resume_turn(SID)
    assert closed.value.code == ErrorCode.NOTHING_TO_RESUME
    assert f"{SID!r}" in str(closed.value)
    assert await rig.log.read(SID) == before  # nothing appended


# ---- an open Step without a committed message ----------------------------------------------


async def test_resume_continues_a_step_cut_off_mid_stream_with_the_next_attempt(rig: Rig) -> None:
    events = await _source(rig, text_script("hello"))
    log = await _dead(events, _after(events, _is("assistant/chunk"), 3))
    rig.adapter.queue(text_script("again"))
    result = await _agent(rig, log).resume_turn(SID)

    assert (result.turn, result.reason.kind, result.text) == (1, "completed", "again")
    out = await log.read(SID)
    _contiguous(out)
    assert types(out).count("turn/start") == 1 and types(out).count("step/start") == 1
    assert of_type(out, "turn/end")[0].reason.kind == "completed"
    (message,) = of_type(out, "assistant/message")
    assert (message.turn, message.step, message.attempt) == (1, 1, 2)
    cited = {e.seq for e in out if e.type == "assistant/chunk" and e.data.attempt == 2}
    assert set(message.source_event_seqs) == cited
    assert of_type(out, "request/header")[-1].reason == "resume"
    (request,) = rig.adapter.requests
    assert [m.content for m in request.messages] == [(TextBlock("hi"),)]  # no partial prefix
    assert [m.role for m in result.messages] == ["user", "assistant"]


async def test_resume_reruns_the_request_error_hook_for_a_failure_nothing_decided_on(
    rig: Rig,
) -> None:
    events = await _source(
        rig,
        error_script("SERVER", "overloaded", status=503),
        text_script("ok"),
        plugins=[RetryTimes(1)],
    )
    keep = _after(
        events, lambda e: e.type == "assistant/chunk" and isinstance(e.data.chunk, Finish)
    )
    log = await _dead(events, keep)
    retry = RetryTimes(1)
    rig.adapter.queue(text_script("recovered"))
    result = await _agent(rig, log, plugins=[retry]).resume_turn(SID)

    assert (result.reason.kind, result.text) == ("completed", "recovered")
    (ctx,) = retry.calls
    assert (ctx.turn, ctx.step, ctx.attempt, ctx.provider) == (1, 1, 1, "scripted")
    assert (ctx.failure.code, ctx.failure.status) == ("SERVER", 503)
    assert ctx.retry_policy is not None  # the route's policy, re-prepared from the logged header
    out = await log.read(SID)
    _contiguous(out)
    assert of_type(out, "assistant/message")[0].attempt == 2


async def test_resume_ends_the_turn_in_error_when_no_listener_retries_the_logged_failure(
    rig: Rig,
) -> None:
    events = await _source(
        rig,
        error_script("SERVER", "overloaded", status=503),
        text_script("ok"),
        plugins=[RetryTimes(1)],
    )
    keep = _after(
        events, lambda e: e.type == "assistant/chunk" and isinstance(e.data.chunk, Finish)
    )
    log = await _dead(events, keep)
    result = await _agent(rig, log).resume_turn(SID)

    assert result.reason.kind == "error" and result.failure is not None
    assert (result.failure.code, result.failure.message) == ("SERVER", "overloaded")
    assert rig.adapter.requests == []  # the failure was settled without another call
    out = await log.read(SID)
    assert types(out)[-2:] == ["step/end", "turn/end"]
    assert "assistant/message" not in types(out)


# ---- an open Step whose message was committed ----------------------------------------------


async def test_resume_answers_tool_calls_cut_off_in_execution_and_runs_the_next_step(
    rig: Rig,
) -> None:
    tool = Counting()
    echo = Tool("echo", "echo", {"type": "object"}, tool)
    events = await _source(
        rig, tool_script("c1", "echo", '{"v":"a"}'), text_script("done"), tools=[echo]
    )
    assert tool.calls == 1
    log = await _dead(events, _after(events, _is("tool/call")))  # died inside the tool
    rig.adapter.queue(text_script("after"))
    result = await _agent(rig, log, tools=[echo]).resume_turn(SID)

    assert tool.calls == 1  # never run again: it may have had side effects
    assert (result.turn, result.reason.kind, result.text) == (1, "completed", "after")
    out = await log.read(SID)
    _contiguous(out)
    (answer,) = of_type(out, "tool/result")
    assert (answer.call_id, answer.is_error, answer.error_code) == ("c1", True, "TOOL_INTERRUPTED")
    order = types(out)
    assert order.index("tool/result") < order.index("step/end") < order.index("step/start", 2)
    assert [(s.turn, s.step) for s in of_type(out, "step/start")] == [(1, 1), (1, 2)]
    (request,) = rig.adapter.requests
    last = request.messages[-1].content[0]
    assert isinstance(last, ToolResultBlock) and last.tool_call_id == "c1" and last.is_error


async def test_resume_closes_a_step_whose_answer_was_committed_and_completes_the_turn(
    rig: Rig,
) -> None:
    events = await _source(rig, text_script("answered"))
    log = await _dead(events, _after(events, _is("assistant/message")))
    result = await _agent(rig, log).resume_turn(SID)

    assert (result.reason.kind, result.text) == ("completed", "answered")
    assert rig.adapter.requests == []
    out = await log.read(SID)
    assert types(out)[-2:] == ["step/end", "turn/end"]
    _contiguous(out)


async def test_resume_after_a_max_tokens_answer_ends_the_turn_max_tokens(rig: Rig) -> None:
    events = await _source(rig, text_script("cut", reason=MaxTokens()))
    log = await _dead(events, _after(events, _is("assistant/message")))
    result = await _agent(rig, log).resume_turn(SID)
    assert result.reason.kind == "max-tokens" and rig.adapter.requests == []


# ---- an open turn without an open Step -----------------------------------------------------


async def test_resume_between_steps_continues_with_the_next_step(rig: Rig) -> None:
    tool = Counting()
    echo = Tool("echo", "echo", {"type": "object"}, tool)
    events = await _source(rig, tool_script("c1", "echo", "{}"), text_script("done"), tools=[echo])
    log = await _dead(events, _after(events, _is("step/end")))
    rig.adapter.queue(text_script("next"))
    result = await _agent(rig, log, tools=[echo]).resume_turn(SID)

    assert (result.reason.kind, result.text, tool.calls) == ("completed", "next", 1)
    out = await log.read(SID)
    assert [(s.turn, s.step) for s in of_type(out, "step/start")] == [(1, 1), (1, 2)]
    assert [r.message.content[0].content for r in of_type(out, "tool/result")] == [
        (TextBlock("ran 1"),)
    ]
    assert rig.adapter.requests[0].messages[-1].role == "user"  # the logged tool result


async def test_resume_after_a_step_closed_in_error_ends_the_turn_in_error(rig: Rig) -> None:
    events = await _source(rig, error_script("QUOTA", "no credit"))
    assert of_type(events, "turn/end")[0].reason.kind == "error"
    log = await _dead(events, _after(events, _is("step/end")))
    result = await _agent(rig, log).resume_turn(SID)
    assert result.failure is not None and result.failure.code == "QUOTA"
    assert rig.adapter.requests == []


async def test_resume_a_turn_without_a_step_runs_injected_messages_only(rig: Rig) -> None:
    events = await _source(rig, text_script("x"))
    log = await _dead(events, _after(events, _is("turn/start")))
    agent = _agent(rig, log)
    result = await agent.resume_turn(SID)
    assert (result.turn, result.reason.kind, rig.adapter.requests) == (1, "completed", [])
    assert of_type(await log.read(SID), "turn/end")[0].turn == 1

    log = await _dead(events, _after(events, _is("turn/start")))
    agent = _agent(rig, log)
    agent.inject(SID, "late")
    rig.adapter.queue(text_script("seen"))
    result = await agent.resume_turn(SID)
    assert (result.turn, result.text) == (1, "seen")
    assert [m.content for m in rig.adapter.requests[0].messages] == [(TextBlock("late"),)]


# ---- run_turn keeps repairing --------------------------------------------------------------


async def test_run_turn_on_an_open_turn_still_repairs_it_and_starts_a_new_turn(rig: Rig) -> None:
    events = await _source(rig, text_script("hello"))
    log = await _dead(events, _after(events, _is("assistant/chunk"), 2))
    rig.adapter.queue(text_script("fresh"))
    result = await _agent(rig, log, repair_after_ms=0).run_turn(SID, "new question")
    assert (result.turn, result.text) == (2, "fresh")
    ends = of_type(await log.read(SID), "turn/end")
    assert [(e.turn, e.reason.kind) for e in ends] == [(1, "interrupted"), (2, "completed")]


# ---- the pure parts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delay", "decided", "now", "left"),
    [
        pytest.param(2000, 10_000, 10_000, 2000, id="nothing-elapsed"),
        pytest.param(2000, 10_000, 10_500, 1500, id="part-elapsed"),
        pytest.param(2000, 10_000, 12_000, 0, id="exactly-elapsed"),
        pytest.param(2000, 10_000, 99_000, 0, id="long-elapsed"),
        pytest.param(2000, 10_000, 9_000, 2000, id="record-clock-ahead-capped"),
        pytest.param(0, 10_000, 10_000, 0, id="no-delay"),
    ],
)
def test_resume_remaining_delay_is_measured_from_the_retry_record(
    delay: float, decided: int, now: int, left: float
) -> None:
    assert remaining_delay_ms(delay, decided, now) == left


async def test_resume_point_needs_a_turn_start(rig: Rig) -> None:
    events = await _source(rig, text_script("x"))
    with pytest.raises(HarnessError) as info:
        resume_point(events[1:])
    assert info.value.code == ErrorCode.INVARIANT
    point = resume_point(events[: _after(events, _is("assistant/chunk"), 2)])
    assert (point.turn, point.step, point.step_open, point.attempt) == (1, 1, True, 1)
    assert point.message is None and point.failure is None and point.pending is None
