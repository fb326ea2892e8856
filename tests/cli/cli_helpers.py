"""Helpers for the CLI tests (imported by the test modules and `conftest.py`): run `python -m modelwire.cli` as a subprocess in a clean environment.

Every run gets its own user data/config dirs (so the default log never touches the real home),
no provider keys, no colours, and a wide terminal so rich does not wrap lines.
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


RunCli = Callable[..., CliResult]


def make_runner(home: Path) -> RunCli:
    """A synchronous runner: `run(*args, env={...}, timeout=60) -> CliResult`."""

    def run(*args: str, env: Mapping[str, str] | None = None, timeout: float = 60) -> CliResult:
        proc = subprocess.run(
            [sys.executable, "-m", "modelwire.cli", *args],
            env=cli_env(home, env),
            cwd=home,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


async def spawn_cli(
    home: Path, args: Sequence[str], env: Mapping[str, str] | None = None
) -> asyncio.subprocess.Process:
    """Start the CLI without waiting (for tests that serve HTTP from this event loop)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "modelwire.cli",
        *args,
        env=cli_env(home, env),
        cwd=home,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def run_cli_async(
    home: Path, args: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 60
) -> CliResult:
    """Run the CLI to completion while this event loop keeps serving."""
    proc = await spawn_cli(home, args, env)
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return CliResult(proc.returncode, out.decode(), err.decode())


def assert_one_line_error(result: CliResult, *needles: str) -> None:
    """Exit code 2, one `error:` line on stderr naming every needle, no traceback."""
    assert result.code == 2, (result.code, result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in result.err + result.out
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
