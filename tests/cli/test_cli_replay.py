"""`modelwire sessions export` and `modelwire replay`: a recorded demo replays offline, identically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import RunCli, assert_one_line_error, make_runner


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A demo session exported to JSONL: (export path, log URL, session id)."""
    home = tmp_path_factory.mktemp("replay")
    run = make_runner(home)
    url = f"sqlite:///{home / 'demo.db'}"
    demo = run("demo", "--log", url, "--delay-ms", "0")
    assert demo.code == 0, demo.err
    session_id = next(w for w in demo.out.split() if w.startswith("demo-"))
    target = home / "demo.jsonl"
    result = run("sessions", "export", session_id, str(target), "--log", url)
    assert result.code == 0, result.err
    assert f"to {target}" in result.out
    return target, url, session_id


def test_export_writes_a_header_and_every_event(exported: tuple[Path, str, str]) -> None:
    target, _, session_id = exported
    lines = target.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "modelwire-session" and header["session_id"] == session_id
    events = [json.loads(line) for line in lines[1:]]
    assert header["events"] == len(events)
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert any(e["type"] == "llm/retry" for e in events)


def test_replay_reproduces_the_recorded_session(
    run_cli: RunCli, exported: tuple[Path, str, str], tmp_path: Path
) -> None:
    target, _, _ = exported
    url = f"sqlite:///{tmp_path / 'replayed.db'}"
    result = run_cli("replay", str(target), "--log", url)
    assert result.code == 0, result.err + result.out
    assert "matches the recording (2 of 2 assistant messages)" in result.out
    assert "calculator = 550" in result.out
    assert "retry 1/2" in result.out  # the recorded 503 replays in-band; the retry plugin acts
    listed = run_cli("sessions", "list", "--log", url, "--json")
    assert [s["session_id"].split("-")[0] for s in json.loads(listed.out)] == ["replay"]


def test_replay_of_an_edited_recording_reports_the_difference(
    run_cli: RunCli, exported: tuple[Path, str, str], tmp_path: Path
) -> None:
    target, _, _ = exported
    edited = tmp_path / "edited.jsonl"
    lines = target.read_text(encoding="utf-8").splitlines(keepends=True)
    changed = [
        line.replace("Have a good trip!", "Bon voyage!") if '"assistant/message"' in line else line
        for line in lines
    ]
    edited.write_text("".join(changed), encoding="utf-8")
    result = run_cli("replay", str(edited), "--log", "memory:")
    assert result.code == 1, result.err + result.out
    assert "differs from the recording" in result.out


def test_export_of_an_unknown_session(run_cli: RunCli, exported: tuple[Path, str, str]) -> None:
    _, url, _ = exported
    result = run_cli("sessions", "export", "nope", "out.jsonl", "--log", url)
    assert_one_line_error(result, "nope")


def test_export_into_a_missing_directory(
    run_cli: RunCli, exported: tuple[Path, str, str], tmp_path: Path
) -> None:
    _, url, session_id = exported
    target = tmp_path / "missing" / "out.jsonl"
    result = run_cli("sessions", "export", session_id, str(target), "--log", url)
    assert_one_line_error(result, str(target.parent))


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        pytest.param(None, "cannot read", id="missing-file"),
        pytest.param(
            '{"seq":0,"type":"turn/start","time":1,"data":{"turn":"x"}}\n',
            "line 1",
            id="bad-payload",
        ),
        pytest.param("not json\n", "line 1", id="not-json"),
    ],
)
def test_replay_of_a_bad_file(
    run_cli: RunCli, tmp_path: Path, content: str | None, needle: str
) -> None:
    path = tmp_path / "bad.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = run_cli("replay", str(path), "--log", "memory:")
    assert_one_line_error(result, str(path), needle)
