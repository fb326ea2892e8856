"""Spec E.1, E.3, E.5 and G.13 8–18 / G.14: the estimator and the context projections.

modelwire's log only appends to the surface (no compaction or surface-replace events), so the
upstream cases about metered/unmetered replacements and shadow-price claims (G.13 16b–17,
G.14 4 and 6) have no counterpart here; the rest are ported.
"""

from __future__ import annotations

import json
import math

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire.agent.request import derive_messages
from modelwire.meter import (
    ContextBreakdown,
    ContextMeter,
    ContextPressure,
    ContextState,
    estimate_blocks,
    estimate_header,
    estimate_message,
    estimate_system,
    estimate_tools,
    utf16_length,
)
from modelwire.session import (
    AssistantChunk,
    AssistantMessage,
    EpochHeader,
    Event,
    RequestContext,
    RequestHeader,
    StepStart,
    ToolResultRecord,
    TurnStart,
    UserMessage,
)
from modelwire.session.events import event_type_of
from modelwire.vocab import (
    CallConfig,
    ImageAttachmentRef,
    ImageBlock,
    ModelSource,
    ReasoningBlock,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    UsageChunk,
    assistant_message,
    user_message,
)

SOURCE = ModelSource("p", "m")


def events(*datas: msgspec.Struct) -> list[Event]:
    return [Event(i, event_type_of(d), 0, d) for i, d in enumerate(datas)]


def sample(usage: TokenUsage) -> AssistantChunk:
    return AssistantChunk(1, 1, 1, UsageChunk(usage))


def answer(text: str, usage: TokenUsage | None = None) -> AssistantMessage:
    blocks = [TextBlock(text)] if text else []
    return AssistantMessage(
        turn=1,
        step=1,
        attempt=1,
        message=assistant_message(blocks, SOURCE),
        usage=usage,
        source_event_seqs=(),
    )


def header(system: str | None = None, tools: tuple[ToolSchema, ...] | None = None) -> RequestHeader:
    return RequestHeader(
        EpochHeader(config=CallConfig(provider="p", model="m"), system=system, tools=tools),
        "change",
    )


TOOL = ToolSchema("bash", "run a command", {"type": "object"})


# ---- E.1 estimator ---------------------------------------------------------------------------


def test_g14_09_estimator_vectors_for_every_block_shape() -> None:
    assert estimate_blocks([TextBlock("abcd")]) == 5
    assert estimate_blocks([ReasoningBlock("abcdefgh")]) == 6
    assert estimate_blocks([ToolCallBlock("c1", "bash", '{"a":1}')]) == 7
    assert estimate_blocks([ToolResultBlock("c1", (TextBlock("abcd"),))]) == 9
    image = ImageBlock(ImageAttachmentRef("att-1", "image/png", 10, 2, 2))
    encoded = msgspec.json.encode(image).decode()
    assert estimate_blocks([image]) == 4 + math.ceil(len(encoded) / 4)
    assert estimate_message(user_message("abcd")) == 9
    assert estimate_message(assistant_message([], SOURCE)) == 0  # derives no message


def test_e1_lengths_are_utf16_code_units() -> None:
    assert utf16_length("abc") == 3
    assert utf16_length("é") == 1
    assert utf16_length("😀") == 2  # outside the BMP: a surrogate pair
    assert estimate_blocks([TextBlock("😀😀😀")]) == 2 + 4


def test_g14_10_envelope_vectors() -> None:
    assert estimate_system(None) == estimate_system("") == 0
    assert estimate_tools(None) == estimate_tools(()) == 0
    assert estimate_header(None) == 0
    assert estimate_system("abcdefgh") == 6
    tools_json = msgspec.json.encode((TOOL,)).decode()
    assert estimate_tools((TOOL,)) == math.ceil(len(tools_json) / 4) + 4
    assert estimate_header(header("abcdefgh", (TOOL,)).header) == 6 + estimate_tools((TOOL,))


# ---- E.3 pressure ----------------------------------------------------------------------------


def test_g13_08_an_empty_log_has_no_pressure_figures() -> None:
    assert ContextMeter.project([]).pressure == ContextPressure()


def test_g13_09_capacity_alone_synthesizes_no_pressure() -> None:
    meter = ContextMeter.project(events(RequestContext("p", "m", 64000)))
    assert meter.pressure == ContextPressure(context_window=64000)


def test_g13_10_pressure_is_the_prompt_side_of_the_sample() -> None:
    meter = ContextMeter.project(events(sample(TokenUsage(100, 50, 20, 5, 30))))
    assert meter.pressure == ContextPressure(125, 125, None)  # output excluded


def test_g13_11_the_newest_sample_replaces_the_older() -> None:
    meter = ContextMeter.project(events(sample(TokenUsage(100, 1)), sample(TokenUsage(250, 1))))
    assert meter.pressure.pressure_tokens == 250


def test_g13_12_capacity_is_last_wins_across_a_model_switch() -> None:
    meter = ContextMeter.project(
        events(
            RequestContext("p", "m1", 64000),
            sample(TokenUsage(100, 9)),
            RequestContext("p", "m2", 128000),
        )
    )
    assert meter.pressure == ContextPressure(100, 100, 128000)


def test_g13_13_a_route_without_capacity_removes_the_window() -> None:
    meter = ContextMeter.project(
        events(RequestContext("p", "m1", 64000), RequestContext("q", "m2", None))
    )
    assert meter.pressure == ContextPressure()


def test_g13_14_unrelated_events_and_a_restated_capacity_change_nothing() -> None:
    history = events(
        RequestContext("p", "m", 64000),
        TurnStart(1),
        StepStart(1, 1),
        RequestContext("p", "m", 64000),
        RequestContext("p", "m", 32000),
    )
    meter = ContextMeter()
    assert [meter.apply(e) for e in history] == [True, False, False, False, True]


def test_g13_15_a_checkpoint_restores_the_view() -> None:
    meter = ContextMeter.project(events(RequestContext("p", "m", 64000), sample(TokenUsage(42, 1))))
    restored = ContextMeter.restore(meter.checkpoint())
    assert restored.pressure == ContextPressure(42, 42, 64000)
    assert json.loads(meter.checkpoint())["version"] == 4


def test_g13_16_projection_anchors_before_the_messages_own_delta_and_grows() -> None:
    reply = answer("x" * 40, TokenUsage(900, 10))  # priced 10 + 4 + 4 = 18
    meter = ContextMeter.project(events(UserMessage(user_message("abcd")), reply))
    assert meter.pressure == ContextPressure(900, 900 + 18, None)
    meter.apply(Event(2, "user/message", 0, UserMessage(user_message("abcd"))))
    assert meter.pressure == ContextPressure(900, 900 + 18 + 9, None)


def test_g13_17_a_message_without_usage_moves_only_the_projection() -> None:
    meter = ContextMeter.project(events(sample(TokenUsage(500, 1)), answer("abcd")))
    assert meter.pressure == ContextPressure(500, 500 + 9, None)


def test_g13_18_a_negative_projection_clamps_to_zero() -> None:
    state = ContextState(pressure_tokens=10, sampled_surface_tokens=100, surface_tokens=5)
    assert ContextMeter(state).pressure == ContextPressure(10, 0, None)


# ---- E.5 breakdown ---------------------------------------------------------------------------


def test_g14_01_an_empty_log_prices_zero() -> None:
    assert ContextMeter.project([]).breakdown == ContextBreakdown(0, 0, 0)


def test_g14_02_system_and_tools_are_last_wins_and_a_bare_header_prices_zero() -> None:
    meter = ContextMeter()
    history = events(
        header("abcdefgh", (TOOL,)),
        header("abcdefgh", (TOOL,)),
        TurnStart(1),
        header(),
    )
    assert meter.apply(history[0])
    assert meter.breakdown == ContextBreakdown(6, estimate_tools((TOOL,)), 0)
    assert not meter.apply(history[1]) and not meter.apply(history[2])
    assert meter.apply(history[3])
    assert meter.breakdown == ContextBreakdown(0, 0, 0)


def test_g14_03_a_user_message_prices_nine_and_an_empty_assistant_adds_zero() -> None:
    meter = ContextMeter.project(events(UserMessage(user_message("abcd")), answer("")))
    assert meter.breakdown.message_tokens == 9


def test_g14_07_checkpoint_state_stays_bounded_while_the_surface_grows() -> None:
    meter = ContextMeter()
    keys: set[str] = set()
    for seq in range(50):
        meter.apply(Event(seq, "user/message", 0, UserMessage(user_message("word " * seq))))
        keys |= set(json.loads(meter.checkpoint()))
    assert keys <= set(ContextState.__struct_fields__)
    assert len(meter.checkpoint()) < 200


def test_g14_08_a_checkpoint_restores_after_reload_and_keeps_folding() -> None:
    history = events(header("sys"), UserMessage(user_message("abcd")), answer("abcdefgh"))
    meter = ContextMeter.project(history[:2])
    restored = ContextMeter.restore(meter.checkpoint())
    restored.apply(history[2])
    assert restored.breakdown == ContextMeter.project(history).breakdown
    with pytest.raises(Exception, match="invalid checkpoint"):
        ContextMeter.restore(b"[]")


_SURFACE = st.one_of(
    st.builds(lambda t: UserMessage(user_message(t)), st.text(max_size=40)),
    st.builds(lambda t: answer(t), st.text(max_size=40)),
    st.builds(
        lambda t: ToolResultRecord(
            turn=1,
            step=1,
            call_id="c",
            name="bash",
            message=user_message([ToolResultBlock("c", (TextBlock(t),))]),
        ),
        st.text(max_size=40),
    ),
    st.builds(lambda n: sample(TokenUsage(n, 1)), st.integers(0, 5000)),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_SURFACE, max_size=25))
def test_g14_05_message_tokens_equal_the_price_of_the_derived_conversation(
    datas: list[msgspec.Struct],
) -> None:
    history = events(*datas)
    meter = ContextMeter()
    for k, event in enumerate(history):
        meter.apply(event)
        visible = derive_messages(history[: k + 1])
        assert meter.breakdown.message_tokens == sum(estimate_message(m) for m in visible)
        projected = meter.pressure.projected_tokens
        assert projected is None or projected >= (meter.pressure.pressure_tokens or 0)
