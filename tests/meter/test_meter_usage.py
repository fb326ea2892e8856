"""Spec E.2 and G.13 `token-usage-projection.spec` 1–7, keyed by (turn, step, attempt) (DESIGN §7)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire.errors import HarnessError
from modelwire.meter import TokenMeter, UsageReport
from modelwire.session import (
    AssistantChunk,
    AssistantMessage,
    Event,
    StepEnd,
    StepStart,
    TurnStart,
    UserMessage,
    open_log,
)
from modelwire.session.events import event_type_of
from modelwire.vocab import (
    Finish,
    ModelSource,
    Stop,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
    assistant_message,
    user_message,
)

SOURCE = ModelSource("p", "m")


def usage_chunk(turn: int, step: int, usage: TokenUsage, attempt: int = 1) -> AssistantChunk:
    return AssistantChunk(turn, step, attempt, UsageChunk(usage))


def final(
    turn: int, step: int, usage: TokenUsage | None, attempt: int = 1, text: str = "ok"
) -> AssistantMessage:
    return AssistantMessage(
        turn=turn,
        step=step,
        attempt=attempt,
        message=assistant_message([TextBlock(text)], SOURCE),
        usage=usage,
        source_event_seqs=(),
    )


def events(*datas: msgspec.Struct) -> list[Event]:
    return [Event(i, event_type_of(d), 0, d) for i, d in enumerate(datas)]


def u(inp: int, out: int, cr: int = 0, cw: int = 0, r: int = 0) -> TokenUsage:
    return TokenUsage(inp, out, cr, cw, r)


def test_g13_01_an_empty_log_has_all_zero_buckets() -> None:
    report = TokenMeter.project([])
    assert report == UsageReport(total=u(0, 0), calls={}, turns={}, seq=0)
    assert report.total.total_tokens == 0


def test_g13_02_an_early_chunk_and_an_identical_final_usage_count_once() -> None:
    sample = TokenUsage(10, 5, 2)
    meter = TokenMeter()
    changes = [meter.apply(e) for e in events(usage_chunk(1, 1, sample), final(1, 1, sample))]
    assert changes == [True, False]  # one change notification
    assert meter.revision == 1
    assert meter.report().total == u(10, 5, 2)


def test_g13_03_a_different_final_usage_replaces_the_early_sample() -> None:
    report = TokenMeter.project(
        events(usage_chunk(1, 1, TokenUsage(10, 1)), final(1, 1, TokenUsage(12, 5, 3, 1, 2)))
    )
    assert report.total == u(12, 5, 3, 1, 2)
    assert report.calls == {(1, 1, 1): u(12, 5, 3, 1, 2)}


def test_g13_04_two_steps_accumulate_and_reasoning_is_not_added_to_output() -> None:
    report = TokenMeter.project(
        events(
            usage_chunk(1, 1, TokenUsage(10, 5, 1, 2, 3)),
            final(1, 1, TokenUsage(10, 5, 1, 2, 3)),
            usage_chunk(1, 2, TokenUsage(20, 10, 1, 2, 8)),
            final(1, 2, TokenUsage(20, 10, 1, 2, 8)),
        )
    )
    total = report.total
    assert (total.input_tokens, total.output_tokens) == (30, 15)
    assert (total.cache_read_tokens, total.cache_write_tokens) == (2, 4)
    assert total.reasoning_tokens == 11  # a detail of the 15 output tokens
    assert total.total_tokens == 30 + 2 + 4 + 15
    assert report.turns == {1: total}


def test_g13_05_a_usage_chunk_without_a_final_message_is_retained() -> None:
    report = TokenMeter.project(events(usage_chunk(1, 1, TokenUsage(7, 3))))
    assert report.total == u(7, 3)
    assert report.call(1, 1) == u(7, 3)


def test_g13_06_later_surface_events_never_reduce_historical_totals() -> None:
    meter = TokenMeter()
    history = events(
        usage_chunk(1, 1, TokenUsage(40, 4)),
        final(1, 1, TokenUsage(40, 4)),
        UserMessage(user_message("more")),
        final(1, 2, None, text="rewritten without usage"),
        StepEnd(1, 2),
    )
    for event in history[:2]:
        meter.apply(event)
    before = meter.report()
    assert [meter.apply(e) for e in history[2:]] == [False, False, False]  # E9: untouched
    assert meter.report().total == before.total == u(40, 4)


def test_g13_07_a_json_checkpoint_restores_the_view_and_keeps_folding() -> None:
    history = events(
        usage_chunk(1, 1, TokenUsage(9, 1), attempt=1),
        usage_chunk(1, 1, TokenUsage(8, 2), attempt=2),
        final(1, 1, TokenUsage(8, 3), attempt=2),
        usage_chunk(2, 1, TokenUsage(5, 5)),
    )
    meter = TokenMeter()
    for event in history[:3]:
        meter.apply(event)
    restored = TokenMeter.restore(meter.checkpoint())
    assert restored.report() == meter.report()
    restored.apply(history[3])
    assert restored.report() == TokenMeter.project(history)
    with pytest.raises(HarnessError, match="invalid checkpoint") as info:
        TokenMeter.restore(b'{"version": 4}')
    assert info.value.code == "INVALID_ARGS"


def test_design7_a_failed_attempts_usage_is_kept_beside_its_retry() -> None:
    report = TokenMeter.project(
        events(
            TurnStart(1),
            StepStart(1, 1),
            AssistantChunk(1, 1, 1, TextDelta(0, "partial")),
            usage_chunk(1, 1, TokenUsage(100, 7, 40), attempt=1),
            usage_chunk(1, 1, TokenUsage(100, 9, 40), attempt=2),
            final(1, 1, TokenUsage(100, 9, 40), attempt=2),
        )
    )
    assert report.calls == {(1, 1, 1): u(100, 7, 40), (1, 1, 2): u(100, 9, 40)}
    assert report.total == u(200, 16, 80)


def test_e2_events_must_arrive_in_seq_order() -> None:
    meter = TokenMeter()
    history = events(usage_chunk(1, 1, TokenUsage(1, 1)), usage_chunk(1, 2, TokenUsage(1, 1)))
    meter.apply(history[1])
    with pytest.raises(HarnessError, match="seq 0 arrived after seq 1"):
        meter.apply(history[0])
    assert meter.report().seq == 2


def test_e2_a_report_is_detached_and_read_only() -> None:
    meter = TokenMeter()
    meter.apply(events(usage_chunk(1, 1, TokenUsage(1, 1)))[0])
    report = meter.report()
    with pytest.raises(TypeError):
        report.calls[(9, 9, 9)] = u(1, 1)  # type: ignore[index]
    meter.apply(Event(1, "assistant/chunk", 0, usage_chunk(1, 2, TokenUsage(5, 5))))
    assert report.total == u(1, 1) and len(report.calls) == 1


_USAGE = st.builds(
    TokenUsage,
    st.integers(0, 1000),
    st.integers(0, 1000),
    st.none() | st.integers(0, 100),
    st.none() | st.integers(0, 100),
    st.none() | st.integers(0, 100),
)
_KEY = st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3))
_ITEM = st.one_of(
    st.tuples(st.just("chunk"), _KEY, _USAGE),
    st.tuples(st.just("message"), _KEY, st.none() | _USAGE),
    st.tuples(st.just("other"), _KEY, st.none()),
)


def _data(kind: str, key: tuple[int, int, int], usage: TokenUsage | None) -> msgspec.Struct:
    turn, step, attempt = key
    if kind == "chunk":
        assert usage is not None
        return usage_chunk(turn, step, usage, attempt)
    if kind == "message":
        return final(turn, step, usage, attempt)
    return AssistantChunk(turn, step, attempt, Finish(Stop()))


@settings(max_examples=150, deadline=None)
@given(st.lists(_ITEM, max_size=30))
def test_e2_incremental_equals_rebuild_at_every_seq(items: list[Any]) -> None:
    history = events(*(_data(*item) for item in items))
    meter = TokenMeter()
    expected: dict[tuple[int, int, int], TokenUsage] = {}
    for k, event in enumerate(history):
        meter.apply(event)
        data = event.data
        sample = None
        if isinstance(data, AssistantChunk) and isinstance(data.chunk, UsageChunk):
            sample = data.chunk.usage
        elif isinstance(data, AssistantMessage):
            sample = data.usage
        if sample is not None:
            assert isinstance(data, (AssistantChunk, AssistantMessage))
            expected[(data.turn, data.step, data.attempt)] = sample
        report = meter.report()
        assert report == TokenMeter.project(history[: k + 1])
        # the total is the sum of the latest sample per call: nothing double counted
        assert report.total.input_tokens == sum(s.input_tokens for s in expected.values())
        assert report.total.output_tokens == sum(s.output_tokens for s in expected.values())
        assert report.total.cache_read_tokens == sum(
            s.cache_read_tokens or 0 for s in expected.values()
        )
        assert sum(t.output_tokens for t in report.turns.values()) == report.total.output_tokens


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_e2_from_log_and_catch_up_match_the_projection(tmp_path: Path, backend: str) -> None:
    url = "memory:" if backend == "memory" else f"sqlite:///{tmp_path / 'meter.db'}"
    sid = f"meter-{uuid.uuid4()}"
    log = await open_log(url)
    try:
        await log.append_many(
            sid, [TurnStart(1), StepStart(1, 1), usage_chunk(1, 1, TokenUsage(3, 4))]
        )
        meter = await TokenMeter.from_log(log, sid)
        assert meter.report().total == u(3, 4) and meter.next_seq == 3
        await log.append_many(sid, [final(1, 1, TokenUsage(3, 5)), StepEnd(1, 1)])
        assert await meter.catch_up(log, sid)
        assert not await meter.catch_up(log, sid)
        every = await log.read(sid)
        assert meter.report() == TokenMeter.project(every)
        partial = await TokenMeter.from_log(log, sid, to_seq=3)
        assert partial.report() == TokenMeter.project(every[:3])
    finally:
        await log.close()
