"""BlockAssembler rules R-ASM-1..19 (spec/core.md §3; upstream assembler.spec.ts ASM-01..22)."""

from __future__ import annotations

import msgspec
import pytest

from modelwire import (
    BlockAssembler,
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    LlmFailure,
    MaxTokens,
    Message,
    ModelSource,
    PluginSource,
    ReasoningBlock,
    ReasoningDelta,
    ReplayEnvelope,
    Stop,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolCalls,
    UsageChunk,
)
from modelwire.errors import ErrorCode, HarnessError
from modelwire.never import assert_never

RESPONSE = {"response_id": "resp-1"}


def assemble(*chunks: object) -> BlockAssembler:
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)  # type: ignore[arg-type]
    return asm


def test_asm_01_interleaved_stream() -> None:
    usage = TokenUsage(10, 5)
    asm = assemble(
        BlockStart(0, "reasoning"),
        ReasoningDelta(0, "thinking…"),
        BlockEnd(0, ReasoningBlock("thinking…")),
        BlockStart(1, "text"),
        TextDelta(1, "Hello"),
        BlockStart(2, "tool-call"),
        ToolCallDelta(2, "call-1", '{"text":', name="echo"),
        TextDelta(1, " world"),
        ToolCallDelta(2, "call-1", '"hi"}'),
        UsageChunk(usage),
        Finish(ToolCalls()),
    )
    assert asm.blocks() == [
        ReasoningBlock("thinking…"),
        TextBlock("Hello world"),
        ToolCallBlock("call-1", "echo", '{"text":"hi"}'),
    ]
    assert asm.usage == usage
    assert asm.finish == ToolCalls()
    assert asm.finish.kind == "tool-calls"
    assert asm.message().role == "assistant"


def test_asm_02_start_delta_end_gives_the_block_end_block() -> None:
    end_block = TextBlock("hi")
    asm = assemble(BlockStart(0, "text"), TextDelta(0, "hi"), BlockEnd(0, end_block))
    (block,) = asm.blocks()
    assert block is end_block


def test_asm_03_lone_delta_and_default_stop() -> None:
    asm = assemble(TextDelta(0, "alone"))
    assert asm.blocks() == [TextBlock("alone")]
    assert asm.finish == Stop()
    assert asm.finish.kind == "stop"


def test_asm_04_no_usage_is_none() -> None:
    assert assemble(TextDelta(0, "x"), Finish(Stop())).usage is None


def test_asm_05_one_index_reuses_its_partial() -> None:
    asm = assemble(BlockStart(3, "text"), TextDelta(3, "a"), BlockEnd(3, TextBlock("a")))
    assert asm.blocks() == [TextBlock("a")]


def test_asm_06_open_unknown_type_raises() -> None:
    asm = assemble(BlockStart(0, "video"))
    with pytest.raises(
        ValueError, match='cannot assemble incomplete block of type "video"'
    ) as info:
        asm.blocks()
    assert isinstance(info.value, HarnessError) and info.value.code == ErrorCode.INVALID_CHUNK
    with pytest.raises(ValueError, match="video"):
        asm.message()


def test_asm_07_invariant_violation_raises() -> None:
    asm = assemble(TextDelta(0, "x"))
    asm._order.append(7)  # corrupt the internals on purpose
    with pytest.raises(
        HarnessError, match="BlockAssembler invariant violated: no partial for index 7"
    ) as info:
        asm.blocks()
    assert info.value.code == ErrorCode.INVARIANT


def test_asm_08_duplicate_block_start_is_ignored() -> None:
    asm = assemble(
        BlockStart(0, "text"),
        TextDelta(0, "one"),
        BlockStart(0, "reasoning"),
        TextDelta(0, " two"),
    )
    assert asm.blocks() == [TextBlock("one two")]
    asm.push(BlockEnd(0, TextBlock("one two")))
    assert asm.blocks() == [TextBlock("one two")]


def test_asm_09_late_delta_after_block_end_is_ignored() -> None:
    closed = ToolCallBlock("call-1", "echo", "{}")
    asm = assemble(
        ToolCallDelta(0, "call-1", "{", name="echo"),
        BlockEnd(0, closed),
        ToolCallDelta(0, "call-2", '"late":1}', name="other"),
        TextDelta(0, "late text"),
    )
    (block,) = asm.blocks()
    assert block is closed


def test_asm_10_tool_call_without_id_or_name_uses_fallbacks() -> None:
    asm = assemble(ToolCallDelta(0, None, '{"a":1}'))
    assert asm.blocks() == [ToolCallBlock("call-0", "", '{"a":1}')]


def test_asm_11_usage_is_exposed() -> None:
    usage = TokenUsage(1, 2, cache_read_tokens=3)
    assert assemble(UsageChunk(usage)).usage == usage


def _three_closed_blocks() -> list[object]:
    return [
        BlockEnd(0, TextBlock("t")),
        BlockEnd(1, ToolCallBlock("c", "n", "{}")),
        BlockEnd(2, ReasoningBlock("r")),
    ]


def test_asm_12_max_tokens_drops_tool_calls_and_prunes_replay_entries() -> None:
    env = ReplayEnvelope(RESPONSE, ("meta-0", "meta-1", "meta-2"))
    asm = assemble(*_three_closed_blocks(), Finish(MaxTokens(), env))
    assert asm.blocks() == [TextBlock("t"), ReasoningBlock("r")]
    assert asm.replay_state == ReplayEnvelope(RESPONSE, ("meta-0", "meta-2"))


def test_asm_13_misaligned_replay_entries_are_discarded() -> None:
    env = ReplayEnvelope(RESPONSE, ("only-one",))
    asm = assemble(BlockEnd(0, TextBlock("a")), BlockEnd(1, TextBlock("b")), Finish(Stop(), env))
    assert asm.blocks() == [TextBlock("a"), TextBlock("b")]
    assert asm.replay_state is None


def test_asm_14_aligned_envelope_is_returned_as_is() -> None:
    env = ReplayEnvelope(RESPONSE, ("m0", "m1"))
    asm = assemble(
        BlockEnd(0, TextBlock("a")),
        BlockEnd(1, ToolCallBlock("c", "n", "{}")),
        Finish(ToolCalls(), env),
    )
    assert asm.replay_state is env


def test_asm_15_envelope_without_entries_passes_through_a_drop() -> None:
    env = ReplayEnvelope(RESPONSE)
    asm = assemble(
        BlockEnd(0, TextBlock("a")),
        BlockEnd(1, ToolCallBlock("c", "n", "{}")),
        Finish(MaxTokens(), env),
    )
    assert asm.blocks() == [TextBlock("a")]
    assert asm.replay_state is env


def test_asm_16_max_tokens_without_tool_calls_keeps_the_envelope() -> None:
    env = ReplayEnvelope(RESPONSE, ("m0",))
    asm = assemble(BlockEnd(0, TextBlock("a")), Finish(MaxTokens(), env))
    assert asm.blocks() == [TextBlock("a")]
    assert asm.replay_state is env


def test_asm_17_assert_never_renders_compact_json() -> None:
    with pytest.raises(AssertionError) as info:
        assert_never({"type": "rogue"}, "test-context")
    assert str(info.value) == 'unreachable variant in test-context: {"type":"rogue"}'
    with pytest.raises(AssertionError) as info:
        assert_never(None)
    assert str(info.value) == "unreachable variant: null"
    with pytest.raises(AssertionError) as info:
        assert_never(object, "")
    assert str(info.value).startswith("unreachable variant: <class 'object'>")


def test_asm_18_unknown_chunk_raises() -> None:
    class RogueChunk(msgspec.Struct, tag="rogue-chunk", tag_field="type"):
        index: int

    asm = BlockAssembler()
    with pytest.raises(AssertionError) as info:
        asm.push(RogueChunk(0))  # type: ignore[arg-type]
    assert str(info.value) == (
        'unreachable variant in BlockAssembler.push: {"type":"rogue-chunk","index":0}'
    )
    assert isinstance(info.value, HarnessError) and info.value.code == ErrorCode.INVALID_CHUNK
    with pytest.raises(AssertionError, match=r"unreachable variant in BlockAssembler\.push"):
        asm.push({"type": "rogue-chunk"})  # type: ignore[arg-type]


def test_asm_19_first_block_end_wins() -> None:
    asm = assemble(BlockEnd(0, ReasoningBlock("first")), BlockEnd(0, TextBlock("second")))
    assert asm.blocks() == [ReasoningBlock("first")]


def test_asm_20_interrupted_keeps_closed_reasoning_and_open_text_in_order() -> None:
    asm = assemble(
        BlockStart(0, "reasoning"),
        ReasoningDelta(0, "planning"),
        BlockEnd(0, ReasoningBlock("planning")),
        BlockStart(1, "text"),
        TextDelta(1, "half an ans"),
    )
    assert asm.interrupted_blocks() == [ReasoningBlock("planning"), TextBlock("half an ans")]


def test_asm_21_interrupted_omits_tool_calls() -> None:
    asm = assemble(
        BlockEnd(0, TextBlock("calling")),
        BlockEnd(1, ToolCallBlock("c1", "n", "{}")),
        ToolCallDelta(2, "c2", '{"open":', name="n"),
    )
    assert asm.interrupted_blocks() == [TextBlock("calling")]


def test_asm_22_interrupted_skips_blank_unknown_and_empty() -> None:
    asm = assemble(
        TextDelta(0, "  \n"),
        BlockStart(1, "mystery"),
        BlockStart(2, "reasoning"),
    )
    assert asm.interrupted_blocks() == []


# ---- additional cases from spec/core.md §12 and the rules' edges -----------------------------


def test_asm_05_tool_call_delta_without_id_resets_to_fallback() -> None:
    asm = assemble(ToolCallDelta(4, "call-x", "{", name="n"), ToolCallDelta(4, None, "}"))
    assert asm.blocks() == [ToolCallBlock("call-4", "n", "{}")]


def test_asm_05_empty_name_does_not_overwrite() -> None:
    asm = assemble(ToolCallDelta(0, "c", "", name="first"), ToolCallDelta(0, "c", "", name=""))
    assert asm.blocks() == [ToolCallBlock("c", "first", "")]


def test_asm_04_reasoning_delta_extends_a_text_partial() -> None:
    asm = assemble(BlockStart(0, "text"), TextDelta(0, "a"), ReasoningDelta(0, "b"))
    assert asm.blocks() == [TextBlock("ab")]


def test_asm_04_text_delta_into_tool_call_is_ignored_by_assembly() -> None:
    asm = assemble(BlockStart(0, "tool-call"), TextDelta(0, "noise"), ToolCallDelta(0, "c", "{}"))
    assert asm.blocks() == [ToolCallBlock("c", "", "{}")]


def test_asm_01_first_sight_order_not_numeric() -> None:
    asm = assemble(TextDelta(5, "five"), ReasoningDelta(1, "one"), BlockEnd(3, TextBlock("three")))
    assert asm.blocks() == [TextBlock("five"), ReasoningBlock("one"), TextBlock("three")]


def test_asm_07_stored_block_wins_over_partial_type() -> None:
    asm = assemble(BlockStart(0, "text"), TextDelta(0, "x"), BlockEnd(0, ReasoningBlock("y")))
    assert asm.blocks() == [ReasoningBlock("y")]
    assert asm.interrupted_blocks() == [ReasoningBlock("y")]


def test_asm_08_last_usage_wins() -> None:
    asm = assemble(UsageChunk(TokenUsage(1, 1)), UsageChunk(TokenUsage(2, 2)))
    assert asm.usage == TokenUsage(2, 2)


def test_asm_09_later_finish_without_envelope_clears_it() -> None:
    env = ReplayEnvelope(RESPONSE)
    failure = LlmFailure("boom", "SERVER")
    asm = assemble(TextDelta(0, "x"), Finish(Stop(), env))
    assert asm.replay_state is env
    asm.push(Finish(Error(failure)))
    assert asm.replay_state is None
    assert asm.finish == Error(failure)


def test_asm_12_error_and_aborted_finishes_drop_nothing() -> None:
    failure = LlmFailure("cut", "TIMEOUT")
    asm = assemble(TextDelta(0, "t"), ToolCallDelta(1, "c", "{"), Finish(Error(failure)))
    assert asm.blocks() == [TextBlock("t"), ToolCallBlock("c", "", "{")]


def test_asm_13_replay_state_raises_for_open_unknown_block() -> None:
    asm = assemble(BlockStart(0, "video"), Finish(Stop(), ReplayEnvelope(RESPONSE, ("m",))))
    with pytest.raises(ValueError, match="video"):
        _ = asm.replay_state


def test_asm_13_open_tool_call_pruned_with_its_entry() -> None:
    env = ReplayEnvelope(RESPONSE, ("m-text", "m-tool"))
    asm = assemble(TextDelta(0, "t"), ToolCallDelta(1, "c", '{"cut'), Finish(MaxTokens(), env))
    assert asm.blocks() == [TextBlock("t")]
    pruned = asm.replay_state
    assert pruned == ReplayEnvelope(RESPONSE, ("m-text",))
    assert pruned is not env


def test_asm_15_interrupted_uses_js_whitespace() -> None:
    # U+0085 and U+001F are not JS whitespace: such text survives; U+3000/U+FEFF are.
    asm = assemble(TextDelta(0, "\u0085"), TextDelta(1, "\u3000\ufeff\u00a0"), TextDelta(2, "\x1f"))
    assert asm.interrupted_blocks() == [TextBlock("\u0085"), TextBlock("\x1f")]


def test_asm_17_message_wraps_blocks_with_default_or_given_source() -> None:
    asm = assemble(TextDelta(0, "hi"), ToolCallDelta(1, "c", "{}"))
    msg = asm.message()
    assert isinstance(msg, Message)
    assert msg.content == tuple(asm.blocks())
    assert msg.source == PluginSource("modelwire/assembler")
    assert msg.id and msg.id != asm.message().id
    source = ModelSource("deepseek", "deepseek-chat")
    assert asm.message(source).source is source


def test_asm_18_blocks_is_idempotent_and_cached_join_stays_correct() -> None:
    asm = assemble(TextDelta(0, "a"), TextDelta(0, "b"))
    first = asm.blocks()
    assert asm.blocks() == first
    assert asm.blocks()[0] is first[0]  # unchanged partial: the assembled block is reused
    asm.push(TextDelta(0, "c"))
    assert asm.blocks() == [TextBlock("abc")]
    first.clear()  # the caller owns the returned list
    assert asm.blocks() == [TextBlock("abc")]


def test_asm_10_open_blocks_assemble_after_many_deltas() -> None:
    pieces = [f"{i}," for i in range(2000)]
    asm = BlockAssembler()
    for i, piece in enumerate(pieces):
        asm.push(ToolCallDelta(0, "c", piece, name="bulk" if i == 0 else None))
        if i % 500 == 0:
            asm.blocks()  # interleaved reads must not lose or duplicate fragments
    assert asm.blocks() == [ToolCallBlock("c", "bulk", "".join(pieces))]
