"""The README's command-line tour: every command in it runs, in order, against a loopback server.

The tour's `bash` block is read from the README itself. Each line runs in bash (`pipefail` on)
with the real `modelwire` first on PATH, HOME in a temporary directory, and `$MODELWIRE_CONFIG`
pointing the built-in `deepseek` route at the loopback server, whose key is the one the tour's
`keys set` stores (so no environment key is involved). The interactive `modelwire chat` line runs
on a pseudo-terminal and leaves with `/exit`.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
import tomllib
from pathlib import Path

import pytest
from cli_helpers import cli_env, make_runner, on_path, write_config
from pty_helpers import PtyCli

from modelwire.cli.demo_script import ScriptedReply, ScriptedStep, WireUsage
from modelwire.cli.demo_server import DemoServer

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-tour-0123456789"
STEP = ScriptedStep(reply=ScriptedReply(("hm",), ("Rome", " at dusk."), WireUsage(8, 3, 0, 1)))


def tour_commands() -> list[str]:
    """The commands of the README's "The command line" block, comments stripped."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"## The command line\n.*?```bash\n(.*?)```", readme, re.DOTALL)
    assert match is not None, "the README has no command-line tour"
    lines = (re.sub(r"\s+#\s.*$", "", line).strip() for line in match.group(1).splitlines())
    return [line for line in lines if line]


def test_the_tour_shows_the_everyday_commands() -> None:
    commands = tour_commands()
    for needed in ("modelwire demo", "modelwire chat", "modelwire sessions list", "logs path"):
        assert any(needed in c for c in commands), needed
    assert all(c.split("|")[-1].strip().startswith(("modelwire", "jq")) for c in commands)


@pytest.mark.skipif(sys.platform == "win32", reason="needs bash and a POSIX pseudo-terminal")
async def test_every_command_of_the_readme_tour_runs(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("Day 1: Colosseum.\nDay 2: Vatican.\n", encoding="utf-8")
    async with DemoServer((STEP,) * 3, api_key=KEY) as server:
        config = write_config(tmp_path / "config.toml", server.base_url)
        env = on_path(tmp_path, cli_env(tmp_path, {"MODELWIRE_CONFIG": config}))
        outputs: dict[str, str] = {}
        for command in tour_commands():
            if command == "modelwire chat":
                async with PtyCli(tmp_path, ["chat"], {"MODELWIRE_CONFIG": config}) as cli:
                    await cli.prompt()
                    cli.send(b"/exit\r")
                    assert await cli.exit_code() == 0, cli.text
                continue
            if "| jq" in command and shutil.which("jq") is None:
                command = command.split("| jq")[0]
            proc = await asyncio.create_subprocess_exec(
                "bash",
                "-o",
                "pipefail",
                "-c",
                command,
                env=env,
                cwd=tmp_path,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            typed = f"{KEY}\n".encode() if command.startswith("modelwire keys set") else b""
            out, err = await asyncio.wait_for(proc.communicate(typed), 120)
            assert proc.returncode == 0, f"{command}\n{out.decode()}\n{err.decode()}"
            assert b"Traceback" not in err, err.decode()
            outputs[command] = out.decode()
    answers = [out for cmd, out in outputs.items() if cmd.startswith("modelwire chat")]
    assert answers and all("Rome at dusk." in out for out in answers), answers
    listed = next(out for cmd, out in outputs.items() if "sessions list" in cmd)
    assert "trip" in listed
    shown = next(out for cmd, out in outputs.items() if "sessions show" in cmd)
    assert "you: Plan a day in Rome" in shown and "you: And the evening?" in shown
    users = [[m["content"] for m in r["messages"] if m["role"] == "user"] for r in server.requests]
    assert ["Summarize these notes\n\nDay 1: Colosseum.\nDay 2: Vatican."] in users
    path = next(out for cmd, out in outputs.items() if cmd.endswith("logs path"))
    assert path.strip() == str(tmp_path / "data" / "modelwire" / "sessions.db")


@pytest.mark.skipif(sys.platform == "win32", reason="needs bash")
async def test_the_tour_run_as_a_script_without_a_key_stops_naming_the_variable(
    tmp_path: Path,
) -> None:
    """Issue 30: run as one script (`bash -e`) with no key in the environment, the tour stops
    at its first command that needs one, exit non-zero, naming the variable to set."""
    env = on_path(tmp_path, cli_env(tmp_path, {}))
    script = "\n".join(c for c in tour_commands() if c != "modelwire chat")  # not interactive
    proc = await asyncio.create_subprocess_exec(
        "bash", "-e", "-o", "pipefail", "-c", script.replace("demo", "demo --delay-ms 0", 1),
        env=env, cwd=tmp_path, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 2, (out.decode(), err.decode())
    last = err.decode().strip().splitlines()[-1]
    assert last.startswith("error: ") and "DEEPSEEK_API_KEY" in last, last
    assert "550 minutes" in out.decode()  # the demo, which needs no key, ran first


def _block_under(heading: str, lang: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"## {heading}\n.*?```{lang}\n(.*?)```", readme, re.DOTALL)
    assert match is not None, f"the README has no {lang} block under {heading}"
    return match.group(1)


def test_the_configuration_block_is_a_config_file_both_surfaces_accept(tmp_path: Path) -> None:
    """Issue 30: the README's Configuration section shows a file `modelwire` and Python read
    alike, [default] included, and names where the file lives on each OS."""
    import modelwire as mw

    config = tmp_path / "config.toml"
    config.write_text(_block_under("Configuration", "toml"), encoding="utf-8")
    assert mw.open_runtime(str(config), env={}).default_model == "ollama:qwen3:8b"
    run = make_runner(tmp_path)
    listed = run("providers", "--config", str(config), "--json")
    assert listed.code == 0, listed.err
    assert {r["route"] for r in json.loads(listed.out)["routes"]} == {"deepseek", "ollama"}
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Configuration")[1]
    for where in ("~/.config/modelwire/", "Library/Application Support", "%LOCALAPPDATA%"):
        assert where in section.split("##")[0], where
    assert "modelwire config path" in section and "modelwire ui" in (ROOT / "README.md").read_text()


def test_the_install_lines_work_from_a_clone() -> None:
    """Issue 30: no line installs a published `modelwire` (there is none yet); the extras they
    name exist; `python -m build` comes after `pip install build`."""
    lines = [line.split("#", 1)[0].strip() for line in _block_under("Install", "bash").splitlines()]
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    for line in filter(None, lines):
        assert "modelwire[" not in line and not re.search(r"install\s+modelwire\b", line), line
        for named in re.findall(r"\.\[([a-z,]+)\]", line):
            assert set(named.split(",")) <= extras, line
        if "python -m build" in line:
            assert line.index("pip install build") < line.index("python -m build"), line
