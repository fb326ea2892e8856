"""Help that reads well, `--version`, `python -m modelwire`, and markup-safe listings."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from cli_helpers import RunCli, cli_env

COMMANDS = (
    ("demo",),
    ("chat",),
    ("replay",),
    ("providers",),
    ("models",),
    ("sessions", "list"),
    ("sessions", "show"),
    ("sessions", "usage"),
    ("sessions", "export"),
    ("sessions", "resume"),
    ("sessions", "decide"),
    ("sessions", "rm"),
    ("keys", "set"),
    ("keys", "list"),
    ("keys", "rm"),
    ("logs", "path"),
    ("worker",),
    ("queue", "status"),
    ("queue", "submit"),
    ("queue", "wait"),
    ("queue", "approve"),
    ("queue", "deny"),
)


def test_the_command_list_shows_whole_descriptions_and_exit_codes(run_cli: RunCli) -> None:
    result = run_cli("--help")
    assert result.code == 0, result.err
    listing = result.out.split("Commands:")[1]
    for name in ("demo", "chat", "sessions", "keys", "logs", "replay", "providers", "models"):
        line = next(line for line in listing.splitlines() if line.strip().startswith(name + " "))
        assert not line.rstrip().endswith("..."), line  # never cut
    assert "Exit codes: 0" in result.out and "130 cancelled" in result.out


@pytest.mark.parametrize("command", COMMANDS, ids=["-".join(c) for c in COMMANDS])
def test_every_command_has_examples_and_plain_placeholders(
    run_cli: RunCli, command: tuple[str, ...]
) -> None:
    result = run_cli(*command, "--help")
    assert result.code == 0, result.err
    usage = result.out.splitlines()[0]
    assert usage.startswith(f"Usage: modelwire {' '.join(command)}")
    assert "{" not in result.out and "<str>" not in result.out, result.out
    assert "Examples:" in result.out
    examples = result.out.split("Examples:")[1]
    assert f"modelwire {command[0]}" in examples


def test_version_matches_the_installed_package(run_cli: RunCli, tmp_path: Path) -> None:
    import modelwire

    assert isinstance(modelwire.__version__, str) and modelwire.__version__
    try:
        installed = version("modelwire")
    except PackageNotFoundError:
        installed = "0+unknown"
    assert modelwire.__version__ == installed
    result = run_cli("--version")
    assert result.code == 0 and result.out == f"modelwire {installed}\n"
    module = subprocess.run(
        [sys.executable, "-m", "modelwire", "--version"],
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert module.returncode == 0 and module.stdout == f"modelwire {installed}\n"


def test_python_m_modelwire_runs_the_cli(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "modelwire", "sessions", "list", "--log", "memory:"],
        env=cli_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no sessions in memory:")


def test_reading_the_version_keeps_import_modelwire_light() -> None:
    probe = (
        "import sys, modelwire\n"
        "light = 'importlib.metadata' not in sys.modules and 'asyncio' not in sys.modules\n"
        "v = modelwire.__version__\n"
        "print(light, type(v).__name__, 'asyncio' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["True", "str", "False"]


def test_catalog_listings_keep_their_bracketed_text(run_cli: RunCli) -> None:
    models = run_cli("models", "openai")
    assert models.code == 0, models.err
    assert "add a [providers.openai] section to your config file" in models.out
    listed = run_cli("providers")
    assert listed.code == 0, listed.err
    assert "[providers.<id>] section" in listed.out


def test_a_broken_pipe_on_a_listing_is_quiet(tmp_path: Path) -> None:
    from cli_helpers import modelwire_argv

    script = f"{' '.join(modelwire_argv())} --help | head -1"
    done = subprocess.run(
        ["bash", "-c", script], env=cli_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.stdout.startswith("Usage: modelwire")
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
