"""`modelwire chat` as a subprocess against a loopback DeepSeek-compatible server."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest
from cli_helpers import RunCli, assert_one_line_error, run_cli_async, spawn_cli

from modelwire.cli.demo_script import ScriptedReply, ScriptedStep, WireUsage
from modelwire.cli.demo_server import DemoServer
from modelwire.session import AssistantMessage, TurnAborted, TurnEnd, open_log

GREETING = ("Hello", " from", " the", " loopback", " server", ",", " streamed", " for", " chat.")
HELLO = ScriptedStep(
    reply=ScriptedReply(
        reasoning=("A", " greeting", "."), content=GREETING, usage=WireUsage(12, 20, 0, 3)
    )
)
SLOW_WORDS = tuple(f" word{n}" for n in range(60))
SLOW = ScriptedStep(
    reply=ScriptedReply(reasoning=(), content=SLOW_WORDS, usage=WireUsage(5, 60, 0, 0))
)


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_chat_without_a_key_names_the_env_var(run_cli: RunCli) -> None:
    result = run_cli("chat", "hello")
    assert_one_line_error(result, "DEEPSEEK_API_KEY")


def test_piped_chat_without_a_key_also_fails_first(run_cli: RunCli) -> None:
    result = run_cli("chat", input="hello from a pipe\n")
    assert_one_line_error(result, "DEEPSEEK_API_KEY", "modelwire keys set deepseek")


async def test_chat_streams_from_a_providers_route_in_the_config(tmp_path: Path) -> None:
    async with DemoServer((HELLO,), api_key="loopback-key") as server:
        config = _write(
            tmp_path / "modelwire.toml",
            f"""
[providers.local]
api = "openai-completions"
base_url = "{server.base_url}"
api_key_env = "LOCAL_TEST_KEY"
models = [{{ id = "scripted-1" }}]
""",
        )
        log = f"sqlite:///{tmp_path / 'chat.db'}"
        args = ["chat", "Say hello", "--provider", "local", "--config", config, "--log", log]
        result = await run_cli_async(tmp_path, args, {"LOCAL_TEST_KEY": "loopback-key"})
        assert result.code == 0, result.err + result.out
        assert "".join(GREETING) in result.out
        assert server.requests[0]["model"] == "scripted-1"


async def test_chat_streams_from_the_builtin_deepseek_route(tmp_path: Path) -> None:
    async with DemoServer((HELLO,), api_key="sk-test") as server:
        config = _write(
            tmp_path / "modelwire.yaml",
            f"deepseek:\n  base_url: {server.base_url}\ndefault:\n  system: Be brief.\n",
        )
        log = f"sqlite:///{tmp_path / 'chat.db'}"
        args = ["chat", "Say hello", "--config", config, "--log", log, "--session", "s-1", "--new"]
        result = await run_cli_async(tmp_path, args, {"DEEPSEEK_API_KEY": "sk-test"})
        assert result.code == 0, result.err + result.out
        assert "".join(GREETING) in result.out
        assert "sk-test" not in result.out + result.err
        sent = server.requests[0]
        assert sent["model"] == "deepseek-v4-flash"
        assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
        db = await open_log(log)
        try:
            messages = [e.data for e in await db.read("s-1") if e.type == "assistant/message"]
        finally:
            await db.close()
        assert len(messages) == 1


async def test_sigint_during_a_slow_stream_exits_130_and_keeps_the_prefix(
    tmp_path: Path,
) -> None:
    async with DemoServer((SLOW,), api_key="sk-test", frame_delay_s=0.1) as server:
        config = _write(tmp_path / "c.toml", f'[deepseek]\nbase_url = "{server.base_url}"\n')
        log = f"sqlite:///{tmp_path / 'chat.db'}"
        args = ["chat", "Count slowly", "--config", config, "--log", log]
        args += ["--session", "slow", "--new"]
        proc = await spawn_cli(tmp_path, args, {"DEEPSEEK_API_KEY": "sk-test"})
        assert proc.stdout is not None and proc.stderr is not None
        seen = b""
        async with asyncio.timeout(30):
            while b"word3" not in seen:
                chunk = await proc.stdout.read(256)
                assert chunk, "the stream ended before it was interrupted"
                seen += chunk
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 130, (seen + out).decode() + err.decode()
        assert b"Traceback" not in err
    db = await open_log(log)
    try:
        events = await db.read("slow")
    finally:
        await db.close()
    messages = [e.data for e in events if isinstance(e.data, AssistantMessage)]
    assert len(messages) == 1 and messages[0].interrupted
    prefix = "".join(getattr(b, "text", "") for b in messages[0].message.content)
    assert prefix.startswith(" word0 word1 word2 word3")
    assert prefix != "".join(SLOW_WORDS)
    ends = [e.data for e in events if isinstance(e.data, TurnEnd)]
    assert isinstance(ends[-1].reason, TurnAborted)


@pytest.mark.parametrize("model", ["nope-1"])
async def test_chat_with_an_unknown_model_exits_2(tmp_path: Path, model: str) -> None:
    config = _write(tmp_path / "c.toml", '[deepseek]\nbase_url = "http://127.0.0.1:9"\n')
    args = ["chat", "hi", "--config", config, "--model", model, "--log", "memory:"]
    result = await run_cli_async(tmp_path, args, {"DEEPSEEK_API_KEY": "sk-test"})
    assert_one_line_error(result, model, "deepseek")


async def test_piped_lines_are_one_prompt_not_one_turn_each(tmp_path: Path) -> None:
    async with DemoServer((HELLO,), api_key="sk-test") as server:
        config = _write(tmp_path / "c.toml", f'[deepseek]\nbase_url = "{server.base_url}"\n')
        args = ["chat", "--config", config, "--log", f"sqlite:///{tmp_path / 'chat.db'}"]
        result = await run_cli_async(
            tmp_path, args, {"DEEPSEEK_API_KEY": "sk-test"}, input=b"one\ntwo\nthree\n"
        )
        assert result.code == 0, result.err
        assert result.out == "".join(GREETING) + "\n"
        (request,) = server.requests
        assert request["messages"] == [{"role": "user", "content": "one\ntwo\nthree"}]


def test_readme_quick_start_streams_from_deepseek(tmp_path: Path) -> None:
    import re
    import subprocess

    from cli_helpers import cli_env

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    match = re.search(r"## Quick start.*?```python\n(.*?)```", readme, re.DOTALL)
    assert match is not None, "the README has no quick-start code block"
    program = tmp_path / "quick_start.py"
    program.write_text(match.group(1), encoding="utf-8")

    async def serve_and_run() -> subprocess.CompletedProcess[str]:
        async with DemoServer((HELLO,), api_key="sk-test") as server:
            env = cli_env(
                tmp_path, {"DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": server.base_url}
            )
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                str(program),
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode is not None
            return subprocess.CompletedProcess([], proc.returncode, out.decode(), err.decode())

    done = asyncio.run(serve_and_run())
    assert done.returncode == 0, done.stderr
    assert done.stdout == "".join(GREETING) + "\n"


def _controlling_terminal() -> None:
    """In the child: a new session whose controlling terminal is the pty on stdin (for ^C)."""
    import fcntl
    import os
    import termios

    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
async def test_interactive_ctrl_c_cancels_the_reply_then_exits_130_at_the_prompt(
    tmp_path: Path,
) -> None:
    import os
    import pty

    from cli_helpers import cli_env, modelwire_argv

    async with DemoServer((SLOW,), api_key="sk-test", frame_delay_s=0.1) as server:
        config = _write(tmp_path / "c.toml", f'[deepseek]\nbase_url = "{server.base_url}"\n')
        log = f"sqlite:///{tmp_path / 'chat.db'}"
        env = cli_env(tmp_path, {"DEEPSEEK_API_KEY": "sk-test"})
        argv = [*modelwire_argv(), "chat", "--config", config, "--log", log]
        main_fd, child_fd = pty.openpty()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            cwd=tmp_path,
            stdin=child_fd,
            stdout=child_fd,
            stderr=child_fd,
            preexec_fn=_controlling_terminal,
        )
        os.close(child_fd)
        seen = bytearray()

        async def until(marker: bytes) -> None:
            start = len(seen)
            async with asyncio.timeout(20):
                while marker not in seen[start:]:
                    try:
                        seen.extend(await asyncio.to_thread(os.read, main_fd, 1024))
                    except OSError:
                        raise AssertionError(seen.decode(errors="replace")) from None

        try:
            await until(b"you>")
            os.write(main_fd, b"count\r")
            await until(b"word3")
            os.write(main_fd, b"\x03")  # Ctrl-C during the reply: cancel it, back to the prompt
            await until(b"you>")
            # Ctrl-C at the prompt: leave with 130. The prompt is printed a moment before the
            # line editor takes the terminal; a Ctrl-C in between is the line discipline's, so
            # press it again until the process leaves (as a person would), at most 20 times
            code = None
            for _ in range(20):
                os.write(main_fd, b"\x03")
                try:
                    code = await asyncio.wait_for(proc.wait(), 1)
                    break
                except TimeoutError:
                    continue
            assert code == 130
        finally:
            os.close(main_fd)
            if proc.returncode is None:
                proc.kill()
    db = await open_log(log)
    try:
        session = (await db.sessions())[0].session_id
        events = await db.read(session)
    finally:
        await db.close()
    messages = [e.data for e in events if isinstance(e.data, AssistantMessage)]
    assert len(messages) == 1 and messages[0].interrupted
