"""G.12 cases 1–19: reading exports (D.1) and deriving the call script (D.2)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from replay_helpers import (
    as_events,
    chunk_events,
    error_chunks,
    header,
    record,
    text_chunks,
    turn,
)

from modelwire.adapters.replay import ChunksEntry, ReplayAdapter, derive_replay_script
from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import StepStart, TurnStart, UserMessage
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    ContentBlock,
    Finish,
    Stop,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
    user_message,
)


class Summary(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """A `compaction/summary` payload as a compaction plugin would log it."""

    compaction_id: str = "c1"
    summary: str = "short"
    raw_output: tuple[ContentBlock, ...] | None = None
    llm_stream_call: bool | None = None
    usage: TokenUsage | None = None


def _entries(events: list) -> list[object]:  # type: ignore[type-arg]
    return [call.entry for call in derive_replay_script(events)]


def _summary_events(*summaries: Summary, around: bool = True) -> list:  # type: ignore[type-arg]
    datas: list[msgspec.Struct] = []
    types: list[str] = []
    if around:
        datas += chunk_events(text_chunks("before"))
        types += ["assistant/chunk"] * 5
    for s in summaries:
        datas.append(s)
        types.append("compaction/summary")
    if around:
        datas += chunk_events(text_chunks("after"), step=2)
        types += ["assistant/chunk"] * 5
    return as_events(datas, types=types)


# ---- reading exports (D.1) -------------------------------------------------------------------


async def test_replay_01_export_header_line_is_skipped_and_events_derived(tmp_path: Path) -> None:
    path = await record(turn("hi", [text_chunks("hello")]), tmp_path / "a.jsonl")
    with_header = ReplayAdapter.from_file(path).scripts[0]
    headerless = tmp_path / "b.jsonl"
    headerless.write_text("".join(path.read_text().splitlines(keepends=True)[1:]))
    without = ReplayAdapter.from_file(headerless).scripts[0]
    assert with_header.session_id == "rec"
    assert [c.entry for c in with_header.calls] == [ChunksEntry(tuple(text_chunks("hello")))]
    assert [c.entry for c in without.calls] == [c.entry for c in with_header.calls]


async def test_replay_02_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = await record(turn("hi", [text_chunks("hello")]), tmp_path / "a.jsonl")
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_text("\n\n".join(path.read_text().splitlines()) + "\n\n")
    assert [c.entry for c in ReplayAdapter.from_file(spaced).scripts[0].calls] == [
        c.entry for c in ReplayAdapter.from_file(path).scripts[0].calls
    ]


async def test_replay_03_malformed_event_line_fails_at_load_naming_file_and_line(
    tmp_path: Path,
) -> None:
    # Upstream expands packed chunk rows here; our export stores one event per line, so the
    # ported intent is that a malformed row is refused at load with its file and line.
    path = await record(turn("hi", [text_chunks("hello")]), tmp_path / "a.jsonl")
    lines = path.read_text().splitlines()
    lines[6] = lines[6].replace('"chunk":{', '"chunk":{"index":"zero",', 1)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_file(path)
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert f"{path}: line 7" in caught.value.message


# ---- deriving the script (D.2) ---------------------------------------------------------------


def test_replay_04_one_finished_stream_is_one_entry() -> None:
    events = as_events(chunk_events(text_chunks("a")))
    assert _entries(events) == [ChunksEntry(tuple(text_chunks("a")))]


def test_replay_05_failed_attempt_and_its_retry_in_one_step_are_two_entries() -> None:
    datas = chunk_events(error_chunks()) + chunk_events(text_chunks("ok"), attempt=2)
    calls = derive_replay_script(as_events(datas))
    assert [c.entry for c in calls] == [
        ChunksEntry(tuple(error_chunks())),
        ChunksEntry(tuple(text_chunks("ok"))),
    ]
    assert [c.label for c in calls] == ["turn 1 step 1 attempt 1", "turn 1 step 1 attempt 2"]


def test_replay_06_two_steps_are_two_entries_in_order() -> None:
    datas = chunk_events(text_chunks("one")) + chunk_events(text_chunks("two"), step=2)
    assert _entries(as_events(datas)) == [
        ChunksEntry(tuple(text_chunks("one"))),
        ChunksEntry(tuple(text_chunks("two"))),
    ]


def test_replay_07_two_turns_are_two_entries() -> None:
    datas = turn("a", [text_chunks("one")]) + turn("b", [text_chunks("two")], number=2)
    assert _entries(as_events(datas)) == [
        ChunksEntry(tuple(text_chunks("one"))),
        ChunksEntry(tuple(text_chunks("two"))),
    ]


def test_replay_08_non_chunk_events_are_ignored() -> None:
    datas = [
        TurnStart(1),
        StepStart(1, 1),
        UserMessage(user_message("x")),
        header(),
        *chunk_events(text_chunks("a")),
    ]
    assert _entries(as_events(datas)) == [ChunksEntry(tuple(text_chunks("a")))]


def test_replay_09_no_chunks_is_an_empty_script() -> None:
    assert _entries(as_events([TurnStart(1), StepStart(1, 1)])) == []


def test_replay_10_an_error_finish_stays_inside_its_entry() -> None:
    chunks = [BlockStart(0, "text"), TextDelta(0, "par"), *error_chunks("SERVER", "boom")]
    assert _entries(as_events(chunk_events(chunks))) == [ChunksEntry(tuple(chunks))]


def test_replay_11_marked_summary_is_a_synthetic_stream_between_calls() -> None:
    blocks = (TextBlock("sum"), TextBlock("mary"))
    usage = TokenUsage(input_tokens=9, output_tokens=2)
    events = _summary_events(Summary(raw_output=blocks, llm_stream_call=True, usage=usage))
    entries = _entries(events)
    assert len(entries) == 3
    assert entries[1] == ChunksEntry(
        (
            BlockStart(0, "text"),
            BlockEnd(0, blocks[0]),
            BlockStart(1, "text"),
            BlockEnd(1, blocks[1]),
            UsageChunk(usage),
            Finish(Stop()),
        )
    )


def test_replay_12_unmarked_summary_without_raw_output_yields_nothing() -> None:
    assert len(_entries(_summary_events(Summary()))) == 2


def test_replay_13_unmarked_summary_with_raw_output_yields_nothing() -> None:
    assert len(_entries(_summary_events(Summary(raw_output=(TextBlock("x"),))))) == 2


def test_replay_14_marked_summary_without_raw_output_raises() -> None:
    with pytest.raises(HarnessError) as caught:
        _entries(_summary_events(Summary(llm_stream_call=True)))
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert "without raw_output" in caught.value.message


def test_replay_15_marked_summary_without_usage_yields_blocks_and_stop_only() -> None:
    events = _summary_events(
        Summary(raw_output=(TextBlock("s"),), llm_stream_call=True), around=False
    )
    assert _entries(events) == [
        ChunksEntry((BlockStart(0, "text"), BlockEnd(0, TextBlock("s")), Finish(Stop())))
    ]


def test_replay_16_chunk_group_without_finish_raises_pointing_to_the_sidecar() -> None:
    events = as_events(chunk_events(text_chunks("a")[:-1]))
    with pytest.raises(HarnessError) as caught:
        derive_replay_script(events, source="rec.jsonl")
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert "ended without a finish chunk" in caught.value.message
    assert "sidecar override (<export>.override.json)" in caught.value.message


def test_replay_17_the_error_names_turn_and_step() -> None:
    events = as_events(chunk_events(text_chunks("a")[:2], turn=2, step=3))
    with pytest.raises(HarnessError, match=r"model call 2/3 \(attempt 1\)"):
        derive_replay_script(events)


def test_replay_18_unfinished_call_followed_by_another_steps_chunk_raises_for_1_1() -> None:
    datas = chunk_events(text_chunks("a")[:2]) + chunk_events(text_chunks("b"), step=2)
    with pytest.raises(HarnessError) as caught:
        derive_replay_script(as_events(datas), source="x.jsonl", lines=range(10, 20))
    assert "model call 1/1 (attempt 1)" in caught.value.message
    assert "x.jsonl: line 12 (seq 2)" in caught.value.message


def test_replay_19_unfinished_call_followed_by_a_compaction_summary_raises_for_1_1() -> None:
    datas: list[msgspec.Struct] = [*chunk_events(text_chunks("a")[:2]), Summary()]
    events = as_events(datas, types=["assistant/chunk", "assistant/chunk", "compaction/summary"])
    with pytest.raises(HarnessError, match="model call 1/1"):
        derive_replay_script(events)
