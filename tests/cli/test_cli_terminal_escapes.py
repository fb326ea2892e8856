"""A hostile session cannot drive the terminal: `modelwire replay` and `modelwire sessions show`
(transcript and `--events`) run on a real pseudo-terminal show the control characters of a
session's text escaped (``\\x1b``), so no clipboard write (OSC 52), window title (OSC 0), screen
clear (CSI 2J) or C1 CSI reaches the terminal; to a pipe the text is written as it is.

The session is the demo's, exported, with a hostile payload spliced into a word of the answer
everywhere it occurs (the recorded chunks and the recorded messages alike, so the replay still
matches the recording).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import make_runner
from pty_helpers import POSIX_ONLY, PtyCli

PAYLOAD = "\x1b]52;c;SGVsbG8=\x07\x1b]0;pwned\x07\x1b[2J\x9b31m"
HOSTILE = (b"\x1b]52;", b"\x1b]0;", b"\x1b[2J", "\x9b".encode())
SHOWN = "\\x1b]52;c;SGVsbG8=\\x1b]0;pwned\\x1b[2J\\x9b31m"
"""The payload as the terminal shows it (rich drops the BELs: they are not in the text it prints)."""

pytestmark = pytest.mark.skipif(POSIX_ONLY, reason="needs a POSIX pseudo-terminal")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(home, the demo session's export with the payload spliced into the word " air")."""
    home = tmp_path_factory.mktemp("escapes")
    run = make_runner(home)
    url = f"sqlite:///{home / 'demo.db'}"
    demo = run("demo", "--log", url, "--delay-ms", "0")
    assert demo.code == 0, demo.err
    session_id = next(w for w in demo.out.split() if w.startswith("demo-"))
    export = home / "demo.jsonl"
    assert run("sessions", "export", session_id, str(export), "--log", url).code == 0
    text = export.read_text(encoding="utf-8")
    spliced = json.dumps(" a" + PAYLOAD + "ir")[1:-1]
    assert text.count(" air") >= 2  # a chunk and the message
    (home / "hostile.jsonl").write_text(text.replace(" air", spliced), encoding="utf-8")
    return home, home / "hostile.jsonl"


async def _on_pty(home: Path, *args: str) -> tuple[int, bytes]:
    async with PtyCli(home, args) as cli:
        code = await cli.exit_code(timeout=60)
        return code, bytes(cli.seen)


def _assert_escaped(raw: bytes, where: str) -> None:
    for sequence in HOSTILE:
        assert sequence not in raw, f"{where} wrote {sequence!r} to the terminal"
    assert SHOWN in raw.decode(errors="replace").replace("\r\n", "\n"), where


async def test_replay_and_sessions_show_escape_control_characters_on_a_terminal(
    hostile: tuple[Path, Path],
) -> None:
    home, export = hostile
    url = f"sqlite:///{home / 'replayed.db'}"
    code, raw = await _on_pty(home, "replay", str(export), "--log", url)
    assert code == 0, raw.decode(errors="replace")
    assert b"matches the recording" in raw
    _assert_escaped(raw, "replay")
    session_id = next(w for w in raw.decode(errors="replace").split() if w.startswith("replay-"))
    for extra in ((), ("--events",), ("--full",)):
        code, raw = await _on_pty(home, "sessions", "show", session_id, *extra, "--log", url)
        assert code == 0, raw.decode(errors="replace")
        _assert_escaped(raw, f"sessions show {' '.join(extra)}")


def test_to_a_pipe_the_text_is_written_as_it_is(hostile: tuple[Path, Path]) -> None:
    home, export = hostile
    run = make_runner(home)
    url = f"sqlite:///{home / 'piped.db'}"
    replayed = run("replay", str(export), "--log", url)
    assert replayed.code == 0, replayed.err
    session_id = next(w for w in replayed.out.split() if w.startswith("replay-"))
    shown = run("sessions", "show", session_id, "--log", url)
    assert shown.code == 0, shown.err
    assert "\x1b]52;c;SGVsbG8=" in shown.out and "\\x1b" not in shown.out


@pytest.mark.parametrize("term", ["xterm", "dumb"])
async def test_chat_escapes_the_models_control_characters_on_a_terminal(
    tmp_path: Path, term: str
) -> None:
    from modelwire.cli.demo_script import ScriptedReply, ScriptedStep, WireUsage
    from modelwire.cli.demo_server import DemoServer

    hostile = ScriptedReply(
        ("thinking ", PAYLOAD), ("The answer ", PAYLOAD, " ends."), WireUsage(5, 2, 0, 0)
    )
    async with DemoServer((ScriptedStep(reply=hostile),), api_key="sk-escape-0123") as server:
        config = tmp_path / "c.toml"
        config.write_text(f'[deepseek]\nbase_url = "{server.base_url}"\n', encoding="utf-8")
        args = ["chat", "hi", "--config", str(config), "--log", f"sqlite:///{tmp_path / 'c.db'}"]
        async with PtyCli(
            tmp_path, args, env={"DEEPSEEK_API_KEY": "sk-escape-0123"}, term=term
        ) as cli:
            code = await cli.exit_code(timeout=60)
            raw = bytes(cli.seen)
    assert code == 0, raw.decode(errors="replace")
    assert b"The answer " in raw and b"ends." in raw
    for sequence in HOSTILE:
        assert sequence not in raw, f"chat ({term}) wrote {sequence!r} to the terminal"
    assert raw.decode(errors="replace").count("\\x1b]52;c;SGVsbG8=") >= 2  # reasoning, answer
