"""`modelwire replay FILE` on hostile files: exit 2 with INVALID_REPLAY_FILE, never a traceback."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import RunCli, assert_one_line_error

DEEP = b"[" * 200_000
HEADER = b'{"format":"modelwire-session","version":1,"session_id":"s","created_at":1,"events":1}\n'


def test_cli_replay_of_a_deeply_nested_file_is_invalid_replay_file(
    run_cli: RunCli, tmp_path: Path
) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(DEEP + b"\n")
    result = run_cli("replay", str(path), "--log", "memory:")
    assert_one_line_error(result, str(path), "line 1", "INVALID_REPLAY_FILE")
    assert "RecursionError" not in result.err and "[[[" not in result.err


def test_cli_replay_of_deep_nesting_inside_an_event_names_its_line(
    run_cli: RunCli, tmp_path: Path
) -> None:
    path = tmp_path / "deep-event.jsonl"
    path.write_bytes(HEADER + b'{"seq":0,"type":"turn/start","time":1,"data":' + DEEP + b"}\n")
    result = run_cli("replay", str(path), "--log", "memory:")
    assert_one_line_error(result, str(path), "line 2", "deeper than", "INVALID_REPLAY_FILE")


def test_cli_replay_of_a_directory_is_invalid_replay_file(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("replay", str(tmp_path), "--log", "memory:")
    assert_one_line_error(result, str(tmp_path), "cannot read", "INVALID_REPLAY_FILE")
