"""Property tests of BlockAssembler (spec/core.md §11.2 PROP-01..04, R-ASM-17/18/19) plus splits."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwire import (
    BlockAssembler,
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    LlmFailure,
    MaxTokens,
    ReasoningBlock,
    ReasoningDelta,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolCalls,
    UsageChunk,
)
from modelwire.vocab import BLOCK_TYPES

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

indexes = st.integers(min_value=0, max_value=4)
texts = st.text(max_size=12)
ids = st.text(min_size=1, max_size=6)
finishes = st.one_of(
    st.just(Stop()),
    st.just(ToolCalls()),
    st.just(MaxTokens()),
    st.builds(Error, st.builds(LlmFailure, st.text(min_size=1, max_size=8), st.just("UNKNOWN"))),
)
blocks = st.one_of(
    st.builds(TextBlock, texts),
    st.builds(ReasoningBlock, texts),
    st.builds(ToolCallBlock, ids, st.text(max_size=6), texts),
)
chunk = st.one_of(
    st.builds(BlockStart, indexes, st.sampled_from(["text", "reasoning", "tool-call"])),
    st.builds(TextDelta, indexes, texts),
    st.builds(ReasoningDelta, indexes, texts),
    st.builds(
        ToolCallDelta,
        indexes,
        ids,
        texts,
        name=st.one_of(st.none(), st.text(max_size=5)),
    ),
    st.builds(BlockEnd, indexes, blocks),
    st.just(UsageChunk(TokenUsage(3, 4))),
    st.builds(Finish, finishes),
)
chunk_lists = st.lists(chunk, max_size=30)


def run(chunks: list[StreamChunk]) -> BlockAssembler:
    asm = BlockAssembler()
    for c in chunks:
        asm.push(c)
    return asm


def mentioned_indexes(chunks: list[StreamChunk]) -> set[int]:
    return {c.index for c in chunks if not isinstance(c, (UsageChunk, Finish))}


@SETTINGS
@given(chunk_lists)
def test_prop_01_block_count_bounded_by_distinct_indexes(chunks: list[StreamChunk]) -> None:
    assert len(run(chunks).blocks()) <= len(mentioned_indexes(chunks))


@SETTINGS
@given(chunk_lists)
def test_prop_02_blocks_idempotent_and_message_matches(chunks: list[StreamChunk]) -> None:
    asm = run(chunks)
    first = asm.blocks()
    assert asm.blocks() == first
    assert list(asm.message().content) == first
    assert asm.replay_state is None


@SETTINGS
@given(chunk_lists)
def test_prop_03_blocks_never_raise_and_types_are_known(chunks: list[StreamChunk]) -> None:
    asm = run(chunks)
    for block in asm.blocks():
        assert block.type in BLOCK_TYPES
    for block in asm.interrupted_blocks():
        assert block.type in {"text", "reasoning"}


@SETTINGS
@given(chunk_lists)
def test_prop_04_finish_is_last_finish_or_stop(chunks: list[StreamChunk]) -> None:
    finishes_seen = [c.reason for c in chunks if isinstance(c, Finish)]
    assert run(chunks).finish == (finishes_seen[-1] if finishes_seen else Stop())


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def split_sequences(draw: st.DrawFn) -> tuple[list[StreamChunk], list[StreamChunk]]:
    """A chunk sequence and the same sequence with every delta cut into several deltas."""
    original = draw(chunk_lists)
    split: list[StreamChunk] = []
    for c in original:
        cuts = draw(st.lists(st.integers(min_value=0, max_value=12), max_size=4))
        if isinstance(c, (TextDelta, ReasoningDelta)):
            split.extend(type(c)(c.index, piece) for piece in _split(c.text, cuts))
        elif isinstance(c, ToolCallDelta):
            pieces = _split(c.arguments_delta, cuts)
            split.extend(
                ToolCallDelta(c.index, c.id, piece, name=c.name if i == 0 else None)
                for i, piece in enumerate(pieces)
            )
        else:
            split.append(c)
    return original, split


@SETTINGS
@given(split_sequences())
def test_prop_05_any_split_of_the_deltas_assembles_to_the_same_blocks(
    pair: tuple[list[StreamChunk], list[StreamChunk]],
) -> None:
    original, split = pair
    a, b = run(original), run(split)
    assert a.blocks() == b.blocks()
    assert a.interrupted_blocks() == b.interrupted_blocks()
    assert a.finish == b.finish
    assert a.usage == b.usage
