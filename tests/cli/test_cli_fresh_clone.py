"""A fresh clone of the committed tree runs the README's two commands successfully, and then the
command the demo's last line suggests, pasted into a new shell (issue 30).

The clone checks out the commit the source repository has checked out (`HEAD`: `main` in CI, a
branch in a worktree), so what is tested is what is committed. Slow (it creates virtualenvs and
installs from PyPI): marked `slow`, skipped without `git`, without a commit, or without a
connection to the package index. Inside the clone the test
command runs its gates (ruff, mypy) and a small smoke selection of the suite, not the whole suite a
second time (the outer run is that); the clone skips this test (no recursion).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUARD = "MODELWIRE_IN_FRESH_CLONE"
SOURCE_ENV = "MODELWIRE_CLONE_SOURCE"
"""Clone this repository instead of the one holding the tests (e.g. a scratch copy)."""


SMOKE = (
    "tests/core/test_core_public_api.py",
    "tests/cli/test_cli_fresh_clone.py::test_readme_starts_with_exactly_the_two_commands",
)
"""What the clone's `./scripts/test` runs: the public names and the README's first block."""


def readme_commands(readme: str) -> list[str]:
    """The commands of the README's first fenced code block (comments stripped)."""
    match = re.search(r"```(?:bash|sh|console)?\n(.*?)```", readme, re.DOTALL)
    assert match is not None, "the README has no code block"
    lines = (line.split("#", 1)[0].strip() for line in match.group(1).splitlines())
    return [line for line in lines if line]


def test_readme_starts_with_exactly_the_two_commands() -> None:
    commands = readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert commands == ["./scripts/demo", "./scripts/test"]


def _index_reachable() -> bool:
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple")
    parts = urlsplit(index)
    host = parts.hostname or "pypi.org"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError:
        return False
    return True


@pytest.mark.slow
def test_fresh_clone_runs_the_readme_commands(tmp_path: Path) -> None:
    if os.environ.get(GUARD):
        pytest.skip("already running inside a fresh-clone check")
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    source = Path(os.environ.get(SOURCE_ENV) or ROOT)
    head = subprocess.run(
        [git, "-C", str(source), "rev-parse", "--verify", "--quiet", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    if head.returncode != 0:
        pytest.skip("the repository has no commit")
    if not _index_reachable():
        pytest.skip("the package index (PyPI) is not reachable")
    clone = tmp_path / "clone"
    for argv in (
        [git, "clone", "--quiet", "--no-checkout", str(source), str(clone)],
        [git, "-C", str(clone), "checkout", "--quiet", head.stdout.strip()],
    ):
        subprocess.run(argv, check=True, capture_output=True)
    drop = ("VIRTUAL_ENV", "PYTHONPATH", SOURCE_ENV)
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update({GUARD: "1", "PYTHON": sys.executable, "HOME": str(tmp_path / "home")})
    env["XDG_DATA_HOME"] = str(tmp_path / "home" / "data")
    env["MODELWIRE_TEST_WORKERS"] = "0"  # a few smoke tests: one pytest process is quicker
    commands = readme_commands((clone / "README.md").read_text(encoding="utf-8"))
    next_step = ""
    for command in [*commands, "the demo's last line"]:
        if command == "./scripts/test":
            command = " ".join([command, "-q", *SMOKE])
        if command == "the demo's last line":  # pasted into a new shell: nothing on PATH
            command = next_step
        done = subprocess.run(
            command,
            shell=True,
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        assert done.returncode == 0, (
            f"{command} failed:\n{done.stdout[-20000:]}\n{done.stderr[-4000:]}"
        )
        if command == "./scripts/demo":
            next_step = done.stdout.strip().splitlines()[-1].strip()
    assert next_step.startswith(".venv/bin/modelwire sessions show demo-"), next_step
    assert "550 minutes" in done.stdout and "you: My trip has three flights" in done.stdout
