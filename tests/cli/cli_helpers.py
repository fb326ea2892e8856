"""Helpers for the CLI tests (imported by the test modules and `conftest.py`): run the real
`modelwire` command as a subprocess in a clean environment.

The command is the console script installed beside the interpreter running the tests (else
`python -m modelwire`), with `PYTHONPATH` pointing at this tree's `src`. Every run gets its own
user data/config dirs (so the default log and key file never touch the real home), no provider
keys, no colours, a wide terminal so rich does not wrap lines, and stdin from /dev/null unless a
test pipes something in. `PtyCli` runs the command on a pseudo-terminal for the interactive cases.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def modelwire_argv() -> list[str]:
    """The `modelwire` command: the installed console script, else `python -m modelwire`."""
    script = Path(sys.executable).with_name("modelwire")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "modelwire"]


@dataclass(frozen=True)
class CliResult:
    """A finished CLI run."""

    code: int
    out: str
    err: str


def cli_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for a CLI subprocess rooted at `home`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MODELWIRE_", "DEEPSEEK_", "OPENAI_", "ANTHROPIC_"))
    }
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        COLUMNS="200",
        TERM="dumb",
        NO_COLOR="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p),
    )
    env.update(extra or {})
    return env


def on_path(home: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` with the real `modelwire` first on PATH (a shim in `home/bin`), as a shell has it
    once the command is installed (the README's shell blocks run so)."""
    bin_dir = home / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "modelwire"
    shim.write_text(
        "#!/bin/sh\nexec " + " ".join(f"'{a}'" for a in modelwire_argv()) + ' "$@"\n',
        encoding="utf-8",
    )
    shim.chmod(0o755)
    return {**env, "PATH": f"{bin_dir}:{env.get('PATH', '')}"}


RunCli = Callable[..., CliResult]


def make_runner(home: Path) -> RunCli:
    """A synchronous runner: `run(*args, env={...}, input=None, timeout=60, cwd=home)`."""

    def run(
        *args: str,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float = 60,
        cwd: Path | None = None,
    ) -> CliResult:
        data = input.encode() if isinstance(input, str) else input
        proc = subprocess.run(
            [*modelwire_argv(), *args],
            env=cli_env(home, env),
            cwd=cwd or home,
            input=data,
            stdin=subprocess.DEVNULL if data is None else None,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        return CliResult(proc.returncode, proc.stdout.decode(), proc.stderr.decode())

    return run


async def spawn_cli(
    home: Path,
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    *,
    stdin: bytes | None = b"",
) -> asyncio.subprocess.Process:
    """Start the CLI without waiting (for tests that serve HTTP from this event loop).

    `stdin` is written and closed at once (`chat` reads a piped stdin to its end); None leaves
    the pipe open for the test to write and close.
    """
    proc = await asyncio.create_subprocess_exec(
        *modelwire_argv(),
        *args,
        env=cli_env(home, env),
        cwd=cwd or home,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        await proc.stdin.drain()
        proc.stdin.close()
    return proc


async def run_cli_async(
    home: Path,
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    input: str | bytes = b"",
    cwd: Path | None = None,
) -> CliResult:
    """Run the CLI to completion while this event loop keeps serving (stdin: `input`, then EOF)."""
    data = input.encode() if isinstance(input, str) else input
    proc = await spawn_cli(home, args, env, cwd, stdin=data)
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return CliResult(proc.returncode, out.decode(), err.decode())


def assert_one_line_error(result: CliResult, *needles: str, code: int = 2) -> None:
    """Exit code `code`, one `error:` line on stderr naming every needle, no traceback."""
    assert result.code == code, (result.code, result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in result.err + result.out
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def write_config(path: Path, base_url: str, extra: str = "") -> str:
    """A config file whose built-in `deepseek` route talks to `base_url`; returns its path."""
    path.write_text(f'[deepseek]\nbase_url = "{base_url}"\n{extra}', encoding="utf-8")
    return str(path)
