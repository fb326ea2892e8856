"""Bad input: one `error:` line naming the problem, exit code 2, no traceback unless --debug."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import RunCli, assert_one_line_error

KEY = {"DEEPSEEK_API_KEY": "sk-test"}


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_missing_config_file(run_cli: RunCli, tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.toml")
    assert_one_line_error(run_cli("chat", "hi", "--config", missing, env=KEY), missing)


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        pytest.param("bad.toml", "[providers\nx = 1\n", "not valid TOML", id="toml-syntax"),
        pytest.param("bad.yaml", "default: [unclosed\n", "not valid YAML", id="yaml-syntax"),
        pytest.param("bad.yml", "- a list\n", "must hold a table", id="yaml-not-a-table"),
        pytest.param("bad.toml", "colour = 'blue'\n", "colour", id="unknown-top-level-key"),
        pytest.param("bad.toml", "[default]\nmodle = 'x'\n", "default.modle", id="unknown-key"),
        pytest.param("bad.json", "{}", "must end in .toml", id="unknown-extension"),
        pytest.param(
            "bad.toml",
            '[providers.local]\napi = "openai-completions"\n',
            "local",
            id="providers-route-without-base-url",
        ),
    ],
)
def test_malformed_config_file(
    run_cli: RunCli, tmp_path: Path, name: str, text: str, needle: str
) -> None:
    config = _file(tmp_path, name, text)
    result = run_cli("chat", "hi", "--config", config, env=KEY)
    assert_one_line_error(result, needle)


def test_config_from_the_environment_is_checked_too(run_cli: RunCli, tmp_path: Path) -> None:
    missing = str(tmp_path / "gone.yaml")
    result = run_cli("providers", env={"MODELWIRE_CONFIG": missing})
    assert_one_line_error(result, missing)


@pytest.mark.parametrize(
    "command", [["chat", "hi", "--provider", "nowhere"], ["models", "nowhere"]]
)
def test_unknown_route(run_cli: RunCli, command: list[str]) -> None:
    result = run_cli(*command, env=KEY)
    assert_one_line_error(result, "'nowhere'", "deepseek")


def test_unknown_model(run_cli: RunCli) -> None:
    result = run_cli("chat", "hi", "--model", "deepseek-v0-imaginary", env=KEY)
    assert_one_line_error(result, "deepseek-v0-imaginary")


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        pytest.param("ftp://example/log", "ftp://example/log", id="unknown-scheme"),
        pytest.param("sqlite:////nonexistent-dir/x/y.db", "/nonexistent-dir/x", id="sqlite-no-dir"),
        pytest.param(
            "postgresql://modelwire:secret@127.0.0.1:9/db", "127.0.0.1:9", id="postgres-unreachable"
        ),
    ],
)
def test_unreachable_log_url(run_cli: RunCli, url: str, needle: str) -> None:
    result = run_cli("sessions", "list", "--log", url)
    assert_one_line_error(result, needle)
    assert "secret" not in result.err


@pytest.mark.parametrize(
    "command",
    [["sessions", "show", "x"], ["sessions", "usage", "x"], ["demo"], ["chat", "hi"]],
)
def test_every_log_command_checks_the_log_url(run_cli: RunCli, command: list[str]) -> None:
    result = run_cli(*command, "--log", "ftp://example/log", env=KEY)
    assert_one_line_error(result, "ftp://example/log")


def test_unknown_session(run_cli: RunCli, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    result = run_cli("sessions", "show", "no-such-session", "--log", url)
    assert_one_line_error(result, "no-such-session")


def test_usage_errors_are_one_line_too(run_cli: RunCli) -> None:
    assert_one_line_error(run_cli("chat", "--bogus"), "--bogus")
    assert_one_line_error(run_cli("sessions", "show"), "ID")
    assert_one_line_error(run_cli("demo", "--delay-ms", "-5"), "--delay-ms")


def test_debug_shows_the_traceback(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("sessions", "list", "--log", "ftp://x", "--debug")
    assert result.code != 0
    assert "Traceback" in result.err


def test_help_works(run_cli: RunCli) -> None:
    result = run_cli("--help")
    assert result.code == 0
    for command in ("demo", "chat", "sessions", "replay", "providers", "models"):
        assert command in result.out
