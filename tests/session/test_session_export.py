"""Session export/import as JSONL: round trips on every backend and every bad-file case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from session_helpers import Store

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import (
    AssistantChunk,
    AssistantMessage,
    LlmRetry,
    RequestContext,
    StepEnd,
    StepStart,
    TurnCompleted,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from modelwire.session.export import (
    EXPORT_FORMAT,
    export_session,
    import_session,
    load_session_file,
)
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    LlmFailure,
    ModelSource,
    Stop,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
    assistant_message,
    user_message,
)

FAILURE = LlmFailure("overloaded", "SERVER", status=503)
RECORDED = [
    TurnStart(1),
    StepStart(1, 1),
    UserMessage(user_message("héllo \u2028 \x00 world")),
    RequestContext("deepseek", "deepseek-chat", 65536),
    AssistantChunk(1, 1, 1, Finish(Error(FAILURE))),
    LlmRetry(
        retry_id="r1",
        turn=1,
        step=1,
        provider="deepseek",
        policy_key="k",
        mode="normal",
        failure=FAILURE,
        retry=1,
        max_retries=2,
        delay_ms=500.0,
    ),
    AssistantChunk(1, 1, 2, BlockStart(0, "text")),
    AssistantChunk(1, 1, 2, TextDelta(0, "hi")),
    AssistantChunk(1, 1, 2, BlockEnd(0, TextBlock("hi"))),
    AssistantChunk(1, 1, 2, UsageChunk(TokenUsage(10, 2))),
    AssistantChunk(1, 1, 2, Finish(Stop())),
    AssistantMessage(
        turn=1,
        step=1,
        attempt=2,
        message=assistant_message([TextBlock("hi")], ModelSource("deepseek", "deepseek-chat")),
        usage=TokenUsage(10, 2),
        source_event_seqs=(6, 7, 8, 9, 10),
    ),
    StepEnd(1, 1),
    TurnEnd(1, TurnCompleted()),
]


def write_lines(path: Path, lines: list[str], *, final_newline: bool = True) -> Path:
    path.write_text("\n".join(lines) + ("\n" if final_newline else ""), encoding="utf-8")
    return path


def event_line(seq: int, type: str, data: object, time: int = 1000) -> str:
    return json.dumps({"seq": seq, "type": type, "time": time, "data": data})


GOOD = [
    event_line(0, "turn/start", {"turn": 1}),
    event_line(1, "step/start", {"turn": 1, "step": 1}),
    event_line(2, "step/end", {"turn": 1, "step": 1}),
]


async def test_export_then_import_round_trips_events_seqs_and_times(
    store: Store, tmp_path: Path
) -> None:
    log = await store.open()
    await log.append_many("recorded", RECORDED[:4], barrier=True)
    for data in RECORDED[4:]:
        await log.append("recorded", data)
    original = await log.read("recorded")
    path = tmp_path / "session.jsonl"
    assert await export_session(log, "recorded", path) == len(RECORDED)

    loaded = load_session_file(path)
    assert loaded.header is not None and loaded.header.session_id == "recorded"
    assert loaded.header.format == EXPORT_FORMAT and loaded.header.events == len(RECORDED)
    assert list(loaded.events) == original

    assert await import_session(log, path, session_id="copy") == "copy"
    assert await log.read("copy") == original
    with pytest.raises(HarnessError) as info:
        await import_session(log, path)  # into "recorded", which exists
    assert info.value.code == ErrorCode.INVALID_ARGS
    assert "recorded" in info.value.message
    assert await log.read("recorded") == original


async def test_export_of_unknown_session_is_session_not_found(store: Store, tmp_path: Path) -> None:
    log = await store.open()
    with pytest.raises(HarnessError) as info:
        await export_session(log, "ghost", tmp_path / "x.jsonl")
    assert info.value.code == ErrorCode.SESSION_NOT_FOUND
    assert not (tmp_path / "x.jsonl").exists()


def test_file_without_header_loads_and_needs_a_session_id(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "plain.jsonl", ["", *GOOD, "  "])
    loaded = load_session_file(path)
    assert loaded.header is None
    assert [e.seq for e in loaded.events] == [0, 1, 2]
    assert loaded.events[1].data == StepStart(1, 1)


async def test_import_without_any_session_id_is_invalid_args(store: Store, tmp_path: Path) -> None:
    log = await store.open()
    path = write_lines(tmp_path / "plain.jsonl", GOOD)
    with pytest.raises(HarnessError) as info:
        await import_session(log, path)
    assert info.value.code == ErrorCode.INVALID_ARGS
    assert await import_session(log, path, session_id="named") == "named"
    assert [e.time for e in await log.read("named")] == [1000, 1000, 1000]


HEADER = json.dumps(
    {"format": EXPORT_FORMAT, "version": 1, "session_id": "s", "created_at": 1000, "events": 3}
)

BAD_FILES = {
    "missing-seq": ([GOOD[0], GOOD[2]], True, 2, "missing seq 1"),
    "repeated-seq": ([GOOD[0], GOOD[1], GOOD[1]], True, 3, "repeats or goes backwards"),
    "not-from-zero": ([GOOD[1], GOOD[2]], True, 1, "missing seq 0"),
    "unknown-type": ([GOOD[0], event_line(1, "nobody/knows", {})], True, 2, "'nobody/knows'"),
    "payload-mismatch": ([GOOD[0], event_line(1, "step/start", {"turn": "x"})], True, 2, "step"),
    "truncated-last-line": ([GOOD[0], GOOD[1], GOOD[2][:25]], False, 3, "truncated last line"),
    "malformed-middle-line": ([GOOD[0], "{not json", GOOD[2]], True, 2, "malformed event line"),
    "missing-field": ([GOOD[0], json.dumps({"seq": 1, "type": "turn/start"})], True, 2, "time"),
    "header-count-mismatch": ([HEADER, GOOD[0], GOOD[1]], True, 3, "records 3 event(s)"),
    "unsupported-version": ([HEADER.replace('"version": 1', '"version": 7'), *GOOD], True, 1, "7"),
    "truncated-header": ([HEADER[:30]], False, 1, "truncated last line"),
}


@pytest.mark.parametrize(
    ("lines", "newline", "line", "detail"), list(BAD_FILES.values()), ids=list(BAD_FILES)
)
def test_bad_file_is_invalid_replay_file_naming_file_and_line(
    tmp_path: Path, lines: list[str], newline: bool, line: int, detail: str
) -> None:
    path = write_lines(tmp_path / "bad.jsonl", lines, final_newline=newline)
    with pytest.raises(HarnessError) as info:
        load_session_file(path)
    assert info.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert f"{path}: line {line}:" in info.value.message, info.value.message
    assert detail in info.value.message


@pytest.mark.parametrize("content", ["", "\n\n  \n"], ids=["empty", "blank-lines"])
def test_file_without_events_is_invalid_replay_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    with pytest.raises(HarnessError) as info:
        load_session_file(path)
    assert info.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert str(path) in info.value.message and "no events" in info.value.message


def test_missing_file_is_invalid_replay_file(tmp_path: Path) -> None:
    with pytest.raises(HarnessError) as info:
        load_session_file(tmp_path / "absent.jsonl")
    assert info.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert "absent.jsonl" in info.value.message


async def test_import_of_a_bad_file_stores_nothing(store: Store, tmp_path: Path) -> None:
    log = await store.open()
    path = write_lines(tmp_path / "bad.jsonl", [GOOD[0], GOOD[2]])
    with pytest.raises(HarnessError) as info:
        await import_session(log, path, session_id="s")
    assert info.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert not await log.exists("s")
