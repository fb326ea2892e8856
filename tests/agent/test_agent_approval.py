"""Issue 35, human approval: a turn that pauses on calls needing a person's decision, decided and
resumed from the log alone (memory, SQLite and PostgreSQL logs; see `approval.py`).

Every test drives a real `Agent` over a real log with the scripted adapter; the tools count what
they ran, so "ran exactly once" and "never ran" are observed, not assumed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from agent_helpers import Rig, ScriptedAdapter, of_type, text_script

import modelwire as mw
from modelwire.agent import Agent, RunContext, Tool, approval, tool
from modelwire.errors import HarnessError
from modelwire.runtime import LlmRuntime
from modelwire.session import MemoryLog, SessionLog
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Finish,
    Message,
    StreamChunk,
    ToolCallBlock,
    ToolCallDelta,
    ToolCalls,
    ToolResultBlock,
)

RAN: Counter[str] = Counter()


def calls_script(*calls: tuple[str, str, str]) -> list[StreamChunk]:
    """One assistant message making the parallel calls `(id, name, arguments)`, in order."""
    chunks: list[StreamChunk] = []
    for index, (call_id, name, arguments) in enumerate(calls):
        chunks += [
            BlockStart(index, "tool-call"),
            ToolCallDelta(index, call_id, arguments, name=name),
            BlockEnd(index, ToolCallBlock(call_id, name, arguments)),
        ]
    return [*chunks, Finish(ToolCalls())]


def counting(name: str, rule: Any = False) -> Tool:
    """A tool `name` that counts its runs in `RAN` and answers `name ran {args}`."""

    def run(args: dict[str, Any]) -> str:
        RAN[name] += 1
        return f"{name} ran {args}"

    return Tool(name, f"The {name} tool.", {"type": "object"}, run, needs_approval=rule)


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


@pytest.fixture
def scripted() -> tuple[LlmRuntime, ScriptedAdapter]:
    runtime = LlmRuntime()
    adapter = ScriptedAdapter()
    runtime.register_adapter(["scripted"], adapter)
    return runtime, adapter


def make(
    scripted: tuple[LlmRuntime, ScriptedAdapter], log: SessionLog, *tools: Tool, **kw: Any
) -> Agent:
    return Agent(scripted[0], log, "scripted", "m1", tools=tools, **kw)


def results(messages: tuple[Message, ...] | list[Message]) -> list[ToolResultBlock]:
    return [b for m in messages for b in m.content if isinstance(b, ToolResultBlock)]


def text_of(block: ToolResultBlock) -> str:
    return "".join(getattr(part, "text", "") for part in block.content)


async def test_a_call_needing_approval_pauses_the_turn_and_runs_only_once_approved(
    scripted: tuple[LlmRuntime, ScriptedAdapter], log: SessionLog, sid: str
) -> None:
    _, adapter = scripted
    adapter.queue(calls_script(("c1", "pay", '{"amount": 5}')), text_script("paid"))
    agent = make(scripted, log, counting("pay", True))
    result = await agent.run_turn(sid, "pay five")
    assert result.reason.kind == "paused"
    assert result.pending == (mw.PendingApproval("c1", "pay", '{"amount": 5}', turn=1, step=1),)
    assert RAN["pay"] == 0
    events = await log.read(sid)
    [call] = of_type(events, "tool/call")
    assert call.needs_approval is True and of_type(events, "tool/result") == []
    assert [e.type for e in events][-2:] == ["step/end", "turn/end"]
    with pytest.raises(mw.LlmError) as raised:
        result.raise_for_failure()
    assert raised.value.code == "TURN_PAUSED"
    assert await agent.pending(sid) == result.pending
    # the lease was released: another agent (another owner) decides and resumes at once
    other = make(scripted, log, counting("pay", True), owner="someone-else")
    decision = await other.decide(sid, "c1", True, by="alice")
    assert (decision.approve, decision.by, decision.name) == (True, "alice", "pay")
    resumed = await other.resume_turn(sid)
    assert (resumed.turn, resumed.reason.kind, resumed.text) == (1, "completed", "paid")
    assert RAN["pay"] == 1
    [answer] = results(adapter.requests[-1].messages)
    assert (answer.tool_call_id, bool(answer.is_error), text_of(answer)) == (
        "c1",
        False,
        "pay ran {'amount': 5}",
    )
    events = await log.read(sid)
    [logged] = of_type(events, "tool/decision")
    assert (logged.call_id, logged.approve, logged.by) == ("c1", True, "alice")
    assert [s.resumed_after for s in of_type(events, "turn/start")] == [None, 1]
    assert [e.reason.kind for e in of_type(events, "turn/end")] == ["paused", "completed"]
    assert await other.pending(sid) == ()
    with pytest.raises(HarnessError) as nothing:
        await other.resume_turn(sid)
    assert nothing.value.code == "NOTHING_TO_RESUME"
    assert RAN["pay"] == 1


async def test_a_denied_call_is_answered_tool_denied_with_the_reason_and_never_runs(
    scripted: tuple[LlmRuntime, ScriptedAdapter], log: SessionLog, sid: str
) -> None:
    _, adapter = scripted
    adapter.queue(calls_script(("c1", "wipe", "{}")), text_script("ok, not wiping"))
    agent = make(scripted, log, counting("wipe", True))
    assert (await agent.run_turn(sid, "wipe the disk")).reason.kind == "paused"
    await agent.decide(sid, "c1", False, "not on a Friday")
    resumed = await agent.resume_turn(sid)
    assert resumed.reason.kind == "completed" and RAN["wipe"] == 0
    [denied] = of_type(await log.read(sid), "tool/result")
    assert (denied.is_error, denied.error_code) == (True, "TOOL_DENIED")
    [seen] = results(adapter.requests[-1].messages)
    assert seen.is_error and "not on a Friday" in text_of(seen) and "denied" in text_of(seen)


async def test_free_calls_run_at_the_pause_and_the_model_gets_every_result_in_call_order(
    scripted: tuple[LlmRuntime, ScriptedAdapter], log: SessionLog, sid: str
) -> None:
    _, adapter = scripted
    adapter.queue(
        calls_script(
            ("c1", "look", '{"n": 1}'),
            ("c2", "pay", '{"n": 2}'),
            ("c3", "look", '{"n": 3}'),
            ("c4", "send", '{"n": 4}'),
        ),
        text_script("all done"),
    )
    agent = make(scripted, log, counting("look"), counting("pay", True), counting("send", True))
    paused = await agent.run_turn(sid, "go")
    assert [p.call_id for p in paused.pending] == ["c2", "c4"]
    assert dict(RAN) == {"look": 2}  # the free calls ran, in call order, before the pause
    assert [r.call_id for r in of_type(await log.read(sid), "tool/result")] == ["c1", "c3"]
    await agent.decide(sid, "c4", True)
    with pytest.raises(HarnessError) as early:
        await agent.resume_turn(sid)
    assert early.value.code == "APPROVAL_PENDING"
    assert "c2 (pay" in early.value.message and "c4 (" not in early.value.message
    await agent.decide(sid, "c2", False)
    done = await agent.resume_turn(sid)
    assert done.reason.kind == "completed"
    assert dict(RAN) == {"look": 2, "send": 1}
    order = [(r.tool_call_id, bool(r.is_error)) for r in results(adapter.requests[-1].messages)]
    assert order == [("c1", False), ("c2", True), ("c3", False), ("c4", False)]
    # a fresh agent derives the same conversation from the log
    fresh = make(scripted, log, counting("look"))
    adapter.queue(text_script("again"))
    await fresh.run_turn(sid, "and now?")
    again = [(r.tool_call_id, bool(r.is_error)) for r in results(adapter.requests[-1].messages)]
    assert again == order


async def test_a_callable_rule_decides_per_call_on_the_parsed_arguments(
    scripted: tuple[LlmRuntime, ScriptedAdapter], log: SessionLog, sid: str
) -> None:
    _, adapter = scripted
    seen: list[tuple[str, int]] = []

    def rule(ctx: RunContext, args: dict[str, Any]) -> bool:
        seen.append((ctx.call_id, ctx.turn))
        return bool(args["amount"] > 100)

    @tool(needs_approval=rule)
    def transfer(amount: int) -> str:
        """Transfer money.

        Args:
            amount: How much.
        """
        RAN["transfer"] += 1
        return f"sent {amount}"

    adapter.queue(
        calls_script(
            ("small", "transfer", '{"amount": 50}'),
            ("big", "transfer", '{"amount": 500}'),
            ("bad", "transfer", '{"amount": "lots"}'),
        ),
        text_script("done"),
    )
    agent = Agent(scripted[0], log, "scripted", "m1", tools=[transfer])
    paused = await agent.run_turn(sid, "send money")
    assert [p.call_id for p in paused.pending] == ["big"]
    assert seen == [("small", 1), ("big", 1)]  # invalid arguments never reach the rule
    assert RAN["transfer"] == 1
    codes = {r.call_id: r.error_code for r in of_type(await log.read(sid), "tool/result")}
    assert codes == {"small": None, "bad": "INVALID_ARGS"}
    await agent.decide(sid, "big", True)
    assert (await agent.resume_turn(sid)).reason.kind == "completed"
    assert RAN["transfer"] == 2


async def test_a_rule_that_raises_asks_for_approval(
    scripted: tuple[LlmRuntime, ScriptedAdapter], log: SessionLog, sid: str
) -> None:
    def broken(ctx: RunContext, args: dict[str, Any]) -> bool:
        raise KeyError("amount")

    scripted[1].queue(calls_script(("c1", "pay", "{}")))
    agent = make(scripted, log, counting("pay", broken))
    assert (await agent.run_turn(sid, "pay")).reason.kind == "paused"
    assert RAN["pay"] == 0


async def test_bad_decisions_are_refused_and_lose_nothing(
    scripted: tuple[LlmRuntime, ScriptedAdapter], log: SessionLog, sid: str
) -> None:
    _, adapter = scripted
    adapter.queue(
        calls_script(("a1", "pay", "{}")),
        calls_script(("b1", "pay", "{}")),
        text_script("done"),
    )
    agent = make(scripted, log, counting("pay", True))
    other_sid = f"{sid}-other"
    await agent.run_turn(sid, "first")
    await agent.run_turn(other_sid, "second")
    before = len(await log.read(sid))

    async def refused(session: str, call_id: str, approve: bool, code: str) -> str:
        with pytest.raises(HarnessError) as info:
            await agent.decide(session, call_id, approve)
        assert info.value.code == code
        return info.value.message

    message = await refused(sid, "nope", True, "UNKNOWN_CALL")
    assert "'nope'" in message and "a1 (pay)" in message
    message = await refused(sid, "b1", True, "UNKNOWN_CALL")  # the other session's call
    assert "'b1'" in message and sid in message
    await agent.decide(sid, "a1", False, "too much", by="bob")
    await agent.decide(sid, "a1", False, "again")  # the same answer: a no-op
    message = await refused(sid, "a1", True, "ALREADY_DECIDED")
    assert "denied by bob (too much)" in message
    events = await log.read(sid)
    assert len(events) == before + 1 and len(of_type(events, "tool/decision")) == 1
    assert of_type(await log.read(other_sid), "tool/decision") == []
    with pytest.raises(HarnessError) as typed:
        await agent.decide(sid, "a1", "yes")  # type: ignore[arg-type]
    assert typed.value.code == "INVALID_ARGS"
    with pytest.raises(HarnessError) as busy:
        await agent.run_turn(other_sid, "a new turn while paused")
    assert busy.value.code == "TURN_PAUSED" and "b1 (pay {})" in busy.value.message
    with pytest.raises(HarnessError) as unknown:
        await agent.decide("no-such-session", "a1", True)
    assert unknown.value.code == "UNKNOWN_CALL"
    # resumed and done: the call's decision stands (same answer no-op, opposite refused)
    assert (await agent.resume_turn(sid)).reason.kind == "completed"
    await agent.decide(sid, "a1", False)
    await refused(sid, "a1", True, "ALREADY_DECIDED")
    assert RAN["pay"] == 0


async def test_a_paused_call_whose_tool_was_removed_is_answered_and_the_turn_goes_on(
    scripted: tuple[LlmRuntime, ScriptedAdapter], log: SessionLog, sid: str
) -> None:
    _, adapter = scripted
    adapter.queue(calls_script(("c1", "pay", "{}")), text_script("could not pay"))
    await make(scripted, log, counting("pay", True)).run_turn(sid, "pay")
    later = make(scripted, log, counting("look"))  # a new release of the agent: no `pay`
    await later.decide(sid, "c1", True)
    done = await later.resume_turn(sid)
    assert (done.reason.kind, done.text) == ("completed", "could not pay")
    [answer] = of_type(await log.read(sid), "tool/result")
    assert (answer.error_code, answer.is_error) == ("UNKNOWN_TOOL", True)
    assert "removed while the turn was paused" in text_of(answer.message.content[0])
    assert RAN["pay"] == 0


async def test_a_resumed_turn_may_pause_again(rig: Rig, sid: str) -> None:
    rig.adapter.queue(
        calls_script(("c1", "pay", "{}")),
        calls_script(("c2", "pay", "{}")),
        text_script("twice"),
    )
    agent = rig.agent(tools=[counting("pay", True)])
    assert [p.call_id for p in (await agent.run_turn(sid, "pay twice")).pending] == ["c1"]
    await agent.decide(sid, "c1", True)
    again = await agent.resume_turn(sid)
    assert (again.turn, again.reason.kind, [p.call_id for p in again.pending]) == (
        1,
        "paused",
        ["c2"],
    )
    with pytest.raises(HarnessError) as stale:
        await agent.decide(sid, "c1", False)
    assert stale.value.code == "ALREADY_DECIDED"
    await agent.decide(sid, "c2", True)
    assert (await agent.resume_turn(sid)).text == "twice"
    assert RAN["pay"] == 2
    steps = [(s.turn, s.step) for s in of_type(await rig.log.read(sid), "step/start")]
    assert steps == [(1, 1), (1, 2), (1, 3)]


def test_needs_approval_must_be_a_bool_or_a_function() -> None:
    with pytest.raises(HarnessError) as info:
        Tool("t", "d", {"type": "object"}, lambda a: "", needs_approval="yes")  # type: ignore[arg-type]
    assert info.value.code == "INVALID_CONFIG" and "needs_approval" in info.value.message


async def test_a_process_that_died_before_its_pause_was_logged_pauses_on_resume(
    scripted: tuple[LlmRuntime, ScriptedAdapter], log: SessionLog, sid: str
) -> None:
    """The dead process logged the step's calls (one waiting for approval, one free that may
    have run) but neither its `step/end` nor its `turn/end {paused}`: resuming pauses the turn
    (the free call is answered TOOL_INTERRUPTED, never run twice); then it goes on as usual."""
    _, adapter = scripted
    adapter.queue(calls_script(("c1", "pay", "{}"), ("c2", "look", "{}")), text_script("ok"))
    source = MemoryLog()
    await make(scripted, source, counting("pay", True), counting("look")).run_turn(sid, "go")
    events = await source.read(sid)
    cut = max(i for i, e in enumerate(events) if e.type == "tool/call")  # before any result
    await log.append_many(sid, [e.data for e in events[: cut + 1]])
    RAN.clear()
    agent = make(scripted, log, counting("pay", True), counting("look"))
    paused = await agent.resume_turn(sid)
    assert (paused.reason.kind, [p.call_id for p in paused.pending]) == ("paused", ["c1"])
    [answered] = of_type(await log.read(sid), "tool/result")
    assert (answered.call_id, answered.error_code) == ("c2", "TOOL_INTERRUPTED")
    await agent.decide(sid, "c1", True)
    assert (await agent.resume_turn(sid)).text == "ok"
    assert dict(RAN) == {"pay": 1}


async def test_two_deciders_at_once_never_both_win(
    scripted: tuple[LlmRuntime, ScriptedAdapter],
    log: SessionLog,
    sid: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both read the same paused state before either appends (a barrier after the first two
    reads): one conditional append wins, the other is refused STALE_WRITE, reads again and is
    refused ALREADY_DECIDED naming the winner; one `tool/decision` is logged."""
    scripted[1].queue(calls_script(("c1", "pay", "{}")))
    agent = make(scripted, log, counting("pay", True))
    await agent.run_turn(sid, "pay")
    real = approval.approval_state
    barrier = asyncio.Barrier(2)
    reads: list[int] = []

    async def both_read(log: SessionLog, session_id: str) -> approval.ApprovalState:
        state = await real(log, session_id)
        reads.append(state.next_seq)
        if len(reads) <= 2:
            await barrier.wait()
        return state

    monkeypatch.setattr(approval, "approval_state", both_read)
    other = make(scripted, log, counting("pay", True))
    outcomes = await asyncio.gather(
        agent.decide(sid, "c1", True, by="alice"),
        other.decide(sid, "c1", False, by="bob"),
        return_exceptions=True,
    )
    [won] = [o for o in outcomes if not isinstance(o, BaseException)]
    [lost] = [o for o in outcomes if isinstance(o, BaseException)]
    assert isinstance(lost, HarnessError) and lost.code == "ALREADY_DECIDED"
    assert f"by {won.by}" in lost.message
    assert reads[0] == reads[1] and reads[2] == reads[0] + 1  # the loser read again
    [logged] = of_type(await log.read(sid), "tool/decision")
    assert (logged.approve, logged.by) == (won.approve, won.by)
