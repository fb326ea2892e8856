"""Spec F.1/F.2 and G.16 `loop`, `cancel`, `contract-regressions`: the Step and the turn frame."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import pytest
from agent_helpers import (
    FlakyFlushLog,
    Hang,
    RetryTimes,
    Rig,
    error_script,
    of_type,
    text_script,
    tool_script,
    types,
)

from modelwire.agent import (
    Agent,
    Block,
    ErrorContext,
    PreStepContext,
    RequestErrorContext,
    RequestHookContext,
    Retry,
    Tool,
)
from modelwire.errors import HarnessError, LlmError
from modelwire.session import AbortCause, MemoryLog, StepStart, TurnAborted, UserMessage
from modelwire.session.log import Row, StoredRow
from modelwire.vocab import (
    Aborted,
    BlockEnd,
    BlockStart,
    CallConfig,
    Error,
    Finish,
    GenerateOptions,
    LlmFailure,
    MaxTokens,
    Message,
    ReasoningBlock,
    ReasoningDelta,
    ReplayEnvelope,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    user_message,
)

SID = "s1"


# ---- F.1 numbering and the turn frame -------------------------------------------------------


async def test_f01_turn_numbering_continues_from_the_log(rig: Rig) -> None:
    rig.adapter.queue(text_script("a"), text_script("b"))
    first = await rig.agent().run_turn(SID, "hi")
    second = await rig.agent().run_turn(SID, "again")  # a fresh instance: numbering from the log
    assert (first.turn, second.turn) == (1, 2)
    events = await rig.log.read(SID)
    assert of_type(events, "step/start") == [StepStart(1, 1), StepStart(2, 1)]


async def test_f01_retry_never_increments_turn_or_step(rig: Rig) -> None:
    rig.adapter.queue(error_script("RATE_LIMIT"), text_script("ok"))
    result = await rig.agent(plugins=[RetryTimes(1)]).run_turn(SID, "hi")
    assert result.reason.kind == "completed"
    events = await rig.log.read(SID)
    assert types(events).count("turn/start") == 1
    assert of_type(events, "step/start") == [StepStart(1, 1)]
    attempts = {(c.turn, c.step, c.attempt) for c in of_type(events, "assistant/chunk")}
    assert attempts == {(1, 1, 1), (1, 1, 2)}


async def test_f02_first_step_without_messages_completes_without_a_step(rig: Rig) -> None:
    result = await rig.agent().run_turn(SID, None)
    assert result.reason.kind == "completed"
    assert types(await rig.log.read(SID)) == ["turn/start", "turn/end"]
    assert rig.adapter.requests == []


async def test_f02_pre_step_block_ends_turn_blocked(rig: Rig) -> None:
    agent = rig.agent()

    async def block(
        ctx: PreStepContext, call_next: Callable[[], Awaitable[tuple[Message, ...] | Block]]
    ) -> tuple[Message, ...] | Block:
        return Block()

    agent.hooks.on_pre_step.add(block)
    result = await agent.run_turn(SID, "hi")
    assert result.reason.kind == "blocked"
    assert types(await rig.log.read(SID)) == ["turn/start", "turn/end"]
    assert rig.adapter.requests == []


async def test_f02_pre_step_may_replace_the_entered_messages(rig: Rig) -> None:
    rig.adapter.queue(text_script("ok"))
    agent = rig.agent()
    replacement = user_message("replaced")

    async def swap(
        ctx: PreStepContext, call_next: Callable[[], Awaitable[tuple[Message, ...] | Block]]
    ) -> tuple[Message, ...] | Block:
        assert [m.content for m in ctx.messages] == [(TextBlock("original"),)]
        return (replacement,)

    agent.hooks.on_pre_step.add(swap)
    await agent.run_turn(SID, "original")
    assert rig.adapter.requests[0].messages == (replacement,)


async def test_f03_step_frame_order(rig: Rig) -> None:
    rig.adapter.queue(text_script("ok"))
    await rig.agent().run_turn(SID, "hi")
    assert types(await rig.log.read(SID)) == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "request/context",
        *["assistant/chunk"] * 5,
        "assistant/message",
        "step/end",
        "turn/end",
    ]


async def test_f03_step_end_is_written_on_failure(rig: Rig) -> None:
    rig.adapter.queue(error_script("AUTH", "bad key"))
    result = await rig.agent().run_turn(SID, "hi")
    assert result.reason.kind == "error"
    assert types(await rig.log.read(SID))[-3:] == ["assistant/chunk", "step/end", "turn/end"]


# ---- F.2 inside the Step ----------------------------------------------------------------------


async def test_f04_retry_rederives_messages_and_reuses_system_and_tools(rig: Rig) -> None:
    rig.adapter.queue(error_script("SERVER"), text_script("ok"))
    tool = Tool("t", "a tool", {"type": "object"}, lambda args: "x")
    agent = rig.agent(system="sys", tools=[tool])
    late = user_message("appended during recovery")

    async def repair(
        ctx: RequestErrorContext, call_next: Callable[[], Awaitable[Retry | None]]
    ) -> Retry | None:
        await ctx.log.append(ctx.session_id, UserMessage(late))
        return Retry()

    agent.hooks.on_request_error.add(repair)
    await agent.run_turn(SID, "hi")
    first, second = rig.adapter.requests
    assert second.messages == (*first.messages, late)
    assert (second.system, second.tools) == (first.system, first.tools) == ("sys", (tool.schema,))


async def test_g16_07_every_raw_chunk_is_logged_and_reassembles(rig: Rig) -> None:
    rig.adapter.queue(text_script("abc", usage=TokenUsage(5, 3)))
    result = await rig.agent().run_turn(SID, "hi")
    events = await rig.log.read(SID)
    chunks = [c.chunk for c in of_type(events, "assistant/chunk")]
    assert len(chunks) == 7
    assert chunks == text_script("abc", usage=TokenUsage(5, 3))
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "abc"
    assert result.text == "abc"


async def test_f05_success_commits_one_message_citing_only_its_own_chunks(rig: Rig) -> None:
    rig.adapter.queue(
        [BlockStart(0, "text"), TextDelta(0, "par"), *error_script("TRANSPORT")],
        text_script("whole", usage=TokenUsage(1, 2)),
    )
    result = await rig.agent(plugins=[RetryTimes(1)]).run_turn(SID, "hi")
    events = await rig.log.read(SID)
    (message,) = of_type(events, "assistant/message")
    ok_chunk_seqs = tuple(
        e.seq for e in events if e.type == "assistant/chunk" and e.data.attempt == 2
    )
    assert message.source_event_seqs == ok_chunk_seqs
    assert message.attempt == 2
    assert message.interrupted is None  # G.16.20: not marked interrupted
    assert message.usage == TokenUsage(1, 2)
    assert message.message.content == (TextBlock("whole"),)
    assert result.text == "whole"
    # failed chunks stay in the log, before the successful ones
    assert len([e for e in events if e.type == "assistant/chunk" and e.data.attempt == 1]) == 3


async def test_g16_08_single_max_tokens_step_ends_turn_max_tokens(rig: Rig) -> None:
    rig.adapter.queue(text_script("trunc", reason=MaxTokens()))
    result = await rig.agent().run_turn(SID, "hi")
    assert result.reason.kind == "max-tokens"


async def test_g16_09_max_tokens_is_sticky_across_a_later_completed_step(rig: Rig) -> None:
    rig.adapter.queue(text_script("trunc", reason=MaxTokens()), text_script("done"))
    agent = rig.agent()

    async def inject_once(
        ctx: RequestHookContext, call_next: Callable[[], Awaitable[CallConfig]]
    ) -> CallConfig:
        if ctx.step == 1:
            agent.inject(ctx.session_id, "and one more thing")
        return await call_next()

    agent.hooks.on_request.add(inject_once)
    result = await agent.run_turn(SID, "hi")
    events = await rig.log.read(SID)
    assert of_type(events, "step/start") == [StepStart(1, 1), StepStart(1, 2)]
    assert result.reason.kind == "max-tokens"


async def test_g16_10_max_tokens_does_not_leak_into_the_next_turn(rig: Rig) -> None:
    rig.adapter.queue(text_script("trunc", reason=MaxTokens()), text_script("done"))
    agent = rig.agent()
    assert (await agent.run_turn(SID, "one")).reason.kind == "max-tokens"
    assert (await agent.run_turn(SID, "two")).reason.kind == "completed"


async def test_g16_11_max_tokens_never_dispatches_tool_calls_and_keeps_usage(rig: Rig) -> None:
    calls: list[object] = []
    tool = Tool("t", "d", {"type": "object"}, lambda args: calls.append(args))
    script = tool_script("c1", "t", "{}")
    script[-1:] = [UsageChunk(TokenUsage(9, 4)), Finish(MaxTokens())]
    rig.adapter.queue(script)
    result = await rig.agent(tools=[tool]).run_turn(SID, "hi")
    events = await rig.log.read(SID)
    assert result.reason.kind == "max-tokens"
    assert calls == []
    assert "tool/call" not in types(events)
    (message,) = of_type(events, "assistant/message")
    assert message.message.content == ()
    assert message.usage == TokenUsage(9, 4)
    assert len(rig.adapter.requests) == 1


async def test_g16_12_max_tokens_without_usage_writes_an_empty_anchor(rig: Rig) -> None:
    script = tool_script("c1", "t", '{"a":')
    script[-1] = Finish(MaxTokens())
    rig.adapter.queue(script)
    await rig.agent().run_turn(SID, "hi")
    events = await rig.log.read(SID)
    (message,) = of_type(events, "assistant/message")
    chunk_seqs = tuple(e.seq for e in events if e.type == "assistant/chunk")
    assert message.message.content == ()
    assert message.usage is None
    assert message.source_event_seqs == chunk_seqs


async def test_g16_13_bare_stop_writes_empty_anchor_and_derives_no_message(rig: Rig) -> None:
    rig.adapter.queue([Finish(Stop())], text_script("ok"))
    agent = rig.agent()
    await agent.run_turn(SID, "one")
    events = await rig.log.read(SID)
    (message,) = of_type(events, "assistant/message")
    assert message.message.content == ()
    assert len(message.source_event_seqs) == 1
    await agent.run_turn(SID, "two")
    roles = [m.role for m in rig.adapter.requests[1].messages]
    assert roles == ["user", "user"]


async def test_g16_14_max_tokens_prunes_replay_state_and_follow_up_carries_it(rig: Rig) -> None:
    envelope = ReplayEnvelope({"id": "resp-1"}, ("sig-text", "sig-tool"))
    rig.adapter.queue(
        [
            BlockStart(0, "text"),
            TextDelta(0, "keep"),
            BlockEnd(0, TextBlock("keep")),
            BlockStart(1, "tool-call"),
            ToolCallDelta(1, "c1", '{"x":', name="t"),
            Finish(MaxTokens(), replay_state=envelope),
        ],
        text_script("next"),
    )
    agent = rig.agent()
    await agent.run_turn(SID, "one")
    (message,) = of_type(await rig.log.read(SID), "assistant/message")
    assert message.message.content == (TextBlock("keep"),)
    pruned = message.message.source.replay_state
    assert pruned == ReplayEnvelope({"id": "resp-1"}, ("sig-text",))
    await agent.run_turn(SID, "two")
    carried = rig.adapter.requests[1].messages[1]
    assert carried.source.replay_state == pruned


async def test_g16_15_exhausted_adapter_throw_is_one_agent_error_and_turn_error(
    rig: Rig,
) -> None:
    agent = rig.agent()
    seen: list[ErrorContext] = []
    agent.hooks.on_error.append(seen.append)
    result = await agent.run_turn(SID, "hi")  # nothing queued: the adapter raises
    assert result.reason.kind == "error"
    assert result.failure == LlmFailure("scripted adapter exhausted", "UNKNOWN")
    (ctx,) = seen
    assert (ctx.turn, ctx.step) == (1, 1)
    assert isinstance(ctx.error, LlmError)
    assert ctx.error.failure == result.failure


# ---- cancellation -------------------------------------------------------------------------------


async def _cancel_when(rig: Rig, hang: Hang, agent: Agent, text: str = "hi") -> None:
    task = asyncio.create_task(agent.run_turn(SID, text))
    await hang.reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_g16_16_cancel_mid_stream_commits_interrupted_prefix(rig: Rig) -> None:
    hang = Hang()
    rig.adapter.queue([BlockStart(0, "text"), TextDelta(0, "hel"), TextDelta(0, "lo"), hang])
    rig.adapter.queue(text_script("next"))
    agent = rig.agent()
    await _cancel_when(rig, hang, agent)
    events = await rig.log.read(SID)
    assert types(events)[-3:] == ["assistant/message", "step/end", "turn/end"]
    (message,) = of_type(events, "assistant/message")
    assert message.interrupted is True
    assert message.message.content == (TextBlock("hello"),)
    assert message.source_event_seqs == tuple(e.seq for e in events if e.type == "assistant/chunk")
    assert len(message.source_event_seqs) == 3
    assert of_type(events, "turn/end")[0].reason == TurnAborted(AbortCause("user"))
    await agent.run_turn(SID, "go on")
    assert rig.adapter.requests[1].messages[1] == message.message


async def test_g16_17_cancel_during_reasoning_commits_reasoning_with_usage(rig: Rig) -> None:
    hang = Hang()
    rig.adapter.queue(
        [
            BlockStart(0, "reasoning"),
            ReasoningDelta(0, "thinking"),
            UsageChunk(TokenUsage(10, 2)),
            hang,
        ]
    )
    await _cancel_when(rig, hang, rig.agent())
    (message,) = of_type(await rig.log.read(SID), "assistant/message")
    assert message.message.content == (ReasoningBlock("thinking"),)
    assert message.usage == TokenUsage(10, 2)
    assert message.interrupted is True


async def test_g16_18_cancel_drops_half_tool_call_keeps_completed_text(rig: Rig) -> None:
    hang = Hang()
    calls: list[object] = []
    tool = Tool("t", "d", {"type": "object"}, lambda args: calls.append(args))
    rig.adapter.queue(
        [
            BlockStart(0, "text"),
            TextDelta(0, "let me"),
            BlockEnd(0, TextBlock("let me")),
            BlockStart(1, "tool-call"),
            ToolCallDelta(1, "c1", '{"q":', name="t"),
            hang,
        ]
    )
    await _cancel_when(rig, hang, rig.agent(tools=[tool]))
    events = await rig.log.read(SID)
    (message,) = of_type(events, "assistant/message")
    assert message.message.content == (TextBlock("let me"),)
    assert "tool/call" not in types(events)
    assert calls == []


async def test_g16_19_cancel_during_request_recovery_commits_nothing(rig: Rig) -> None:
    rig.adapter.queue([BlockStart(0, "text"), TextDelta(0, "partial"), *error_script("RATE_LIMIT")])
    agent = rig.agent()
    waiting = asyncio.Event()

    async def slow_backoff(
        ctx: RequestErrorContext, call_next: Callable[[], Awaitable[Retry | None]]
    ) -> Retry | None:
        waiting.set()
        await asyncio.sleep(3600)
        return Retry()

    agent.hooks.on_request_error.add(slow_backoff)
    task = asyncio.create_task(agent.run_turn(SID, "hi"))
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    events = await rig.log.read(SID)
    assert "assistant/message" not in types(events)
    assert types(events)[-2:] == ["step/end", "turn/end"]
    assert of_type(events, "turn/end")[0].reason.kind == "aborted"
    assert len(rig.adapter.requests) == 1


async def test_g16_21_cancel_before_any_visible_content_commits_no_message(rig: Rig) -> None:
    hang = Hang()
    rig.adapter.queue([BlockStart(0, "text"), hang])
    await _cancel_when(rig, hang, rig.agent())
    events = await rig.log.read(SID)
    assert "assistant/message" not in types(events)
    assert types(events)[-2:] == ["step/end", "turn/end"]


async def test_f06_cancel_from_inside_the_turn_returns_aborted(rig: Rig) -> None:
    rig.adapter.queue(error_script("SERVER"))
    agent = rig.agent()

    async def cancel_then_retry(
        ctx: RequestErrorContext, call_next: Callable[[], Awaitable[Retry | None]]
    ) -> Retry | None:
        ctx.signal.cancel("hook", "operator said stop")
        return Retry()

    agent.hooks.on_request_error.add(cancel_then_retry)
    result = await agent.run_turn(SID, "hi")
    assert result.reason == TurnAborted(AbortCause("hook", "operator said stop"))
    assert len(rig.adapter.requests) == 1


async def test_f06_agent_cancel_method_cancels_the_running_turn(rig: Rig) -> None:
    hang = Hang()
    rig.adapter.queue([hang])
    agent = rig.agent()
    task = asyncio.create_task(agent.run_turn(SID, "hi"))
    await hang.reached.wait()
    assert agent.cancel(SID, AbortCause("parent"))
    with pytest.raises(asyncio.CancelledError):
        await task
    end = of_type(await rig.log.read(SID), "turn/end")[0]
    assert end.reason == TurnAborted(AbortCause("parent"))
    assert not agent.cancel(SID)


# ---- contract regressions ---------------------------------------------------------------------


async def test_g16_22_in_band_error_finish_keeps_the_full_failure(rig: Rig) -> None:
    failure = LlmFailure(
        "slow down", "RATE_LIMIT", status=429, provider_retry_after_ms=1500.0, request_id="req-9"
    )
    rig.adapter.queue([Finish(Error(failure))])
    agent = rig.agent()
    seen: list[ErrorContext] = []
    agent.hooks.on_error.append(seen.append)
    result = await agent.run_turn(SID, "hi")
    events = await rig.log.read(SID)
    assert result.failure == failure
    assert of_type(events, "turn/end")[0].reason.failure == failure
    assert [(c.turn, c.step) for c in seen] == [(1, 1)]
    assert "assistant/message" not in types(events)


async def test_g16_23_in_band_aborted_finish_without_cancel_is_an_error(rig: Rig) -> None:
    rig.adapter.queue([Finish(Aborted(LlmFailure("provider aborted", "ABORTED")))])
    offered: list[RequestErrorContext] = []
    agent = rig.agent()

    async def observe(
        ctx: RequestErrorContext, call_next: Callable[[], Awaitable[Retry | None]]
    ) -> Retry | None:
        offered.append(ctx)
        return await call_next()

    agent.hooks.on_request_error.add(observe)
    result = await agent.run_turn(SID, "hi")
    assert result.reason.kind == "error"
    assert result.failure is not None and result.failure.code == "ABORTED"
    assert len(offered) == 1


async def test_g16_24_unknown_code_failure_is_recorded_verbatim(rig: Rig) -> None:
    rig.adapter.queue(error_script("UNKNOWN", "something odd"))
    result = await rig.agent().run_turn(SID, "hi")
    end = of_type(await rig.log.read(SID), "turn/end")[0]
    assert end.reason.failure == LlmFailure("something odd", "UNKNOWN") == result.failure


async def test_f07_middleware_error_propagates_and_is_not_offered_to_recovery(rig: Rig) -> None:
    rig.adapter.queue(text_script("abc"))

    async def explode(
        options: GenerateOptions, call_next: Callable[..., AsyncIterator[StreamChunk]]
    ) -> AsyncIterator[StreamChunk]:
        async for chunk in call_next():
            yield chunk
            raise RuntimeError("middleware broke")

    rig.runtime.use(explode)
    plugin = RetryTimes(5)
    result = await rig.agent(plugins=[plugin]).run_turn(SID, "hi")
    assert result.reason.kind == "error"
    assert result.failure == LlmFailure("middleware broke", "UNKNOWN")
    assert plugin.calls == []
    assert types(await rig.log.read(SID))[-2:] == ["step/end", "turn/end"]


# ---- agent options --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [0, -1, 1.5, math.nan, 2**53], ids=["zero", "negative", "fraction", "nan", "unsafe"]
)
def test_g16_05_invalid_max_tokens_rejected_at_creation(rig: Rig, value: object) -> None:
    with pytest.raises(HarnessError) as info:
        rig.agent(max_tokens=value)
    assert info.value.code == "INVALID_CONFIG"
    assert "max_tokens" in info.value.message


async def test_g16_05_invalid_max_tokens_publishes_nothing(rig: Rig) -> None:
    with pytest.raises(HarnessError):
        rig.agent(max_tokens=0)
    assert await rig.log.sessions() == []


async def test_g16_06_valid_max_tokens_reaches_the_first_request(rig: Rig) -> None:
    rig.adapter.queue(text_script("ok"))
    await rig.agent(max_tokens=321).run_turn(SID, "hi")
    assert rig.adapter.requests[0].max_tokens == 321


async def test_turn_result_messages_are_this_turns_surface(rig: Rig) -> None:
    rig.adapter.queue(text_script("one"), text_script("two"))
    agent = rig.agent()
    await agent.run_turn(SID, "first")
    result = await agent.run_turn(SID, "second")
    assert [(m.role, m.content) for m in result.messages] == [
        ("user", (TextBlock("second"),)),
        ("assistant", (TextBlock("two"),)),
    ]


async def test_resume_repairs_a_turn_left_open_by_a_dead_process(rig: Rig) -> None:
    log = rig.log
    assert isinstance(log, MemoryLog)
    from modelwire.session import TurnStart

    await log.append_many(SID, [TurnStart(1), StepStart(1, 1)])
    rig.adapter.queue(text_script("ok"))
    result = await rig.agent(repair_after_ms=0).run_turn(SID, "hi")  # writer known dead
    events = await log.read(SID)
    assert result.turn == 2
    assert types(events)[:5] == ["turn/start", "step/start", "step/end", "turn/end", "turn/start"]
    assert of_type(events, "turn/end")[0].reason.kind == "interrupted"


async def test_tool_call_turn_runs_tools_and_feeds_results(rig: Rig) -> None:
    rig.adapter.queue(tool_script("c1", "add", '{"a":1,"b":2}', text="adding"), text_script("3"))
    tool = Tool("add", "add two numbers", {"type": "object"}, lambda a: str(a["a"] + a["b"]))
    result = await rig.agent(tools=[tool]).run_turn(SID, "1+2?")
    assert result.reason.kind == "completed"
    second = rig.adapter.requests[1].messages
    assert second[1].content[1] == ToolCallBlock("c1", "add", '{"a":1,"b":2}')
    assert second[2].content[0].content == (TextBlock("3"),)


class _SlowChunkStore(FlakyFlushLog):
    """The third chunk's store suspends; it completes even if the appending task is cancelled,
    and later calls wait for it (the `_store` contract)."""

    def __init__(self) -> None:
        super().__init__(MemoryLog())
        self.chunks = 0
        self.in_store = asyncio.Event()
        self.pending: asyncio.Future[int] | None = None

    async def _load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        if self.pending is not None:
            await asyncio.shield(self.pending)
        return await super()._load(session_id, from_seq, to_seq)

    async def _load_latest(self, session_id: str, type: str) -> StoredRow | None:
        if self.pending is not None:
            await asyncio.shield(self.pending)
        return await super()._load_latest(session_id, type)

    async def _store(
        self,
        session_id: str,
        rows: Sequence[Row],
        *,
        barrier: bool,
        expect_seq: int | None = None,
    ) -> int:
        if rows[0][0] == "assistant/chunk":
            self.chunks += 1
            if self.chunks == 3:
                self.in_store.set()

                async def later() -> int:
                    await asyncio.sleep(0.01)
                    return await self.inner._store(
                        session_id, rows, barrier=barrier, expect_seq=expect_seq
                    )

                self.pending = asyncio.ensure_future(later())
                return await asyncio.shield(self.pending)
        return await self.inner._store(session_id, rows, barrier=barrier, expect_seq=expect_seq)


async def test_f06_a_chunk_whose_append_was_cancelled_but_landed_is_cited(rig: Rig) -> None:
    log = _SlowChunkStore()
    rig.adapter.queue([BlockStart(0, "text"), TextDelta(0, "one "), TextDelta(0, "two"), Hang()])
    agent = Agent(runtime=rig.runtime, log=log, provider="scripted", model="m1")
    task = asyncio.create_task(agent.run_turn(SID, "hi"))
    await log.in_store.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    events = await log.read(SID)
    chunk_seqs = tuple(e.seq for e in events if e.type == "assistant/chunk")
    assert len(chunk_seqs) == 3
    (message,) = of_type(events, "assistant/message")
    assert message.source_event_seqs == chunk_seqs
    assert message.message.content == (TextBlock("one two"),)
