"""`Tool(idempotent=True)`: `resume_turn` runs an unanswered call of such a tool again.

A dead process is simulated as in `test_agent_resume.py`: a real turn runs to its end on a source
session, a fresh memory log receives only the prefix of its events up to the death point, and a
new `Agent` resumes (or `run_turn`s over) that prefix. The committed message calls `send` (not
idempotent: it may have had side effects) first and `fetch` (idempotent) second.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from agent_helpers import Rig, of_type, text_script, types
from fake_clock import FakeClock

import modelwire
from modelwire.agent import Agent, Tool
from modelwire.agent.hooks import ToolEnd, ToolHookContext
from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import Event, MemoryLog
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Finish,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    ToolCalls,
    ToolResultBlock,
)

SRC, SID = "source", "resumed"
CALLS = (("c1", "send", '{"to": "bob"}'), ("c2", "fetch", '{"page": 2}'))


def _calls() -> list[StreamChunk]:
    """One response calling `send` then `fetch` (`CALLS`), finish tool-calls."""
    chunks: list[StreamChunk] = []
    for index, (call_id, name, arguments) in enumerate(CALLS):
        chunks += [
            BlockStart(index, "tool-call"),
            BlockEnd(index, ToolCallBlock(call_id, name, arguments)),
        ]
    return [*chunks, Finish(ToolCalls())]


class Counting:
    """A tool function counting its runs and recording the arguments it got."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.args: list[dict[str, object]] = []

    @property
    def calls(self) -> int:
        return len(self.args)

    def __call__(self, args: dict[str, object]) -> str:
        self.args.append(args)
        return f"{self.name} ran {self.calls}"


class Tools:
    """`send` (never idempotent) and `fetch` (idempotent unless told otherwise), counted."""

    def __init__(self, *, fetch_idempotent: bool = True) -> None:
        self.send = Counting("send")
        self.fetch = Counting("fetch")
        self.list = [
            Tool("send", "send a message", {"type": "object"}, self.send),
            Tool(
                "fetch",
                "read a page",
                {"type": "object"},
                self.fetch,
                idempotent=fetch_idempotent,
            ),
        ]


async def _source(rig: Rig, *scripts: Any, **kwargs: Any) -> list[Event]:
    """Run one complete turn on the source session and return its events."""
    rig.adapter.queue(*scripts)
    agent = rig.agent(**kwargs)
    await agent.run_turn(SRC, "hi")
    await agent.close()
    rig.adapter.requests.clear()
    return await rig.log.read(SRC)


def _after(events: Sequence[Event], name: str, nth: int = 1) -> int:
    """How many events a process that died right after the `nth` `name` event left."""
    return [i for i, e in enumerate(events) if e.type == name][nth - 1] + 1


async def _dead(events: Sequence[Event], keep: int) -> MemoryLog:
    """A fresh memory log holding the first `keep` events of `events`."""
    log = MemoryLog()
    for event in events[:keep]:
        await log.append(SID, event.data)
    return log


def _agent(rig: Rig, log: MemoryLog, tools: Tools, **kwargs: Any) -> Agent:
    return Agent(
        runtime=rig.runtime, log=log, provider="scripted", model="m1", tools=tools.list, **kwargs
    )


def _results(events: Sequence[Event], turn: int = 1) -> list[tuple[str, bool, str | None, str]]:
    """(call id, is_error, error code, text) of each `tool/result` of `turn`, in log order."""
    out = []
    for record in of_type(events, "tool/result"):
        if record.turn != turn:
            continue
        (block,) = record.message.content
        assert isinstance(block, ToolResultBlock)
        text = "".join(b.text for b in block.content if isinstance(b, TextBlock))
        out.append((record.call_id, record.is_error, record.error_code, text))
    return out


INTERRUPTED = ("c1", True, "TOOL_INTERRUPTED")
"""The answer `send`'s call (c1) gets from a resumed turn (it is not idempotent)."""


# ---- resume_turn runs an idempotent tool's unanswered call again ----------------------------


@pytest.mark.parametrize(
    ("death", "nth", "answered"),
    [
        pytest.param("assistant/message", 1, 0, id="before-any-tool-call-was-logged"),
        pytest.param("tool/call", 2, 0, id="inside-the-tools"),
        pytest.param("tool/result", 1, 1, id="after-the-first-result"),
    ],
)
async def test_resume_reruns_the_idempotent_call_once_and_interrupts_the_other(
    rig: Rig, death: str, nth: int, answered: int
) -> None:
    source = Tools()
    events = await _source(rig, _calls(), text_script("done"), tools=source.list)
    assert (source.send.calls, source.fetch.calls) == (1, 1)
    log = await _dead(events, _after(events, death, nth))
    tools = Tools()
    rig.adapter.queue(text_script("after"))
    result = await _agent(rig, log, tools).resume_turn(SID)

    assert (result.turn, result.reason.kind, result.text) == (1, "completed", "after")
    assert tools.send.calls == 0  # not idempotent: never run again
    assert tools.fetch.args == [{"page": 2}]  # exactly once, with the committed arguments
    out = await log.read(SID)
    assert [e.seq for e in out] == list(range(len(out)))
    first = ("c1", False, None) if answered else INTERRUPTED  # the dead process's answer, kept
    results = _results(out)
    assert [r[:3] for r in results] == [first, ("c2", False, None)]  # in call order
    assert results[1][3] == "fetch ran 1"
    reruns = [c for c in of_type(out, "tool/call") if c.call_id == "c2"]
    assert reruns[-1].arguments == '{"page": 2}'  # the re-run is logged as a live call is
    order = types(out)
    last_result = len(order) - 1 - order[::-1].index("tool/result")
    assert last_result < order.index("step/end") < order.index("step/start", 2)
    assert [(s.turn, s.step) for s in of_type(out, "step/start")] == [(1, 1), (1, 2)]
    (request,) = rig.adapter.requests  # the next Step carries both answers
    sent = [b for m in request.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert [(b.tool_call_id, b.is_error) for b in sent] == [("c1", not answered), ("c2", False)]


async def test_resume_reruns_idempotent_calls_inside_the_on_tool_hooks(rig: Rig) -> None:
    events = await _source(rig, _calls(), text_script("done"), tools=Tools().list)
    log = await _dead(events, _after(events, "assistant/message"))
    tools = Tools()
    agent = _agent(rig, log, tools)
    seen: list[tuple[int, int, str]] = []

    async def watch(ctx: ToolHookContext, call_next: Callable[[], Awaitable[ToolEnd]]) -> None:
        seen.append((ctx.turn, ctx.step, ctx.call.id))
        await call_next()

    agent.hooks.on_tool.add(watch)
    rig.adapter.queue(text_script("after"))
    assert (await agent.resume_turn(SID)).reason.kind == "completed"
    assert seen == [(1, 1, "c2")]  # the re-run only: the interrupted call is not run


async def test_resume_rerun_is_bounded_by_the_tools_timeout_as_a_live_call_is(rig: Rig) -> None:
    clock = FakeClock()
    events = await _source(rig, _calls(), text_script("done"), tools=Tools().list)
    log = await _dead(events, _after(events, "tool/call", 2))
    tools = Tools()

    async def slow(args: dict[str, object]) -> str:
        await clock.sleep(5.0)
        return "late"

    tools.list[1] = Tool("fetch", "read", {"type": "object"}, slow, timeout_ms=250, idempotent=True)
    rig.adapter.queue(text_script("after"))
    async with clock.running():
        agent = _agent(rig, log, tools, sleep=clock.sleep, clock=clock.ms)
        result = await agent.resume_turn(SID)
    assert result.reason.kind == "completed"
    assert [(r[0], r[2]) for r in _results(await log.read(SID))] == [
        ("c1", "TOOL_INTERRUPTED"),
        ("c2", "TOOL_TIMEOUT"),
    ]
    assert clock.now == pytest.approx(0.25)


# ---- everything else keeps TOOL_INTERRUPTED ------------------------------------------------


async def test_resume_without_idempotent_tools_still_answers_every_call_tool_interrupted(
    rig: Rig,
) -> None:
    events = await _source(rig, _calls(), text_script("done"), tools=Tools().list)
    log = await _dead(events, _after(events, "tool/call", 2))
    tools = Tools(fetch_idempotent=False)
    rig.adapter.queue(text_script("after"))
    result = await _agent(rig, log, tools).resume_turn(SID)

    assert (result.reason.kind, result.text) == ("completed", "after")
    assert (tools.send.calls, tools.fetch.calls) == (0, 0)
    out = await log.read(SID)
    assert [r[:3] for r in _results(out)] == [INTERRUPTED, ("c2", True, "TOOL_INTERRUPTED")]
    assert types(out).count("tool/call") == 2  # the dead process's only: nothing ran again


async def test_resume_answers_a_call_naming_an_unknown_tool_tool_interrupted(rig: Rig) -> None:
    events = await _source(rig, _calls(), text_script("done"), tools=Tools().list)
    log = await _dead(events, _after(events, "assistant/message"))
    tools = Tools()
    tools.list = [tools.list[1]]  # `send` is no tool of the resuming agent
    rig.adapter.queue(text_script("after"))
    assert (await _agent(rig, log, tools).resume_turn(SID)).reason.kind == "completed"
    assert [r[:3] for r in _results(await log.read(SID))] == [INTERRUPTED, ("c2", False, None)]


async def test_run_turn_repair_answers_idempotent_calls_tool_interrupted_too(rig: Rig) -> None:
    events = await _source(rig, _calls(), text_script("done"), tools=Tools().list)
    log = await _dead(events, _after(events, "tool/call", 2))
    tools = Tools()
    rig.adapter.queue(text_script("fresh"))
    result = await _agent(rig, log, tools, repair_after_ms=0).run_turn(SID, "new question")

    assert (result.turn, result.text) == (2, "fresh")
    assert (tools.send.calls, tools.fetch.calls) == (0, 0)  # the repair runs nothing
    out = await log.read(SID)
    assert [r[:3] for r in _results(out)] == [INTERRUPTED, ("c2", True, "TOOL_INTERRUPTED")]
    ends = of_type(out, "turn/end")
    assert [(e.turn, e.reason.kind) for e in ends] == [(1, "interrupted"), (2, "completed")]


# ---- declaring it ------------------------------------------------------------------------


def test_tool_idempotent_is_carried_by_every_form_and_defaults_to_false() -> None:
    def read(page: int) -> str:
        """Read a page."""
        return str(page)

    assert Tool("t", "d", {}, lambda a: "").idempotent is False
    assert Tool("t", "d", {}, lambda a: "", idempotent=True).idempotent is True
    assert Tool.from_function(read).idempotent is False
    assert Tool.from_function(read, idempotent=True).idempotent is True
    assert modelwire.tool(read).idempotent is False
    made = modelwire.tool(idempotent=True, timeout_ms=50)(read)
    assert (made.name, made.idempotent, made.timeout_ms) == ("read", True, 50)
    assert modelwire.tool(name="r2")(read).idempotent is False

    @modelwire.tool(idempotent=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    assert lookup.idempotent is True and lookup("k") == "k"


@pytest.mark.parametrize("bad", ["yes", 1, 0, None, 1.0])
def test_tool_idempotent_must_be_a_bool(bad: object) -> None:
    def read(page: int) -> str:
        """Read a page."""
        return str(page)

    makers: list[Callable[[], object]] = [
        lambda: Tool("t", "d", {}, lambda a: "", idempotent=bad),  # type: ignore[arg-type]
        lambda: Tool.from_function(read, idempotent=bad),  # type: ignore[arg-type]
        lambda: modelwire.tool(idempotent=bad)(read),  # type: ignore[arg-type]
    ]
    for make in makers:
        with pytest.raises(HarnessError) as info:
            make()
        assert info.value.code == ErrorCode.INVALID_CONFIG
        assert "idempotent" in info.value.message and repr(bad) in info.value.message
