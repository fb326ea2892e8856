"""Hypothesis fuzzing of the parsers: the SSE framer, the four stream translators, the assembler.

- `SseDecoder` (stateful): any bytes in any re-chunking produce exactly the events of the
  whole body fed at once; nothing but a classified `LlmError` may ever escape.
- Each translator (DeepSeek, Chat Completions, Responses, Anthropic Messages) over bodies built
  from valid events, mutated events, random JSON and raw garbage, split at arbitrary points:
  it either fails with a classified `LlmError`, or ends with exactly one `finish` as the last
  chunk; the chunk stream folds into a `BlockAssembler` without error. Every example finishes
  (a loop would hang the run).
- `BlockAssembler`: arbitrary chunk sequences never raise, except `blocks()` on an open block of
  an unknown type (the documented case).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from reliability_counts import bump
from reliability_wire import ADAPTERS, good_events, text_events

from modelwire.adapters.deepseek.translate import Translator as DeepSeekTranslator
from modelwire.adapters.providers.protocols import ResponseRecord, make_translator
from modelwire.assembler import BlockAssembler
from modelwire.errors import InvalidChunkError, LlmError
from modelwire.vocab import (
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
from modelwire.wire.pump import translate_reads
from modelwire.wire.sse import SseDecoder, SseEvent

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CLASSIFIED = frozenset(
    {"MALFORMED_RESPONSE", "STREAM_CLOSED", "EMPTY_RESPONSE", "SERVER", "RATE_LIMIT", "TRANSPORT"}
)

# ---- the SSE framer -------------------------------------------------------------------------

_TOKENS = [
    b"data:",
    b"data: ",
    b"event: ",
    b"id: ",
    b"retry: 5",
    b":",
    b": ping",
    b"\n",
    b"\n\n",
    b"\r",
    b"\r\n",
    b"\xef\xbb\xbf",
    b"\xe2\x82",
    b"\xac",
    b"\xf0\x9f\x98",
    b"\x80",
    b"\x00",
    b"[DONE]",
    b'{"choices":[{"delta":{"content":"x"}}]}',
    b"x",
    b" ",
]
sse_bytes = st.lists(st.sampled_from(_TOKENS) | st.binary(max_size=6), max_size=60).map(b"".join)


def _decode_all(body: bytes, cuts: list[int]) -> list[SseEvent]:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    start = 0
    for cut in sorted({c % (len(body) + 1) for c in cuts}):
        events.extend(decoder.feed(body[start:cut]))
        start = cut
    events.extend(decoder.feed(body[start:]))
    events.extend(decoder.close())
    return events


@FUZZ
@given(body=sse_bytes, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_fuzz_sse_rechunking_never_changes_the_events(body: bytes, cuts: list[int]) -> None:
    whole = _decode_all(body, [])
    assert _decode_all(body, cuts) == whole
    for event in whole:
        assert isinstance(event.data, str)
    bump("fuzz examples")


class SseMachine(RuleBasedStateMachine):
    """Feeds random reads into one decoder; a shadow decoder gets the same bytes byte by byte."""

    def __init__(self) -> None:
        super().__init__()
        self.decoder = SseDecoder()
        self.shadow = SseDecoder()
        self.events: list[SseEvent] = []
        self.shadow_events: list[SseEvent] = []

    @rule(data=sse_bytes)
    def feed(self, data: bytes) -> None:
        self.events.extend(self.decoder.feed(data))
        for i in range(len(data)):
            self.shadow_events.extend(self.shadow.feed(data[i : i + 1]))
        bump("fuzz examples")

    @rule()
    def close_and_reopen(self) -> None:
        self.events.extend(self.decoder.close())
        self.shadow_events.extend(self.shadow.close())
        self.decoder = SseDecoder()
        self.shadow = SseDecoder()

    @invariant()
    def same_events_either_way(self) -> None:
        assert self.events == self.shadow_events


TestSseDecoderStateful = SseMachine.TestCase
TestSseDecoderStateful.settings = settings(max_examples=60, stateful_step_count=20, deadline=None)

# ---- the translators --------------------------------------------------------------------------

_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**12),
    st.floats(allow_nan=False),
    st.text(max_size=8),
)
_json = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _payloads(kind: str) -> list[str]:
    """The data strings of a valid answer with reasoning-free text and a tool-like second part."""
    out = []
    for raw in [*good_events(kind), *text_events(kind, ["more", "text"])]:
        for line in raw.decode().split("\n"):
            if line.startswith("data: "):
                out.append(line[6:])
    return out


def _mutate(payload: str, value: object, pick: int) -> str:
    try:
        doc = json.loads(payload)
    except ValueError:
        return payload
    if isinstance(doc, dict) and doc:
        keys = sorted(doc)
        doc[keys[pick % len(keys)]] = value
    return json.dumps(doc)


def payload_lists(kind: str) -> st.SearchStrategy[list[str]]:
    valid = _payloads(kind)
    one = st.one_of(
        st.sampled_from(valid),
        st.builds(_mutate, st.sampled_from(valid), _json, st.integers(0, 20)),
        _json.map(json.dumps),
        st.text(max_size=20),
        st.just("[DONE]"),
    )
    return st.lists(one, max_size=25)


def _frame(payloads: list[str], names: list[str | None]) -> bytes:
    parts = []
    for i, data in enumerate(payloads):
        name = names[i % len(names)] if names else None
        head = f"event: {name}\n" if name else ""
        body = "\n".join(f"data: {line}" for line in data.split("\n"))
        parts.append(f"{head}{body}\n\n")
    return "".join(parts).encode()


def _check_chunks(chunks: list[StreamChunk]) -> None:
    finishes = [i for i, c in enumerate(chunks) if isinstance(c, Finish)]
    assert len(finishes) == 1 and finishes[0] == len(chunks) - 1, chunks[-3:]
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    asm.blocks()
    asm.replay_state  # noqa: B018 (the pruning decision must not raise either)


def _reads(body: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges)]


def run_deepseek(body: bytes, cuts: list[int]) -> list[StreamChunk]:
    """The DeepSeek adapter's pump, without HTTP: framer, translator, end-of-stream rule."""
    out: list[StreamChunk] = []
    translate_reads(_reads(body, cuts), DeepSeekTranslator(), out)
    return out


def run_provider(kind: str, body: bytes, cuts: list[int]) -> list[StreamChunk]:
    """The providers adapter's pump for protocol `kind`, without HTTP."""
    record = ResponseRecord(api=kind, provider=kind, model="m", context_window=1000)
    out: list[StreamChunk] = []
    translate_reads(_reads(body, cuts), make_translator(kind, record), out)
    return out


def _fuzz_translator(kind: str) -> Callable[..., None]:
    names = ["message_start", "content_block_delta", "error", "ping"]

    @FUZZ
    @given(
        payloads=payload_lists(kind),
        tail=st.binary(max_size=30),
        cuts=st.lists(st.integers(0, 100_000), max_size=10),
        named=st.booleans(),
    )
    def check(payloads: list[str], tail: bytes, cuts: list[int], named: bool) -> None:
        body = _frame(payloads, names if named and kind == "anthropic-messages" else []) + tail
        try:
            if kind == "deepseek":
                chunks = run_deepseek(body, cuts)
            else:
                chunks = run_provider(kind, body, cuts)
        except LlmError as exc:
            assert exc.code in CLASSIFIED, exc
        else:
            _check_chunks(chunks)
            reason = chunks[-1].reason  # type: ignore[union-attr]
            if isinstance(reason, Error):
                assert reason.failure.code, reason
        bump("fuzz examples")

    return check


@pytest.mark.parametrize("kind", ADAPTERS)
def test_fuzz_translator_fails_only_with_classified_errors(kind: str) -> None:
    _fuzz_translator(kind)()


# ---- the assembler ----------------------------------------------------------------------------

indexes = st.integers(min_value=0, max_value=4)
texts = st.text(max_size=10)
known_types = st.sampled_from(["text", "reasoning", "tool-call"])
any_types = st.one_of(known_types, st.sampled_from(["image", "tool-result", "mystery"]))
blocks = st.one_of(
    st.builds(TextBlock, texts),
    st.builds(ReasoningBlock, texts),
    st.builds(ToolCallBlock, texts, texts, texts),
)
chunks = st.one_of(
    st.builds(BlockStart, indexes, any_types),
    st.builds(TextDelta, indexes, texts),
    st.builds(ReasoningDelta, indexes, texts),
    st.builds(ToolCallDelta, indexes, texts, texts, name=st.one_of(st.none(), texts)),
    st.builds(BlockEnd, indexes, blocks),
    st.builds(UsageChunk, st.builds(TokenUsage, st.integers(0, 9), st.integers(0, 9))),
    st.sampled_from(
        [
            Finish(Stop()),
            Finish(ToolCalls()),
            Finish(MaxTokens()),
            Finish(Error(LlmFailure("x", "SERVER"))),
        ]
    ),
)


@FUZZ
@given(sequence=st.lists(chunks, max_size=40))
def test_fuzz_assembler_raises_only_for_an_open_unknown_block_type(
    sequence: list[StreamChunk],
) -> None:
    asm = BlockAssembler()
    for chunk in sequence:
        asm.push(chunk)  # never raises for one of the seven chunk types
    closed = {c.index for c in sequence if isinstance(c, BlockEnd)}
    first_type: dict[int, str] = {}
    for c in sequence:
        if isinstance(c, BlockStart):
            first_type.setdefault(c.index, c.block_type)
        elif isinstance(c, BlockEnd):
            first_type.setdefault(c.index, c.block.type)
        elif isinstance(c, TextDelta | ReasoningDelta | ToolCallDelta):
            first_type.setdefault(c.index, "known")
    unknown_open = [
        i
        for i, t in first_type.items()
        if t in ("image", "tool-result", "mystery") and i not in closed
    ]
    if unknown_open:
        with pytest.raises(
            InvalidChunkError, match="cannot assemble incomplete block of type"
        ) as exc:
            asm.blocks()
        assert exc.value.code == "INVALID_CHUNK"
    else:
        out = asm.blocks()
        if isinstance(asm.finish, MaxTokens):
            assert not any(isinstance(b, ToolCallBlock) for b in out)
        else:
            assert len(out) == len(first_type)
        asm.message()
    asm.interrupted_blocks()  # never raises: unknown open blocks are skipped
    bump("fuzz examples")
