"""Issue 18, fallbacks: what `FallbackPlugin` decides, records and refuses (scripted adapters).

Two or three routes (`alpha`, `beta`, `gamma`) on one runtime, each a scripted adapter with its own
retry policy; waits go through a recording sleep (nothing waits in real time). Every log must
satisfy the retry invariants. The wire, replay-crossing and crash scenarios are in the sibling
`test_fallback_wire.py` and `test_fallback_resume.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from retry_helpers import (
    RecordingSleep,
    Samples,
    ScriptedAdapter,
    check_invariants,
    fail,
    of_type,
    policy,
    text,
    types,
)

from modelwire.agent import Agent, AgentPlugin, Tool
from modelwire.cli.render import event_line
from modelwire.errors import ErrorCode, HarnessError
from modelwire.meter import TokenMeter
from modelwire.policy import RetryPolicy
from modelwire.retry import DEFAULT_FALLBACK_CODES, FallbackPlugin, FallbackTarget, RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import Event, MemoryLog, SessionLog
from modelwire.session.events import LlmFallback, decode_event_data, encode_event_data, event_types
from modelwire.ui.fold import SessionFold
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Finish,
    GenerateOptions,
    LlmFailure,
    StreamChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolCalls,
    UsageChunk,
)

SID = "fallback-1"
FAST = {"max_retries": 2, "initial": 10, "max": 10, "jitter": 0}


@dataclass
class OrderedAdapter(ScriptedAdapter):
    """A scripted adapter that also notes each request's (route, model) in a shared list."""

    order: list[tuple[str, str]] = field(default_factory=list)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.order.append((options.provider, options.model))
        async for chunk in super().stream(options):
            yield chunk


@dataclass
class Routes:
    """Scripted routes on one runtime, one log, one recording sleep."""

    log: SessionLog
    runtime: LlmRuntime = field(default_factory=LlmRuntime)
    adapters: dict[str, OrderedAdapter] = field(default_factory=dict)
    sleep: RecordingSleep = field(default_factory=RecordingSleep)
    order: list[tuple[str, str]] = field(default_factory=list)

    def retry(self) -> RetryPlugin:
        return RetryPlugin(random=Samples(0.5), sleep=self.sleep)

    def agent(self, *plugins: AgentPlugin, **kwargs: Any) -> Agent:
        kwargs.setdefault("provider", "alpha")
        kwargs.setdefault("model", "a1")
        return Agent(runtime=self.runtime, log=self.log, plugins=plugins, **kwargs)

    def served(self) -> list[tuple[str, str]]:
        """(route, model) of every request, in order, across the routes."""
        return list(self.order)


def routes(log: SessionLog | None = None, **policies: RetryPolicy | None) -> Routes:
    """Routes named by `policies` (None: the fast normal policy) on one runtime."""
    rig = Routes(log or MemoryLog())
    for name, retry in policies.items():
        adapter = OrderedAdapter(policy=retry or policy(**FAST), order=rig.order)
        rig.runtime.register_adapter([name], adapter)
        rig.adapters[name] = adapter
    return rig


def fallbacks(events: Sequence[Event]) -> list[LlmFallback]:
    return of_type(events, "llm/fallback")


def retries(events: Sequence[Event]) -> list[tuple[str, int]]:
    return [(r.provider, r.retry) for r in of_type(events, "llm/retry")]


# ---- the event -------------------------------------------------------------------------------


def test_llm_fallback_is_a_registered_event_that_round_trips() -> None:
    assert event_types()["llm/fallback"] is LlmFallback
    record = LlmFallback(
        turn=1,
        step=2,
        attempt=3,
        from_route="alpha",
        from_model="a1",
        to_route="beta",
        to_model="b1",
        failure=LlmFailure("overloaded", "SERVER", status=503),
        position=1,
    )
    name, raw = encode_event_data(SID, record)
    assert name == "llm/fallback"
    assert decode_event_data(SID, 7, name, raw) == record
    assert set(msgspec.json.decode(raw)) == {
        "turn",
        "step",
        "attempt",
        "from_route",
        "from_model",
        "to_route",
        "to_model",
        "failure",
        "position",
    }


# ---- falling back ----------------------------------------------------------------------------


async def test_fallback_once_the_retry_policy_gives_up_moves_the_step_to_the_next_target(
    any_log: SessionLog, sid: str
) -> None:
    rig = routes(any_log, alpha=None, beta=None)
    rig.adapters["alpha"].queue(*[fail("SERVER", "down", status=503)] * 3)
    rig.adapters["beta"].queue(text("from beta"))
    agent = rig.agent(rig.retry(), FallbackPlugin(chain=[("beta", "b1")]))
    result = await agent.run_turn(sid, "hi")

    assert (result.reason.kind, result.text) == ("completed", "from beta")
    events = await any_log.read(sid)
    assert retries(events) == [("alpha", 1), ("alpha", 2)]  # the policy's whole budget first
    (record,) = fallbacks(events)
    assert (record.turn, record.step, record.attempt, record.position) == (1, 1, 3, 1)
    assert (record.from_route, record.from_model) == ("alpha", "a1")
    assert (record.to_route, record.to_model) == ("beta", "b1")
    assert (record.failure.code, record.failure.status) == ("SERVER", 503)
    assert rig.served() == [("alpha", "a1")] * 3 + [("beta", "b1")]
    (message,) = of_type(events, "assistant/message")
    assert message.attempt == 4  # the same step, its next attempt
    assert (message.message.source.provider, message.message.source.model) == ("beta", "b1")
    # durable before the next attempt: the fallback precedes the new target's request facts
    kinds = types(events)
    at = kinds.index("llm/fallback")
    assert kinds[at + 1 : at + 3] == ["request/header", "request/context"]
    assert events[at + 1].data.header.config.provider == "beta"
    assert [(s.turn, s.step) for s in of_type(events, "step/start")] == [(1, 1)]
    check_invariants(events)


@pytest.mark.parametrize("order", ["retry-first", "fallback-first"])
@pytest.mark.parametrize("code", ["CONTEXT_WINDOW_EXCEEDED", "QUOTA", "AUTH"])
async def test_a_listed_immediate_code_falls_back_at_once_without_retrying_the_route(
    code: str, order: str
) -> None:
    rig = routes(alpha=None, beta=None)
    rig.adapters["alpha"].queue(fail(code, "prompt is too long"))
    rig.adapters["beta"].queue(text("bigger window"))
    plugins: list[AgentPlugin] = [
        rig.retry(),
        FallbackPlugin(chain=["beta:b1"], on=(*DEFAULT_FALLBACK_CODES, code)),
    ]
    if order == "fallback-first":
        plugins.reverse()
    result = await rig.agent(*plugins).run_turn(SID, "hi")

    assert result.text == "bigger window"
    events = await rig.log.read(SID)
    assert retries(events) == []  # no retry on alpha
    assert rig.sleep.delays == []
    (record,) = fallbacks(events)
    assert (record.attempt, record.failure.code) == (1, code)
    assert rig.served() == [("alpha", "a1"), ("beta", "b1")]
    check_invariants(events)


async def test_installed_first_it_falls_back_at_once_even_where_the_policy_would_retry() -> None:
    every = policy(max_retries=2, retryable_codes=["CONTEXT_WINDOW_EXCEEDED", "SERVER"], jitter=0)
    rig = routes(alpha=every, beta=None)
    rig.adapters["alpha"].queue(fail("CONTEXT_WINDOW_EXCEEDED", "prompt is too long"))
    rig.adapters["beta"].queue(text("bigger window"))
    plugin = FallbackPlugin(chain=["beta:b1"], on=["CONTEXT_WINDOW_EXCEEDED"])
    result = await rig.agent(plugin, rig.retry()).run_turn(SID, "hi")
    assert result.text == "bigger window"
    assert retries(await rig.log.read(SID)) == []


async def test_a_code_on_does_not_list_never_falls_back() -> None:
    rig = routes(alpha=None, beta=None)
    rig.adapters["alpha"].queue(fail("CONTEXT_WINDOW_EXCEEDED", "prompt is too long"))
    agent = rig.agent(rig.retry(), FallbackPlugin(chain=["beta:b1"]))  # the default `on`
    result = await agent.run_turn(SID, "hi")

    assert result.failure is not None
    assert (result.failure.code, result.failure.message) == (
        "CONTEXT_WINDOW_EXCEEDED",
        "prompt is too long",
    )
    events = await rig.log.read(SID)
    assert fallbacks(events) == [] and rig.served() == [("alpha", "a1")]


async def test_a_transient_code_on_does_not_list_is_retried_then_fails_on_its_route() -> None:
    rig = routes(alpha=None, beta=None)
    rig.adapters["alpha"].queue(*[fail("SERVER", "down")] * 3)
    agent = rig.agent(rig.retry(), FallbackPlugin(chain=["beta:b1"], on=["RATE_LIMIT"]))
    result = await agent.run_turn(SID, "hi")

    assert result.failure is not None and result.failure.code == "SERVER"
    events = await rig.log.read(SID)
    assert retries(events) == [("alpha", 1), ("alpha", 2)]
    assert fallbacks(events) == [] and rig.served() == [("alpha", "a1")] * 3


async def test_an_exhausted_chain_fails_the_step_with_the_last_failure_naming_the_chain() -> None:
    rig = routes(alpha=None, beta=None, gamma=None)
    rig.adapters["alpha"].queue(*[fail("SERVER", "alpha down")] * 3)
    rig.adapters["beta"].queue(fail("CONTEXT_WINDOW_EXCEEDED", "too long for beta"))
    rig.adapters["gamma"].queue(*[fail("RATE_LIMIT", "gamma busy", status=429)] * 3)
    on = (*DEFAULT_FALLBACK_CODES, "CONTEXT_WINDOW_EXCEEDED")
    plugin = FallbackPlugin(chain=["beta:b1", ("gamma", "g1")], on=on)
    result = await rig.agent(rig.retry(), plugin).run_turn(SID, "hi")

    failure = result.failure
    assert failure is not None
    assert (failure.code, failure.status) == ("RATE_LIMIT", 429)  # the last failure's facts
    assert failure.message == (
        "llm-fallback: fallback chain exhausted (beta:b1, gamma:g1); the last target gamma:g1 "
        "failed: gamma busy"
    )
    events = await rig.log.read(SID)
    assert [(f.to_route, f.position, f.failure.code) for f in fallbacks(events)] == [
        ("beta", 1, "SERVER"),
        ("gamma", 2, "CONTEXT_WINDOW_EXCEEDED"),
    ]
    assert retries(events) == [("alpha", 1), ("alpha", 2), ("gamma", 1), ("gamma", 2)]
    assert rig.served() == [("alpha", "a1")] * 3 + [("beta", "b1")] + [("gamma", "g1")] * 3
    (end,) = of_type(events, "turn/end")
    assert end.reason.kind == "error" and end.reason.failure == failure
    check_invariants(events)


async def test_a_listed_configured_route_goes_on_from_its_place_in_the_chain() -> None:
    rig = routes(alpha=None, beta=None)
    rig.adapters["alpha"].queue(fail("AUTH", "bad key"))
    rig.adapters["beta"].queue(text("beta"))
    plugin = FallbackPlugin(chain=["alpha:a1", "beta:b1"], on=["AUTH"])
    assert (await rig.agent(rig.retry(), plugin).run_turn(SID, "hi")).text == "beta"
    (record,) = fallbacks(await rig.log.read(SID))
    assert (record.to_route, record.position) == ("beta", 1)  # alpha is position 0, as listed

    last = routes(alpha=None, beta=None)
    last.adapters["alpha"].queue(fail("AUTH", "bad key"))
    plugin = FallbackPlugin(chain=["beta:b1", "alpha:a1"], on=["AUTH"])
    result = await last.agent(last.retry(), plugin).run_turn(SID, "hi")
    assert result.failure is not None and result.failure.code == "AUTH"
    assert "fallback chain exhausted (beta:b1, alpha:a1)" in result.failure.message
    assert last.served() == [("alpha", "a1")]  # nothing follows alpha in that chain


async def test_another_model_of_the_same_route_starts_with_a_fresh_retry_budget() -> None:
    rig = routes(alpha=None)
    rig.adapters["alpha"].queue(*[fail("SERVER", "a1 down")] * 3, fail("SERVER"), text("a2"))
    plugin = FallbackPlugin(chain=["alpha:a2"])
    result = await rig.agent(rig.retry(), plugin).run_turn(SID, "hi")

    assert result.text == "a2"
    events = await rig.log.read(SID)
    assert retries(events) == [("alpha", 1), ("alpha", 2), ("alpha", 1)]  # a2 counts from 1
    (first, _, fresh) = of_type(events, "llm/retry")
    assert fresh.retry_id != first.retry_id
    assert rig.served() == [("alpha", "a1")] * 3 + [("alpha", "a2")] * 2
    check_invariants(events)


def _tool_call(call_id: str) -> list[StreamChunk]:
    block = ToolCallBlock(call_id, "ping", "{}")
    return [
        BlockStart(0, "tool-call"),
        ToolCallDelta(0, call_id, "{}", name="ping"),
        BlockEnd(0, block),
        UsageChunk(TokenUsage(input_tokens=11, output_tokens=3)),
        Finish(ToolCalls()),
    ]


async def test_the_turn_stays_on_the_fallback_target_and_the_next_turn_starts_afresh() -> None:
    rig = routes(alpha=None, beta=None)
    ping = Tool("ping", "ping", {"type": "object"}, lambda args: "pong")
    rig.adapters["alpha"].queue(*[fail("SERVER", "down")] * 3, text("alpha is back"))
    rig.adapters["beta"].queue(_tool_call("c1"), text("done on beta"))
    agent = rig.agent(rig.retry(), FallbackPlugin(chain=["beta:b1"]), tools=[ping])
    first = await agent.run_turn(SID, "hi")
    second = await agent.run_turn(SID, "again")

    assert (first.text, second.text) == ("done on beta", "alpha is back")
    # step 2 of turn 1 stays on beta; turn 2 starts on its configured route again
    assert rig.served() == [("alpha", "a1")] * 3 + [("beta", "b1")] * 2 + [("alpha", "a1")]
    events = await rig.log.read(SID)
    assert len(fallbacks(events)) == 1
    report = TokenMeter.project(events)
    assert report.calls[(1, 1, 4)].input_tokens == 11  # beta's call, keyed by its attempt
    check_invariants(events)


async def test_plugin_order_does_not_change_the_decisions() -> None:
    logs = []
    for order in ("retry-first", "fallback-first"):
        rig = routes(alpha=None, beta=None)
        rig.adapters["alpha"].queue(*[fail("SERVER", "down")] * 3)
        rig.adapters["beta"].queue(text("beta"))
        plugins: list[AgentPlugin] = [rig.retry(), FallbackPlugin(chain=["beta:b1"])]
        if order == "fallback-first":
            plugins.reverse()
        assert (await rig.agent(*plugins).run_turn(SID, "hi")).text == "beta"
        events = await rig.log.read(SID)
        logs.append((types(events), retries(events), [f.attempt for f in fallbacks(events)]))
    assert logs[0] == logs[1]


async def test_an_always_mode_route_is_retried_not_left_but_an_immediate_code_falls_back() -> None:
    always = policy(mode="always", initial=10, max=10, jitter=0)
    rig = routes(alpha=always, beta=None)
    rig.adapters["alpha"].queue(
        *[fail("SERVER", "down")] * 4, fail("QUOTA", "insufficient balance")
    )
    rig.adapters["beta"].queue(text("beta"))
    plugin = FallbackPlugin(chain=["beta:b1"], on=[*DEFAULT_FALLBACK_CODES, "QUOTA"])
    result = await rig.agent(rig.retry(), plugin).run_turn(SID, "hi")

    assert result.text == "beta"
    events = await rig.log.read(SID)
    assert retries(events) == [("alpha", n) for n in range(1, 5)]  # never given up on SERVER
    assert [(f.attempt, f.failure.code) for f in fallbacks(events)] == [(5, "QUOTA")]
    check_invariants(events)


async def test_without_a_retry_plugin_a_listed_transient_failure_falls_back_at_once() -> None:
    rig = routes(alpha=None, beta=None)
    rig.adapters["alpha"].queue(fail("TIMEOUT", "slow"))
    rig.adapters["beta"].queue(text("beta"))
    result = await rig.agent(FallbackPlugin(chain=["beta:b1"])).run_turn(SID, "hi")
    assert result.text == "beta"
    assert [f.failure.code for f in fallbacks(await rig.log.read(SID))] == ["TIMEOUT"]


# ---- configuration ---------------------------------------------------------------------------


def test_chain_entries_are_parsed_into_targets() -> None:
    plugin = FallbackPlugin(
        chain=["local:qwen3:8b", ("beta", "b1"), FallbackTarget("gamma", "g1"), ["d", "m"]]
    )
    assert plugin.chain == (
        FallbackTarget("local", "qwen3:8b"),  # split at the first colon
        FallbackTarget("beta", "b1"),
        FallbackTarget("gamma", "g1"),
        FallbackTarget("d", "m"),
    )
    assert plugin.on == frozenset(DEFAULT_FALLBACK_CODES)
    assert FallbackPlugin(chain=["a:b"], on=["AUTH", "HTTP_529"]).on == {"AUTH", "HTTP_529"}


@pytest.mark.parametrize(
    ("chain", "message"),
    [
        (["beta"], "chain[0] 'beta' must be \"route:model\""),
        (["beta:b1", ("gamma",)], "chain[1] ('gamma',) must be a (route, model) pair"),
        ([42], "chain[0] 42 must be a (route, model) pair"),
        ([("beta", "")], "chain[0] ('beta', ''): the model must be a non-empty id"),
        ([":b1"], "chain[0] ':b1': the route must be a non-empty name"),
        ([" beta:b1"], "chain[0] ' beta:b1': the route must be a non-empty name"),
        ([("beta", 7)], "chain[0] ('beta', 7): the model must be a non-empty id"),
        (["beta:b1", ("beta", "b1")], "chain[1] ('beta', 'b1') repeats chain[0] (beta:b1)"),
        ([], "chain must list at least one (route, model) target"),
        ("beta:b1", "chain must be a sequence of (route, model) targets, got 'beta:b1'"),
    ],
)
def test_a_bad_chain_entry_is_refused_naming_the_entry(chain: Any, message: str) -> None:
    with pytest.raises(HarnessError) as info:
        FallbackPlugin(chain=chain)
    assert info.value.code == ErrorCode.INVALID_CONFIG
    assert info.value.message.startswith("llm-fallback: ")
    assert message in info.value.message


@pytest.mark.parametrize(
    ("on", "message"),
    [
        ("AUTH", "on must be a collection of failure codes, got 'AUTH'"),
        (["AUTH", "NOPE"], "on contains an unknown code 'NOPE'"),
        (["HTTP_99"], "on contains an unknown code 'HTTP_99'"),
        ([], "on must list at least one failure code"),
    ],
)
def test_a_bad_on_code_is_refused_naming_it(on: Any, message: str) -> None:
    with pytest.raises(HarnessError) as info:
        FallbackPlugin(chain=["beta:b1"], on=on)
    assert info.value.code == ErrorCode.INVALID_CONFIG
    assert message in info.value.message


async def test_an_unregistered_fallback_route_fails_the_step_naming_it() -> None:
    rig = routes(alpha=None)
    rig.adapters["alpha"].queue(fail("AUTH", "bad key"))
    plugin = FallbackPlugin(chain=["nowhere:m"], on=["AUTH"])
    result = await rig.agent(rig.retry(), plugin).run_turn(SID, "hi")
    assert result.failure is not None and result.failure.code == "NO_ADAPTER"
    assert "nowhere" in result.failure.message
    assert [f.to_route for f in fallbacks(await rig.log.read(SID))] == ["nowhere"]


# ---- the views -------------------------------------------------------------------------------


async def test_the_cli_transcript_and_the_ui_fold_show_a_fallback_cleanly() -> None:
    rig = routes(alpha=None, beta=None)
    rig.adapters["alpha"].queue(fail("AUTH", "bad key"))
    rig.adapters["beta"].queue(text("beta"))
    agent = rig.agent(rig.retry(), FallbackPlugin(chain=["beta:b1"], on=["AUTH"]))
    await agent.run_turn(SID, "hi")
    events = await rig.log.read(SID)
    (event,) = [e for e in events if e.type == "llm/fallback"]

    line = event_line(event).plain
    assert "llm/fallback" in line and '"to_route":"beta"' in line
    fold = SessionFold(SID)
    for each in events:
        fold.apply(each)
    assert fold.next_seq == len(events)
