"""`modelwire demo` end to end, as a subprocess: offline, logged, inspectable."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import CliResult, RunCli, cli_env, make_runner, modelwire_argv

from modelwire.session import (
    AssistantMessage,
    Event,
    LlmRetry,
    LlmRetryStarted,
    ToolResultRecord,
    TurnCompleted,
    TurnEnd,
    open_log,
)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[CliResult, str, str]:
    """Run the demo once per module into a fresh SQLite log: (result, log URL, session id)."""
    home = tmp_path_factory.mktemp("demo")
    url = f"sqlite:///{home / 'demo.db'}"
    result = make_runner(home)("demo", "--log", url, "--delay-ms", "0")
    assert result.code == 0, result.err + result.out
    ids = [w for w in result.out.split() if w.startswith("demo-")]
    assert ids, result.out
    return result, url, ids[0]


async def _events(url: str, session_id: str) -> list[Event]:
    log = await open_log(url)
    try:
        return await log.read(session_id)
    finally:
        await log.close()


async def test_demo_exits_0_offline_and_logs_the_turn(
    demo_run: tuple[CliResult, str, str],
) -> None:
    result, url, session_id = demo_run
    assert "calculator" in result.out
    assert "550 minutes" in result.out
    assert f"modelwire sessions show {session_id} --log {url}" in result.out
    events = await _events(url, session_id)
    types = [e.type for e in events]
    assert types[0] == "turn/start"
    end = events[-1].data
    assert isinstance(end, TurnEnd) and isinstance(end.reason, TurnCompleted)
    tool_results = [e.data for e in events if isinstance(e.data, ToolResultRecord)]
    assert [r.name for r in tool_results] == ["calculator"]
    assert "550" in str(tool_results[0].message.content)


async def test_demo_logs_the_retry_of_the_injected_503(
    demo_run: tuple[CliResult, str, str],
) -> None:
    result, url, session_id = demo_run
    events = await _events(url, session_id)
    retries = [e.data for e in events if isinstance(e.data, LlmRetry)]
    assert len(retries) == 1
    retry = retries[0]
    assert (retry.turn, retry.step, retry.retry) == (1, 2, 1)
    assert retry.failure.code == "SERVER" and retry.failure.status == 503
    started = [e.data for e in events if isinstance(e.data, LlmRetryStarted)]
    assert [(s.step, s.retry, s.retry_id) for s in started] == [(2, 1, retry.retry_id)]
    assert "retry 1" in result.out and "SERVER" in result.out


async def test_demo_commits_one_assistant_message_per_step(
    demo_run: tuple[CliResult, str, str],
) -> None:
    _, url, session_id = demo_run
    events = await _events(url, session_id)
    messages = [e.data for e in events if isinstance(e.data, AssistantMessage)]
    assert [(m.turn, m.step) for m in messages] == [(1, 1), (1, 2)]
    assert all(not m.interrupted for m in messages)
    assert messages[1].attempt == 2  # the first attempt of step 2 failed with HTTP 503
    assert messages[1].usage is not None and messages[1].usage.cache_read_tokens == 384


def test_demo_prints_a_usage_table(demo_run: tuple[CliResult, str, str]) -> None:
    result, _, _ = demo_run
    assert "token usage" in result.out
    assert "1.1.1" in result.out and "1.2.2" in result.out
    assert "384" in result.out  # cache-read tokens of the second step


def test_sessions_show_events_lists_the_demo_session(
    run_cli: RunCli, demo_run: tuple[CliResult, str, str]
) -> None:
    _, url, session_id = demo_run
    shown = run_cli("sessions", "show", session_id, "--log", url, "--events")
    assert shown.code == 0, shown.err
    for needle in ("turn/start", "llm/retry", "SERVER", "tool/result", "calculator → 550"):
        assert needle in shown.out, needle
    assert shown.out.count("assistant/message") == 2
    assert "550 minutes" in shown.out


def test_sessions_show_prints_the_demo_session_as_a_transcript(
    run_cli: RunCli, demo_run: tuple[CliResult, str, str]
) -> None:
    _, url, session_id = demo_run
    shown = run_cli("sessions", "show", session_id, "--log", url)
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0].startswith(f"session {session_id} · deepseek/")
    assert any(line.startswith("you: ") for line in lines)
    assert any(line.startswith("→ calculator ") for line in lines)
    assert any(line.startswith("← calculator = 550") for line in lines)
    assert any(line.startswith("↻ retry 1 of step 2") and "SERVER" in line for line in lines)
    assert "550 minutes" in shown.out
    assert lines[-1] == "turn 1 completed"


def test_sessions_show_json_lists_every_event(
    run_cli: RunCli, demo_run: tuple[CliResult, str, str]
) -> None:
    _, url, session_id = demo_run
    shown = run_cli("sessions", "show", session_id, "--log", url, "--json")
    assert shown.code == 0, shown.err
    events = json.loads(shown.out)
    assert [e["seq"] for e in events] == list(range(len(events)))
    retry = next(e for e in events if e["type"] == "llm/retry")
    assert retry["data"]["failure"]["code"] == "SERVER"


def test_sessions_list_and_usage_json(
    run_cli: RunCli, demo_run: tuple[CliResult, str, str]
) -> None:
    _, url, session_id = demo_run
    listed = run_cli("sessions", "list", "--log", url, "--json")
    assert listed.code == 0, listed.err
    assert [s["session_id"] for s in json.loads(listed.out)] == [session_id]
    usage = run_cli("sessions", "usage", session_id, "--log", url, "--json")
    assert usage.code == 0, usage.err
    report = json.loads(usage.out)
    calls = {(c["turn"], c["step"], c["attempt"]): c["usage"] for c in report["calls"]}
    assert calls[(1, 1, 1)]["input_tokens"] == 318
    assert calls[(1, 2, 2)]["cache_read_tokens"] == 384
    assert report["total"]["output_tokens"] == 61 + 47


def test_demo_default_log_is_under_the_user_data_dir(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("demo", "--delay-ms", "0")
    assert result.code == 0, result.err
    assert (tmp_path / "data" / "modelwire" / "sessions.db").is_file()
    assert "--log" not in result.out.split("inspect it with:")[-1]
    listed = run_cli("sessions", "list")
    assert listed.code == 0 and "demo-" in listed.out


def test_demo_prints_its_banner_first(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    proc = subprocess.Popen(
        [*modelwire_argv(), "demo", "--log", "memory:", "--delay-ms", "0"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        # how soon it comes is measured in benchmarks/ (startup), never asserted here
        assert b"modelwire demo" in first
    finally:
        proc.communicate(timeout=60)
    assert proc.returncode == 0
