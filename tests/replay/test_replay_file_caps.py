"""Bounded replay-file parsing: line, file and nesting caps; every failure is INVALID_REPLAY_FILE.

The caps are parameters of `load_session_file`, so the memory-bound cases run with small caps
instead of allocating the real limits.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from replay_helpers import chunk_json, record, text_chunks, turn

from modelwire.adapters.replay import ReplayAdapter
from modelwire.adapters.replay import override as override_module
from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import UserMessage
from modelwire.session.export import (
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    MAX_NESTING_DEPTH,
    load_session_file,
)
from modelwire.vocab import TextBlock
from modelwire.vocab.json import json_nesting_exceeds

DEEP = b"[" * 200_000


def _refused(path: Path, *needles: str, **caps: int) -> HarnessError:
    with pytest.raises(HarnessError) as caught:
        load_session_file(path, **caps)
    error = caught.value
    assert error.code == ErrorCode.INVALID_REPLAY_FILE
    assert str(path) in error.message
    for needle in needles:
        assert needle in error.message, (needle, error.message)
    assert len(error.message) < 1000  # names the place, never dumps the content
    return error


async def _recorded(tmp_path: Path) -> Path:
    return await record(turn("hi", [text_chunks("ok")]), tmp_path / "rec.jsonl")


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def test_the_caps_are_generous() -> None:
    assert MAX_LINE_BYTES >= 64 * 1024 * 1024
    assert MAX_FILE_BYTES >= 1024 * 1024 * 1024
    assert 64 <= MAX_NESTING_DEPTH < 500  # well inside the JSON decoder's recursion limit


# ---- nesting ---------------------------------------------------------------------------------


def test_replay_file_with_deep_nesting_is_invalid_replay_file(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(DEEP + b"\n")
    error = _refused(path, "line 1", "deeper than")
    assert "[[[" not in error.message


async def test_replay_file_with_deep_nesting_inside_an_event_names_its_line(
    tmp_path: Path,
) -> None:
    path = await _recorded(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"seq":1,"type":"step/start","time":1,"data":' + DEEP + b"}\n"
    path.write_bytes(b"".join(lines))
    _refused(path, "line 3", "deeper than")


def test_replay_file_too_deep_for_the_decoder_is_still_invalid_replay_file(
    tmp_path: Path,
) -> None:
    # With the nesting check effectively off, the decoder's RecursionError is the backstop.
    path = tmp_path / "deep.jsonl"
    path.write_bytes(DEEP + b"\n")
    _refused(path, "line 1", max_depth=10**9)


async def test_replay_file_nesting_is_checked_against_the_depth_cap(tmp_path: Path) -> None:
    path = await _recorded(tmp_path)
    lines = path.read_bytes().splitlines()
    depths = [_depth(json.loads(line)) for line in lines]
    deepest = max(depths)
    assert len(load_session_file(path, max_depth=deepest).events) == len(lines) - 1
    _refused(path, f"line {depths.index(deepest) + 1}", max_depth=deepest - 1)


async def test_brackets_inside_recorded_text_do_not_count_as_nesting(tmp_path: Path) -> None:
    text = "[{" * 5_000 + '\\"[' * 1_000
    path = await record(turn(text, [text_chunks("]]")]), tmp_path / "brackets.jsonl")
    raw = path.read_bytes()
    assert raw.count(b"[") + raw.count(b"{") > MAX_NESTING_DEPTH  # the slow scan runs
    loaded = load_session_file(path)
    said = [e.data.message for e in loaded.events if isinstance(e.data, UserMessage)]
    assert [m.content for m in said] == [(TextBlock(text),)]


def test_json_nesting_scan_matches_the_real_depth() -> None:
    samples = [
        b"[]",
        b'{"a":[1,{"b":[]}]}',
        b'"[[[["',
        b'{"a":"\\"[[[","b":[[]]}',
        b'[["\\\\"],[[["x"]]]]',
        b"[" * 10 + b"]" * 10,
    ]
    for sample in samples:
        depth = _depth(json.loads(sample))
        for limit in range(8):
            assert json_nesting_exceeds(sample, limit) is (depth > limit), (sample, limit)
    # an unterminated string full of brackets (a truncated line) stays a linear scan
    assert not json_nesting_exceeds(b'["' + b"[" * 1000, 5)


# ---- sizes -----------------------------------------------------------------------------------


async def test_replay_file_line_over_the_line_cap_is_invalid_replay_file(tmp_path: Path) -> None:
    path = await _recorded(tmp_path)
    longest = max(len(line) for line in path.read_bytes().splitlines())
    assert load_session_file(path, max_line_bytes=longest).events  # a line at the cap is fine
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"seq":1,"type":"step/start","time":1,"data":"' + b"x" * 5_000 + b'"}\n'
    path.write_bytes(b"".join(lines))
    error = _refused(path, "line 3", "longer than the 1024-byte limit", max_line_bytes=1024)
    assert "xxxx" not in error.message


def test_unterminated_line_over_the_line_cap_is_invalid_replay_file(tmp_path: Path) -> None:
    path = tmp_path / "one-long-line.jsonl"
    path.write_bytes(b"x" * 10_000)  # no newline anywhere: never read whole
    _refused(path, "line 1", "1000-byte limit", max_line_bytes=1000)


async def test_replay_file_over_the_file_cap_is_invalid_replay_file(tmp_path: Path) -> None:
    path = await _recorded(tmp_path)
    size = path.stat().st_size
    assert load_session_file(path, max_file_bytes=size).events
    _refused(path, f"{size} bytes", "limit", max_file_bytes=size - 1)


def test_replay_file_decoder_failures_are_classified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Exhausted:
        def decode(self, line: bytes) -> object:
            raise MemoryError

    path = tmp_path / "rec.jsonl"
    path.write_bytes(b'{"seq":0,"type":"turn/start","time":1,"data":{"turn":1}}\n')
    monkeypatch.setattr("modelwire.adapters.replay.sessionfile._LINE_DECODER", Exhausted())
    _refused(path, "line 1", "too large")


def test_error_details_never_carry_long_content(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    name = "t" * 50_000
    path.write_text(json.dumps({"seq": 0, "type": name, "time": 1, "data": {}}) + "\n")
    error = _refused(path, "line 1", "unknown event type")
    assert name not in error.message


# ---- through the replay adapter (export and sidecar) ------------------------------------------


def test_replay_adapter_from_a_deeply_nested_export_is_invalid_replay_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b'{"format":"modelwire-session","version":1,"x":' + DEEP + b"}\n")
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_file(path)
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert f"{path}: line 1" in caught.value.message


async def test_deeply_nested_sidecar_is_invalid_replay_file(tmp_path: Path) -> None:
    path = await _recorded(tmp_path)
    Path(f"{path}.override.json").write_bytes(DEEP)
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_file(path)
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert "override.json" in caught.value.message and "deeper than" in caught.value.message


async def test_oversized_sidecar_is_invalid_replay_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await _recorded(tmp_path)
    entry = {"kind": "chunks", "chunks": [chunk_json(c) for c in text_chunks("x" * 500)]}
    sidecar = Path(f"{path}.override.json")
    sidecar.write_text(json.dumps([entry]))
    monkeypatch.setattr(override_module, "MAX_OVERRIDE_BYTES", 256)
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_file(path)
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert "256-byte limit" in caught.value.message and "xxxx" not in caught.value.message
    monkeypatch.setattr(override_module, "MAX_OVERRIDE_BYTES", sidecar.stat().st_size)
    assert ReplayAdapter.from_file(path).scripts[0].calls
