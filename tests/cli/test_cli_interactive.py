"""The interactive `modelwire chat` on a pseudo-terminal: history, multi-line input, slash
commands that never reach the model, markdown rendering, and how it ends (Ctrl-D, Ctrl-C)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import write_config
from pty_helpers import POSIX_ONLY, PtyCli

from modelwire.cli.demo_script import ScriptedReply, ScriptedStep, WireUsage
from modelwire.cli.demo_server import DemoServer

pytestmark = pytest.mark.skipif(POSIX_ONLY, reason="needs a POSIX pseudo-terminal")

KEY = {"DEEPSEEK_API_KEY": "sk-test"}
MARKDOWN = ("# Big title\n\n", "Some **bold", "** words.\n\n", "- apples\n", "- oranges\n")
STEP = ScriptedStep(reply=ScriptedReply(("thinking",), MARKDOWN, WireUsage(9, 5, 0, 1)))


def _last_user(request: dict[str, object]) -> object:
    messages = request["messages"]
    assert isinstance(messages, list)
    return [m["content"] for m in messages if m["role"] == "user"][-1]


def _args(tmp_path: Path, base_url: str) -> list[str]:
    config = write_config(tmp_path / "c.toml", base_url)
    return ["chat", "--config", config, "--log", str(tmp_path / "chat.db")]


async def test_up_arrow_recalls_history_within_and_across_sessions(tmp_path: Path) -> None:
    async with DemoServer((STEP,) * 3, api_key="sk-test") as server:
        args = _args(tmp_path, server.base_url)
        async with PtyCli(tmp_path, args, KEY) as cli:
            at = await cli.prompt()
            cli.send(b"what is markdown?\r")
            at = await cli.prompt(await cli.until("oranges", after=at))
            cli.send(b"\x1b[A\r")  # up arrow, Enter: the same message again
            at = await cli.prompt(await cli.until("oranges", after=at))
            cli.send(b"\x04")
            assert await cli.exit_code() == 0
        history = tmp_path / "data" / "modelwire" / "chat-history"
        assert "what is markdown?" in history.read_text(encoding="utf-8")
        async with PtyCli(tmp_path, [*args, "-c"], KEY) as cli:
            await cli.prompt()
            cli.send(b"\x1b[A\r")  # the history file outlives the process
            await cli.until("oranges")
            cli.send(b"/exit\r")
            assert await cli.exit_code() == 0
        assert [_last_user(r) for r in server.requests] == ["what is markdown?"] * 3


async def test_slash_commands_never_reach_the_model(tmp_path: Path) -> None:
    async with DemoServer((STEP,) * 3, api_key="sk-test") as server:
        async with PtyCli(tmp_path, _args(tmp_path, server.base_url), KEY) as cli:
            at = await cli.prompt()
            for command, answer in (
                (b"/help\r", "/retry"),
                (b"/usage\r", "no turns yet"),
                (b"/bogus\r", "unknown command /bogus"),
                (b"/system Answer in French.\r", "system prompt set"),
                (b"/system\r", "Answer in French."),
                (b"/model deepseek:deepseek-v4-pro\r", "now deepseek/deepseek-v4-pro"),
                (b"/model nowhere:x\r", "error: /model 'nowhere:x': unknown route 'nowhere'"),
            ):
                cli.send(command)
                at = await cli.prompt(await cli.until(answer, after=at))
            assert server.requests == []
            cli.send(b"hello\r")
            at = await cli.prompt(await cli.until("oranges", after=at))
            cli.send(b"/retry\r")
            at = await cli.prompt(await cli.until("oranges", after=at))
            cli.send(b"//etc/hosts is a path\r")
            at = await cli.prompt(await cli.until("oranges", after=at))
            cli.send(b"/usage\r")
            # three deepseek-v4-pro calls of 9 in, 5 out: 3 × (9×0.435 + 5×0.87) = 3 × 8.265
            await cli.until("cost: $0.000024795", after=at)
            cli.send(b"/quit\r")
            assert await cli.exit_code() == 0
    first, retried, slashed = server.requests
    assert [_last_user(r) for r in server.requests] == ["hello", "hello", "/etc/hosts is a path"]
    messages = first["messages"]
    assert isinstance(messages, list)
    assert messages[0] == {"role": "system", "content": "Answer in French."}
    assert {r["model"] for r in (first, retried, slashed)} == {"deepseek-v4-pro"}


async def test_multi_line_input_with_a_trailing_backslash_or_esc_enter(tmp_path: Path) -> None:
    async with DemoServer((STEP,) * 2, api_key="sk-test") as server:
        async with PtyCli(tmp_path, _args(tmp_path, server.base_url), KEY) as cli:
            at = await cli.prompt()
            cli.send(b"first line\\\r")
            cli.send(b"second line\r")
            at = await cli.prompt(await cli.until("oranges", after=at))
            cli.send(b"alpha\x1b\rbeta\r")  # Esc Enter inserts a newline
            await cli.prompt(await cli.until("oranges", after=at))
            cli.send(b"\x04")
            assert await cli.exit_code() == 0
    assert [_last_user(r) for r in server.requests] == ["first line\nsecond line", "alpha\nbeta"]


async def test_markdown_is_rendered_on_a_terminal(tmp_path: Path) -> None:
    async with DemoServer((STEP,), api_key="sk-test") as server:
        args = [*_args(tmp_path, server.base_url), "Show markdown"]
        async with PtyCli(tmp_path, args, KEY) as cli:
            assert await cli.exit_code() == 0
    screen = cli.text
    assert "Big title" in screen and "Some bold words." in screen
    assert "**" not in screen and "# Big" not in screen
    assert "• apples" in screen


async def test_ctrl_c_at_the_prompt_exits_130(tmp_path: Path) -> None:
    async with DemoServer((STEP,), api_key="sk-test") as server:
        async with PtyCli(tmp_path, _args(tmp_path, server.base_url), KEY) as cli:
            await cli.prompt()
            cli.send(b"\x03")
            assert await cli.exit_code() == 130
        assert server.requests == []


async def test_json_needs_a_prompt_on_a_terminal(tmp_path: Path) -> None:
    async with PtyCli(tmp_path, ["chat", "--json", "--log", "memory:"], KEY) as cli:
        assert await cli.exit_code() == 2
    assert "error: --json prints one answer: pass PROMPT" in cli.text


async def test_ctrl_c_cancels_a_reply_with_its_reason_then_leaves_at_the_prompt(
    tmp_path: Path,
) -> None:
    from modelwire.session import AssistantMessage, TurnAborted, TurnEnd, open_log

    words = tuple(f" word{n}" for n in range(60))
    slow = ScriptedStep(reply=ScriptedReply((), words, WireUsage(5, 60, 0, 0)))
    async with DemoServer((slow,), api_key="sk-test", frame_delay_s=0.1) as server:
        args = [*_args(tmp_path, server.base_url), "--session", "slow", "--new"]
        async with PtyCli(tmp_path, args, KEY) as cli:
            at = await cli.prompt()
            cli.send(b"count slowly\r")
            at = await cli.until("word3", after=at)
            cli.send(b"\x03")
            at = await cli.until("cancelled (Ctrl-C); the partial answer is saved", after=at)
            await cli.prompt(after=at)
            cli.send(b"\x03")
            assert await cli.exit_code() == 130
    log = await open_log(f"sqlite:///{tmp_path / 'chat.db'}")
    try:
        events = await log.read("slow")
    finally:
        await log.close()
    (message,) = [e.data for e in events if isinstance(e.data, AssistantMessage)]
    assert message.interrupted
    end = events[-1].data
    assert isinstance(end, TurnEnd) and isinstance(end.reason, TurnAborted)
    assert end.reason.reason.reason == "Ctrl-C"
