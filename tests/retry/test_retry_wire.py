"""Spec C.8/C.9 and G.9 `transport-recovery.spec` (C26–C31), G.11 #1: the retry plugin against the
real DeepSeek adapter and a loopback server that injects faults byte by byte."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from retry_helpers import RecordingSleep, check_invariants, of_type, types
from retry_wire import (
    API_KEY,
    ROUTE,
    RawServer,
    answer,
    deepseek_agent,
    delta,
    free_port,
    partial_then_eof,
    partial_then_reset,
    reset,
    sse,
    stall,
    status,
)

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent
from modelwire.retry import RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import Event, MemoryLog, SessionLog, StepStart, TurnErrored
from modelwire.vocab import Finish, LlmFailure, TextBlock


@pytest.fixture
async def raw() -> AsyncIterator[RawServer]:
    server = RawServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def attempt_chunks(events: list[Event], attempt: int) -> list[Event]:
    return [e for e in events if e.type == "assistant/chunk" and e.data.attempt == attempt]


def assert_single_recovered_message(events: list[Event], text: str, attempt: int) -> None:
    (message,) = of_type(events, "assistant/message")
    assert (message.turn, message.step, message.attempt) == (1, 1, attempt)
    assert message.message.content == (TextBlock(text),)
    assert message.source_event_seqs == tuple(e.seq for e in attempt_chunks(events, attempt))
    assert of_type(events, "step/start") == [StepStart(1, 1)]


@pytest.mark.parametrize("server_503", ["http-status", "in-band-after-partial-text"])
@pytest.mark.parametrize("retry_after", [None, "1"])
async def test_c8_429_then_503_then_success(
    raw: RawServer, any_log: SessionLog, sid: str, retry_after: str | None, server_503: str
) -> None:
    headers = {} if retry_after is None else {"Retry-After": retry_after}
    second = (
        status(503, "upstream overloaded")
        if server_503 == "http-status"
        else sse(
            delta(role="assistant", content="half a thou"),
            {"error": {"code": 503, "message": "upstream overloaded"}},
            done=False,
        )
    )
    raw.queue(status(429, "slow down", headers), second, answer("complete answer"))
    sleep = RecordingSleep()
    policy = {
        "mode": "normal",
        "max_retries": 2,
        "backoff": {"initial_delay_ms": 10, "max_delay_ms": 1000, "jitter_ratio": 0},
    }
    agent = deepseek_agent(
        raw.url, any_log, plugins=[RetryPlugin(sleep=sleep)], retry_policy=policy
    )
    result = await agent.run_turn(sid, "question")
    assert result.reason.kind == "completed" and result.text == "complete answer"
    events = await any_log.read(sid)
    records = of_type(events, "llm/retry")
    assert [(r.retry, r.failure.code, r.failure.status) for r in records] == [
        (1, "RATE_LIMIT", 429),
        (2, "SERVER", 503 if server_503 == "http-status" else None),
    ]
    assert records[0].delay_ms == (1000 if retry_after else 10)  # Retry-After used exactly
    assert records[1].delay_ms == 20
    assert len(of_type(events, "llm/retry-started")) == 2
    assert len(raw.bodies) == 3 and raw.bodies[0] == raw.bodies[1] == raw.bodies[2]
    failed = attempt_chunks(events, 2)
    if server_503 != "http-status":
        assert [e.data.chunk.type for e in failed] == ["block-start", "text-delta", "finish"]
    assert_single_recovered_message(events, "complete answer", 3)
    assert "half a thou" not in raw.bodies[2].decode()
    assert "overloaded" not in raw.bodies[2].decode()  # C32: diagnostics stay in llm/retry
    assert API_KEY not in repr(events)
    check_invariants(events)


async def test_g9_01_refused_connection_recovers_when_the_server_starts_during_backoff(
    sid: str,
) -> None:
    server = RawServer(port=free_port())
    server.queue(answer("came up"))
    sleep = RecordingSleep(real=True)
    sleep.hook = server.start
    log = MemoryLog()
    try:
        agent = deepseek_agent(server.url, log, plugins=[RetryPlugin(sleep=sleep)])
        result = await agent.run_turn(sid, "hi")
    finally:
        await server.stop()
    assert result.reason.kind == "completed"
    events = await log.read(sid)
    (record,) = of_type(events, "llm/retry")
    assert record.failure.code == "TRANSPORT"
    assert_single_recovered_message(events, "came up", 2)


@pytest.mark.parametrize(
    ("fault", "failed_chunks"),
    [("stream_disconnect", 1), ("partial_disconnect", 3)],
)
async def test_g9_02_disconnects_are_transport_failures_and_retried(
    raw: RawServer, sid: str, fault: str, failed_chunks: int
) -> None:
    if fault == "stream_disconnect":
        raw.queue(partial_then_reset())
    else:
        raw.queue(partial_then_reset(delta(role="assistant", content="lost words")))
    raw.queue(answer("recovered text"))
    log = MemoryLog()
    result = await deepseek_agent(raw.url, log, plugins=[RetryPlugin()]).run_turn(sid, "hi")
    assert result.reason.kind == "completed"
    events = await log.read(sid)
    assert raw.bodies[0] == raw.bodies[1]
    failed = attempt_chunks(events, 1)
    assert len(failed) == failed_chunks
    assert isinstance(failed[-1].data.chunk, Finish)
    (record,) = of_type(events, "llm/retry")
    assert record.failure.code == "TRANSPORT"
    assert all(e.seq < next(x.seq for x in events if x.type == "llm/retry") for e in failed)
    assert_single_recovered_message(events, "recovered text", 2)
    check_invariants(events)


async def test_g9_03_a_content_less_completion_is_retried_as_empty_response(
    raw: RawServer, sid: str
) -> None:
    raw.queue(sse(delta(role="assistant"), delta("stop")), answer("now with words"))
    log = MemoryLog()
    result = await deepseek_agent(raw.url, log, plugins=[RetryPlugin()]).run_turn(sid, "hi")
    assert result.reason.kind == "completed"
    events = await log.read(sid)
    (record,) = of_type(events, "llm/retry")
    assert record.failure.code == "EMPTY_RESPONSE"
    assert raw.bodies[0] == raw.bodies[1]
    assert_single_recovered_message(events, "now with words", 2)  # no empty message committed


async def test_g9_04_a_clean_eof_is_stream_closed_and_not_retried(raw: RawServer, sid: str) -> None:
    raw.queue(partial_then_eof(delta(role="assistant", content="cut")), answer("never"))
    log = MemoryLog()
    result = await deepseek_agent(raw.url, log, plugins=[RetryPlugin()]).run_turn(sid, "hi")
    assert result.reason == TurnErrored(
        LlmFailure("SSE stream ended without [DONE]", "STREAM_CLOSED")
    )
    events = await log.read(sid)
    assert len(raw.bodies) == 1
    assert len(attempt_chunks(events, 1)) == 3
    assert "assistant/message" not in types(events)
    assert "llm/retry" not in types(events)


async def test_g9_05_a_stalled_body_times_out_and_is_retried(raw: RawServer, sid: str) -> None:
    raw.queue(stall(delta(role="assistant", content="thinking")), answer("unstuck"))
    log = MemoryLog()
    agent = deepseek_agent(raw.url, log, plugins=[RetryPlugin()], idle_ms=150)
    result = await agent.run_turn(sid, "hi")
    assert result.reason.kind == "completed"
    events = await log.read(sid)
    (record,) = of_type(events, "llm/retry")
    assert record.failure.code == "TIMEOUT"
    assert_single_recovered_message(events, "unstuck", 2)


async def test_g9_06_budget_exhaustion_after_three_resets(raw: RawServer, sid: str) -> None:
    raw.queue(reset(), reset(), reset())
    log = MemoryLog()
    result = await deepseek_agent(raw.url, log, plugins=[RetryPlugin()]).run_turn(sid, "hi")
    assert result.failure is not None and result.failure.code == "TRANSPORT"
    assert "DeepSeek API request to" in result.failure.message
    events = await log.read(sid)
    assert len(raw.bodies) == 3
    assert of_type(events, "step/start") == [StepStart(1, 1)]
    assert [r.retry for r in of_type(events, "llm/retry")] == [1, 2]
    check_invariants(events)


@pytest.mark.parametrize("mode", ["normal", "normal-all-codes-but"])
@pytest.mark.parametrize(
    ("behaviour", "code"),
    [
        (status(402, "Insufficient Balance"), "QUOTA"),
        (status(429, "You exceeded your current quota, please check your plan"), "QUOTA"),
        (status(401, "Authentication Fails, Your api key is invalid"), "AUTH"),
    ],
    ids=["402-balance", "429-quota", "401-auth"],
)
async def test_c8_quota_and_auth_are_never_retried(
    raw: RawServer, sid: str, behaviour: object, code: str, mode: str
) -> None:
    raw.queue(behaviour, answer("never"))  # type: ignore[arg-type]
    policy = None
    if mode != "normal":  # even a policy listing every transient code leaves them alone
        policy = {
            "mode": "normal",
            "retryable_codes": ["RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT", "EMPTY_RESPONSE"],
            "backoff": {"initial_delay_ms": 10, "max_delay_ms": 10, "jitter_ratio": 0},
        }
    log = MemoryLog()
    agent = deepseek_agent(raw.url, log, plugins=[RetryPlugin()], retry_policy=policy)
    result = await agent.run_turn(sid, "hi")
    assert result.failure is not None and result.failure.code == code
    assert len(raw.bodies) == 1
    assert "llm/retry" not in types(await log.read(sid))


async def test_g11_01_composed_from_a_configuration_file(
    raw: RawServer, sid: str, tmp_path: Path
) -> None:
    config_file = tmp_path / "modelwire.yaml"
    config_file.write_text(
        f"""
providers:
  {ROUTE}:
    api_key: {API_KEY}
    base_url: {raw.url}
    retry_policy:
      mode: normal
      max_retries: 1
      backoff: {{initial_delay_ms: 10, max_delay_ms: 10, jitter_ratio: 0}}
plugins:
  llm-retry: {{}}
"""
    )
    config = yaml.safe_load(config_file.read_text())
    runtime = LlmRuntime()
    adapter = DeepSeekAdapter.from_config(config["providers"][ROUTE], env={})
    runtime.register_adapter([ROUTE], adapter)
    plugin = RetryPlugin.from_config(config["plugins"]["llm-retry"])
    raw.queue(status(500, "boom"), answer("recovered once"), status(500, "again"), status(500, "x"))
    log = MemoryLog()
    agent = Agent(
        runtime=runtime, log=log, provider=ROUTE, model="deepseek-v4-flash", plugins=[plugin]
    )
    result = await agent.run_turn(sid, "hi")
    assert result.text == "recovered once"
    assert len(of_type(await log.read(sid), "llm/retry")) == 1
    # the provider's budget is 1: a second turn failing twice ends after one retry
    second = await agent.run_turn(sid, "again")
    assert second.failure is not None and second.failure.code == "SERVER"
    records = of_type(await log.read(sid), "llm/retry")
    assert [(r.turn, r.retry, r.max_retries) for r in records] == [(1, 1, 1), (2, 1, 1)]
    assert json.loads(records[0].policy_key)[1] == 1


@pytest.mark.parametrize(
    "retry_after",
    ["-5", "soon", "9" * 400, "Wed, 21 Oct 2015 07:28:00 GMT"],
    ids=["negative", "unparseable", "overflowing", "past-date"],
)
async def test_c14_an_untrustworthy_retry_after_is_ignored_for_local_backoff(
    raw: RawServer, sid: str, retry_after: str
) -> None:
    raw.queue(status(429, "slow down", {"Retry-After": retry_after}), answer("fine"))
    log = MemoryLog()
    result = await deepseek_agent(raw.url, log, plugins=[RetryPlugin()]).run_turn(sid, "hi")
    assert result.text == "fine"
    (record,) = of_type(await log.read(sid), "llm/retry")
    assert record.failure.provider_retry_after_ms is None
    assert record.delay_ms == 10  # the policy's own backoff (10/10/0)
