"""`modelwire chat` output for scripts: stdout holds only the answer, --json, exit codes, pipes.

Off a terminal the answer alone goes to stdout; the session line and reasoning go to stderr
(`--no-reasoning` drops the reasoning); `--no-stream` prints the answer once; `--json` prints one
object. A failed turn prints its error once and exits 1; `| head -1` cancels the turn, keeps its
prefix and `sessions resume` says why it ended.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path

from cli_helpers import (
    assert_one_line_error,
    cli_env,
    modelwire_argv,
    run_cli_async,
    write_config,
)

from modelwire.cli.demo_script import InjectedFailure, ScriptedReply, ScriptedStep, WireUsage
from modelwire.cli.demo_server import DemoServer
from modelwire.session import AssistantMessage, TurnAborted, TurnEnd, open_log

KEY = {"DEEPSEEK_API_KEY": "sk-test"}
ANSWER = ("The answer", " is **42**.")
STEP = ScriptedStep(reply=ScriptedReply(("Thinking", " hard."), ANSWER, WireUsage(10, 4, 0, 2)))
REFUSED = ScriptedStep(
    reply=STEP.reply,
    failures=(InjectedFailure(400, "model does not exist", "invalid_request_error"),),
)
FLAKY = ScriptedStep(
    reply=STEP.reply, failures=(InjectedFailure(503, "busy, try later", "server_error", "0"),)
)
LINES = ScriptedStep(
    reply=ScriptedReply((), tuple(f"line {n}\n" for n in range(80)), WireUsage(5, 80, 0, 0))
)


async def _chat(tmp_path: Path, step: ScriptedStep, *args: str) -> tuple[int, str, str]:
    async with DemoServer((step,), api_key="sk-test") as server:
        config = write_config(tmp_path / "c.toml", server.base_url)
        argv = ["chat", "What is it?", *args, "--config", config, "--log", "memory:"]
        result = await run_cli_async(tmp_path, argv, KEY)
        return result.code, result.out, result.err


async def test_off_a_terminal_stdout_holds_only_the_answer(tmp_path: Path) -> None:
    code, out, err = await _chat(tmp_path, STEP)
    assert code == 0, err
    assert out == "".join(ANSWER) + "\n"  # raw markdown, no banner, no reasoning
    lines = err.splitlines()
    assert lines[0].startswith("session chat-") and "deepseek/deepseek-v4-flash" in lines[0]
    assert "Thinking hard." in err


async def test_no_reasoning_hides_the_reasoning(tmp_path: Path) -> None:
    code, out, err = await _chat(tmp_path, STEP, "--no-reasoning")
    assert code == 0, err
    assert out == "".join(ANSWER) + "\n"
    assert "Thinking" not in out + err


async def test_no_stream_prints_the_answer_once(tmp_path: Path) -> None:
    code, out, err = await _chat(tmp_path, FLAKY, "--no-stream")
    assert code == 0, err
    assert out == "".join(ANSWER) + "\n"
    assert "retry 1" in err and "SERVER" in err


async def test_json_prints_one_object_and_nothing_else(tmp_path: Path) -> None:
    code, out, err = await _chat(tmp_path, STEP, "--json")
    assert code == 0, err
    assert err == ""
    document = json.loads(out)
    assert document["answer"] == "".join(ANSWER)
    assert document["reasoning"] == "Thinking hard."
    assert document["finish"] == "completed"
    assert document["session_id"].startswith("chat-") and document["turn"] == 1
    assert (document["route"], document["model"]) == ("deepseek", "deepseek-v4-flash")
    assert document["usage"]["input_tokens"] == 10 and document["usage"]["output_tokens"] == 4
    # deepseek-v4-flash: 10×0.14 + 4×0.28 = 1.4 + 1.12 = 2.52 USD per 1M → a decimal string
    assert document["cost"] == "0.00000252"
    assert document["error"] is None


async def test_a_failed_turn_prints_its_error_once_and_exits_1(tmp_path: Path) -> None:
    code, out, err = await _chat(tmp_path, REFUSED)
    assert code == 1, err
    assert out == ""
    failures = [line for line in err.splitlines() if "model does not exist" in line]
    assert len(failures) == 1, err
    assert failures[0].startswith("error: ") and "turn 1 of session chat-" in failures[0]
    assert "Traceback" not in err


async def test_a_failed_turn_in_json_names_the_failure(tmp_path: Path) -> None:
    code, out, _ = await _chat(tmp_path, REFUSED, "--json")
    assert code == 1
    document = json.loads(out)
    assert document["finish"] == "error" and document["answer"] == ""
    assert document["error"]["status"] == 400
    assert "model does not exist" in document["error"]["message"]


async def test_json_without_any_prompt_is_an_empty_prompt(tmp_path: Path) -> None:
    # no prompt and an empty stdin (not a terminal, so not interactive)
    result = await run_cli_async(tmp_path, ["chat", "--json", "--log", "memory:"], KEY)
    assert_one_line_error(result, "empty prompt")


async def test_head_1_cancels_the_turn_keeps_the_prefix_and_resume_says_why(
    tmp_path: Path,
) -> None:
    db = tmp_path / "chat.db"
    async with DemoServer((LINES,), api_key="sk-test", frame_delay_s=0.02) as server:
        config = write_config(tmp_path / "c.toml", server.base_url)
        argv = ["chat", "Count", "--config", config, "--log", str(db), "--session", "piped"]
        command = shlex.join([*modelwire_argv(), *argv, "--new"])
        script = f'{command} 2>err.txt </dev/null | head -1; echo "${{PIPESTATUS[0]}}" >rc.txt'
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            script,
            env=cli_env(tmp_path, KEY),
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert out == b"line 0\n"
    err = (tmp_path / "err.txt").read_text()
    assert (tmp_path / "rc.txt").read_text().strip() == "130", err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert "cancelled (stdout closed (broken pipe))" in err
    log = await open_log(f"sqlite:///{db}")
    try:
        events = await log.read("piped")
    finally:
        await log.close()
    (message,) = [e.data for e in events if isinstance(e.data, AssistantMessage)]
    assert message.interrupted
    prefix = "".join(getattr(b, "text", "") for b in message.message.content)
    assert prefix.startswith("line 0\n") and len(prefix) < len("".join(LINES.reply.content))
    end = events[-1].data
    assert isinstance(end, TurnEnd) and isinstance(end.reason, TurnAborted)
    assert end.reason.reason.reason == "stdout closed (broken pipe)"
    resumed = await run_cli_async(
        tmp_path, ["sessions", "resume", "piped", "--config", config, "--log", str(db)], KEY
    )
    assert_one_line_error(resumed, "no open turn", "cancelled (stdout closed (broken pipe))")
