"""`modelwire sessions resume ID`: a `chat` process SIGKILLed mid-stream, its turn resumed."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from cli_helpers import assert_one_line_error, run_cli_async, spawn_cli

from modelwire.cli.demo_script import ScriptedReply, ScriptedStep, WireUsage
from modelwire.cli.demo_server import DemoServer
from modelwire.session import open_log

ANSWER = ("Resumed", " and", " done.")
SLOW = ScriptedStep(
    reply=ScriptedReply(
        reasoning=(), content=tuple(f" word{n}" for n in range(60)), usage=WireUsage(5, 60, 0, 0)
    )
)
DONE = ScriptedStep(reply=ScriptedReply(reasoning=(), content=ANSWER, usage=WireUsage(5, 3, 0, 0)))
ENV = {"DEEPSEEK_API_KEY": "sk-test"}


def _config(path: Path, base_url: str) -> str:
    path.write_text(f'[deepseek]\nbase_url = "{base_url}"\n', encoding="utf-8")
    return str(path)


async def _kill_chat_mid_stream(tmp_path: Path, log: str, session: str) -> None:
    async with DemoServer((SLOW,), api_key="sk-test", frame_delay_s=0.1) as server:
        config = _config(tmp_path / "a.toml", server.base_url)
        args = ["chat", "Count slowly", "--config", config, "--log", log, "--session", session]
        args.append("--new")
        proc = await spawn_cli(tmp_path, args, ENV)
        assert proc.stdout is not None
        seen = b""
        async with asyncio.timeout(30):
            while b"word3" not in seen:
                chunk = await proc.stdout.read(256)
                assert chunk, "the stream ended before the process was killed"
                seen += chunk
        proc.send_signal(signal.SIGKILL)
        await proc.wait()


async def test_cli_sessions_resume_continues_the_turn_of_a_killed_chat(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path / 'chat.db'}"
    await _kill_chat_mid_stream(tmp_path, log, "dead")
    async with DemoServer((DONE,), api_key="sk-test") as server:
        config = _config(tmp_path / "b.toml", server.base_url)
        args = ["sessions", "resume", "dead", "--config", config, "--log", log]
        result = await run_cli_async(tmp_path, args, ENV)
        assert result.code == 0, result.err + result.out
        assert "".join(ANSWER) in result.out
        (request,) = server.requests
        assert [m["role"] for m in request["messages"]] == ["user"]  # no partial prefix
    db = await open_log(log)
    try:
        events = await db.read("dead")
    finally:
        await db.close()
    assert [e.data.turn for e in events if e.type == "turn/start"] == [1]
    ends = [(e.data.turn, e.data.reason.kind) for e in events if e.type == "turn/end"]
    assert ends == [(1, "completed")]
    messages = [e.data for e in events if e.type == "assistant/message"]
    assert [(m.attempt, m.interrupted) for m in messages] == [(2, None)]


async def test_cli_sessions_resume_without_an_open_turn_is_a_one_line_error(
    tmp_path: Path,
) -> None:
    log = f"sqlite:///{tmp_path / 'chat.db'}"
    async with DemoServer((DONE,), api_key="sk-test") as server:
        config = _config(tmp_path / "b.toml", server.base_url)
        chat = ["chat", "hi", "--config", config, "--log", log, "--session", "done", "--new"]
        assert (await run_cli_async(tmp_path, chat, ENV)).code == 0
        args = ["sessions", "resume", "done", "--config", config, "--log", log]
        assert_one_line_error(await run_cli_async(tmp_path, args, ENV), "done", "no open turn")
        missing = ["sessions", "resume", "nobody", "--config", config, "--log", log]
        assert_one_line_error(await run_cli_async(tmp_path, missing, ENV), "nobody")
        assert len(server.requests) == 1


def test_resume_explains_how_the_last_turn_ended() -> None:
    from modelwire.cli.resume import last_turn_story
    from modelwire.session import (
        AbortCause,
        Event,
        TurnAborted,
        TurnCompleted,
        TurnEnd,
        TurnErrored,
        TurnInterrupted,
    )
    from modelwire.vocab import LlmFailure

    def story(reason: object) -> str:
        return last_turn_story([Event(0, "turn/end", 0, TurnEnd(3, reason))])  # type: ignore[arg-type]

    assert story(TurnInterrupted()).startswith("turn 3 was closed as interrupted: the process")
    assert "killed or crashed" in story(TurnInterrupted())
    assert story(TurnAborted(AbortCause("user", "Ctrl-C"))) == (
        "turn 3 was cancelled (Ctrl-C); its partial answer is saved"
    )
    assert "by the user" in story(TurnAborted(AbortCause("user")))
    failed = story(TurnErrored(LlmFailure("quota gone", "RATE_LIMIT", status=429)))
    assert failed == "turn 3 failed: RATE_LIMIT (HTTP 429): quota gone"
    assert story(TurnCompleted()) == "turn 3 ended completed"
    assert last_turn_story([]) == "it has no turn"


async def test_cli_resume_of_a_killed_turn_says_its_process_stopped(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path / 'chat.db'}"
    await _kill_chat_mid_stream(tmp_path, log, "dead")
    async with DemoServer((DONE,), api_key="sk-test") as server:
        config = _config(tmp_path / "b.toml", server.base_url)
        args = ["sessions", "resume", "dead", "--config", config, "--log", log]
        result = await run_cli_async(tmp_path, args, ENV)
    assert result.code == 0, result.err
    first = result.err.splitlines()[0]
    assert first.startswith("resuming turn 1 of session dead")
    assert "its process stopped before the turn ended (killed or crashed)" in first
    assert result.out == "".join(ANSWER) + "\n"
