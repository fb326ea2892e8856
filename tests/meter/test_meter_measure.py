"""Spec E.6 and G.15 `token-meter.spec` (the cases that apply to modelwire's append-only surface):
`TokenMeasure` anchors the next request's size on the latest provider usage."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest

from modelwire.errors import HarnessError
from modelwire.meter import Baseline, SurfaceNode, TokenMeasure, estimate_header
from modelwire.session import (
    AssistantChunk,
    AssistantMessage,
    EpochHeader,
    Event,
    RequestHeader,
    StepEnd,
    StepStart,
    TurnStart,
    UserMessage,
    open_log,
)
from modelwire.session.events import event_type_of
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    CallConfig,
    Finish,
    ImageAttachmentRef,
    ImageBlock,
    ModelSource,
    ReasoningBlock,
    Stop,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    UsageChunk,
    assistant_message,
    user_message,
)

SOURCE = ModelSource("p", "m")
USAGE_34 = TokenUsage(20, 7, 3, 4, 6)  # 20 + 3 + 4 + 7 = 34; reasoning is inside output


def header(model: str = "m", system: str | None = "sys", **config: Any) -> RequestHeader:
    return RequestHeader(
        EpochHeader(config=CallConfig(provider="p", model=model, **config), system=system),
        "change",
    )


class Log:
    """Builds a session's events with contiguous seqs."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, *datas: msgspec.Struct) -> list[int]:
        seqs = []
        for data in datas:
            seqs.append(len(self.events))
            self.events.append(Event(len(self.events), event_type_of(data), 0, data))
        return seqs

    def step(
        self,
        step: int,
        said: str,
        durable: str | None = None,
        usage: TokenUsage | None = None,
        *,
        turn: int = 1,
        cite: bool = True,
    ) -> None:
        """step/start, a user message, the model's chunks for `said`, the durable message."""
        self.add(StepStart(turn, step), UserMessage(user_message("abcd")))
        chunks: list[Any] = [
            BlockStart(0, "text"),
            TextDelta(0, said),
            BlockEnd(0, TextBlock(said)),
        ]
        if usage is not None:
            chunks.append(UsageChunk(usage))
        chunks.append(Finish(Stop()))
        seqs = self.add(*(AssistantChunk(turn, step, 1, c) for c in chunks))
        text = said if durable is None else durable
        self.add(
            AssistantMessage(
                turn=turn,
                step=step,
                attempt=1,
                message=assistant_message([TextBlock(text)] if text else [], SOURCE),
                usage=usage,
                source_event_seqs=tuple(seqs) if cite else (),
            ),
            StepEnd(turn, step),
        )


def test_g15_04_pricing_covers_every_block_shape() -> None:
    image = ImageBlock(ImageAttachmentRef("a", "image/png", 1, 1, 1))
    mixed = assistant_message(
        [
            TextBlock("abcd"),
            ReasoningBlock("abcd"),
            ToolCallBlock("c", "bash", "{}"),
            ToolResultBlock("c", (TextBlock("abcd"),)),
            image,
        ],
        SOURCE,
    )
    log = Log()
    log.add(TurnStart(1), StepStart(1, 1), UserMessage(user_message("abcd")))
    log.add(AssistantMessage(turn=1, step=1, attempt=1, message=mixed, source_event_seqs=()))
    nodes = TokenMeasure.project(log.events).measure().nodes
    assert nodes[0] == SurfaceNode(2, 9)
    assert nodes[1].tokens > 30


def test_g15_05_an_empty_session_measures_nothing_and_is_immutable() -> None:
    m = TokenMeasure().measure()
    assert (m.log_revision, m.baseline, m.surface_delta_tokens, m.total_tokens) == (
        0,
        Baseline("none", 0),
        0,
        0,
    )
    assert (m.surface_tokens, m.nodes) == (0, ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.total_tokens = 5  # type: ignore[misc]


def test_g15_06_an_earlier_snapshot_stays_detached() -> None:
    fold = TokenMeasure()
    fold.apply(Event(0, "user/message", 0, UserMessage(user_message("abcd"))))
    first = fold.measure()
    fold.apply(Event(1, "user/message", 0, UserMessage(user_message("abcdefgh"))))
    assert (first.log_revision, first.surface_tokens, len(first.nodes)) == (1, 9, 1)
    assert fold.measure().log_revision == 2


def test_g15_07_without_usage_header_tools_and_surface_are_estimated() -> None:
    log = Log()
    log.add(TurnStart(1), header(system="You are terse."))
    log.add(UserMessage(user_message("abcd")))
    m = TokenMeasure.project(log.events).measure()
    assert m.baseline.kind == "estimated"
    assert m.total_tokens == estimate_header(log.events[1].data.header) + 9 > m.surface_tokens
    assert m.log_revision == len(log.events)


def test_g15_08_a_header_override_changes_only_the_pressure_fields() -> None:
    log = Log()
    log.add(header(system=None), UserMessage(user_message("abcd")))
    fold = TokenMeasure.project(log.events)
    plain = fold.measure()
    bigger = fold.measure(EpochHeader(config=CallConfig(provider="p", model="m"), system="x" * 40))
    assert bigger.total_tokens == plain.total_tokens + 14
    assert (bigger.surface_tokens, bigger.nodes) == (plain.surface_tokens, plain.nodes)


def test_g15_09_a_usage_anchor_and_a_longer_durable_rewrite() -> None:
    log = Log()
    log.add(TurnStart(1), header())
    log.step(1, "hi", durable="hi, rewritten at much greater length", usage=USAGE_34)
    m = TokenMeasure.project(log.events).measure()
    assert m.baseline == Baseline("usage", 34, USAGE_34)
    assert m.surface_delta_tokens > 0
    assert m.total_tokens == 34 + m.surface_delta_tokens


def test_g15_10_usage_below_the_heuristic_anchor_is_replaced_by_the_estimate() -> None:
    log = Log()
    log.add(TurnStart(1), header(system="s" * 400))
    log.step(1, "hi", usage=TokenUsage(1, 1))
    m = TokenMeasure.project(log.events).measure()
    assert m.baseline.kind == "estimated"
    assert m.total_tokens == estimate_header(log.events[1].data.header) + m.surface_tokens


def test_g15_11_no_usage_gives_an_estimated_anchor_then_positive_deltas() -> None:
    log = Log()
    log.add(TurnStart(1), header())
    log.step(1, "hi")
    fold = TokenMeasure.project(log.events)
    assert fold.measure().baseline.kind == "estimated"
    assert fold.measure().surface_delta_tokens == 0
    fold.apply(Event(len(log.events), "user/message", 0, UserMessage(user_message("abcd"))))
    assert fold.measure().surface_delta_tokens == 9


def test_g15_12_an_explicit_empty_source_list_prices_the_provider_output_as_zero() -> None:
    log = Log()
    log.add(TurnStart(1), header())
    log.step(1, "hello there", usage=USAGE_34, cite=False)
    m = TokenMeasure.project(log.events).measure()
    assert m.surface_delta_tokens == m.nodes[-1].tokens > 0  # the whole durable message


def test_g15_13_only_the_latest_successful_anchor_counts() -> None:
    log = Log()
    log.add(TurnStart(1), header())
    log.step(1, "hi", usage=USAGE_34)
    log.add(header(model="m2"))
    log.step(2, "yo", usage=TokenUsage(100, 10, 20, 20))
    fold = TokenMeasure.project(log.events)
    assert fold.measure().baseline == Baseline("usage", 150, TokenUsage(100, 10, 20, 20))
    back = fold.measure(log.events[1].data.header)  # the first model's header again
    assert back.baseline.kind == "estimated"


@pytest.mark.parametrize(
    "override",
    [{"system": "other"}, {"model": "m9"}, {"temperature": 0.5}],
    ids=["system", "model", "temperature"],
)
def test_g15_14_any_envelope_change_re_estimates(override: dict[str, Any]) -> None:
    log = Log()
    log.add(TurnStart(1), header())
    log.step(1, "hi", usage=USAGE_34)
    fold = TokenMeasure.project(log.events)
    config = {"model": override.pop("model", "m"), **override}
    system = config.pop("system", "sys")
    changed = EpochHeader(config=CallConfig(provider="p", **config), system=system)
    assert fold.measure(changed).baseline.kind == "estimated"
    same = EpochHeader(config=CallConfig(provider="p", model="m"), system="sys", tools=())
    assert fold.measure(same).baseline.kind == "usage"  # an empty tool list is no change
    tools = (ToolSchema("t", "d", {}),)
    with_tools = EpochHeader(config=CallConfig(provider="p", model="m"), system="sys", tools=tools)
    assert fold.measure(with_tools).baseline.kind == "estimated"


def test_g15_15_the_latest_header_is_effective() -> None:
    log = Log()
    log.add(header(system="a"), header(system="abcdefgh"))
    m = TokenMeasure.project(log.events).measure()
    assert m.baseline == Baseline("estimated", 6) and m.log_revision == 2


def test_g15_17_an_empty_assistant_anchor_is_a_zero_token_node() -> None:
    log = Log()
    log.add(TurnStart(1), header())
    log.step(1, "", durable="")
    assert TokenMeasure.project(log.events).measure().nodes[-1].tokens == 0


def _fails_repeatably(events: list[Event], match: str) -> None:
    fold = TokenMeasure()
    with pytest.raises(HarnessError, match=match) as info:
        for event in events:
            fold.apply(event)
    assert info.value.code == "INVARIANT"
    revision = fold.measure().log_revision
    with pytest.raises(HarnessError, match=match):
        fold.apply(events[revision])
    assert fold.measure().log_revision == revision  # nothing was applied


def test_g15_18_an_assistant_message_without_an_open_step_fails() -> None:
    log = Log()
    log.add(TurnStart(1))
    message = assistant_message([TextBlock("x")], SOURCE)
    log.add(AssistantMessage(turn=1, step=1, attempt=1, message=message, source_event_seqs=()))
    _fails_repeatably(log.events, "assistant/message at seq 1 has no matching step/start")


@pytest.mark.parametrize(
    ("datas", "match"),
    [
        ((StepStart(1, 1), StepStart(1, 2)), "arrived before turn 1/step 1 ended"),
        ((StepStart(1, 1), StepEnd(1, 2)), "step/end at seq 1 has no matching step/start"),
    ],
    ids=["overlapping-start", "mismatched-end"],
)
def test_g15_19_inconsistent_step_boundaries_fail(datas: tuple[Any, ...], match: str) -> None:
    log = Log()
    log.add(*datas)
    _fails_repeatably(log.events, match)


def test_g15_19_a_late_assistant_after_step_end_fails() -> None:
    log = Log()
    log.add(header())
    log.step(1, "hi")
    late = log.events[-2].data
    log.add(late)
    _fails_repeatably(log.events, "has no matching step/start")


def _cite(log: Log, seqs: tuple[int, ...], usage: TokenUsage = USAGE_34) -> None:
    message = assistant_message([TextBlock("x")], SOURCE)
    log.add(
        AssistantMessage(
            turn=1, step=2, attempt=1, message=message, usage=usage, source_event_seqs=seqs
        )
    )


def test_g15_20_cited_seqs_must_be_chunks_of_the_same_step() -> None:
    log = Log()
    log.add(TurnStart(1), header())
    log.step(1, "hi", usage=USAGE_34)
    other_step_chunk = 4
    log.add(StepStart(1, 2))
    _cite(log, (other_step_chunk,))
    _fails_repeatably(log.events, "is not assistant/chunk of turn 1/step 2")
    log2 = Log()
    log2.add(TurnStart(1), header(), StepStart(1, 2), UserMessage(user_message("abcd")))
    _cite(log2, (3,))
    _fails_repeatably(log2.events, "is not assistant/chunk")


def test_g15_21_repeated_and_non_earlier_source_seqs_fail() -> None:
    log = Log()
    log.add(TurnStart(1), header(), StepStart(1, 2))
    (chunk,) = log.add(AssistantChunk(1, 2, 1, TextDelta(0, "x")))
    _cite(log, (chunk, chunk))
    _fails_repeatably(log.events, "repeats source seq 3")
    log2 = Log()
    log2.add(TurnStart(1), header(), StepStart(1, 2))
    _cite(log2, (3,))
    _fails_repeatably(log2.events, "source seq 3 is not earlier")


async def test_g15_24_readers_catch_up_and_a_rebuild_reaches_the_same_revision() -> None:
    log = await open_log("memory:")
    try:
        built = Log()
        built.add(TurnStart(1), header())
        built.step(1, "hi", usage=USAGE_34)
        await log.append_many("s", [e.data for e in built.events[:4]])
        fold = TokenMeasure()
        early = await fold.catch_up(log, "s")
        assert early.log_revision == 4
        await log.append_many("s", [e.data for e in built.events[4:]])
        late = await fold.catch_up(log, "s")
        assert late == TokenMeasure.project(await log.read("s")).measure()
        assert late.log_revision == len(built.events)
    finally:
        await log.close()
