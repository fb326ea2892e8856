"""Log paths and URLs, `modelwire logs path`, and read-only or missing directories.

`--log` takes a plain path or `~`; `sqlite:///relative` that fails explains the four-slash form.
Read-only places give one clear line and exit 2 — except reading an existing log there, which
works. Permission bits do not bind root, so when the tests run as root the command runs as the
unprivileged `nobody` user (skipped where that is impossible).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from cli_helpers import CliResult, RunCli, assert_one_line_error, cli_env, modelwire_argv


def test_a_plain_path_and_tilde_are_sqlite_files(run_cli: RunCli, tmp_path: Path) -> None:
    made = run_cli("demo", "--delay-ms", "0", "--log", "~/plain.db")
    assert made.code == 0, made.err
    assert (tmp_path / "plain.db").is_file()  # HOME is tmp_path
    listed = run_cli("sessions", "list", "--log", str(tmp_path / "plain.db"), "--json")
    assert [s["session_id"][:5] for s in json.loads(listed.out)] == ["demo-"]
    relative = run_cli("sessions", "list", "--log", "plain.db", "--json")  # cwd is tmp_path
    assert json.loads(relative.out) == json.loads(listed.out)


def test_sqlite_urls_with_three_and_four_slashes(run_cli: RunCli, tmp_path: Path) -> None:
    assert run_cli("demo", "--delay-ms", "0", "--log", "sqlite:///rel.db").code == 0
    assert (tmp_path / "rel.db").is_file()
    absolute = f"sqlite:///{tmp_path / 'abs.db'}"  # sqlite:////tmp/… : four slashes
    assert absolute.startswith("sqlite:////")
    assert run_cli("demo", "--delay-ms", "0", "--log", absolute).code == 0
    assert (tmp_path / "abs.db").is_file()


def test_a_relative_sqlite_url_that_fails_explains_four_slashes(run_cli: RunCli) -> None:
    result = run_cli("sessions", "list", "--log", "sqlite:///tmp-nowhere/x.db")
    assert_one_line_error(
        result, "relative", "sqlite:////tmp-nowhere/x.db", "four slashes", "does not exist"
    )


@pytest.mark.parametrize(
    ("log", "needle"),
    [
        pytest.param("/no/such/dir/x.db", "/no/such/dir", id="missing-directory"),
        pytest.param("ftp://host/log", "ftp://host/log", id="unknown-scheme"),
        pytest.param("sqlite://host/x.db", "four slashes", id="sqlite-with-a-host"),
        pytest.param(".", "is a directory", id="a-directory"),
    ],
)
def test_bad_log_locations_are_one_line_errors(run_cli: RunCli, log: str, needle: str) -> None:
    assert_one_line_error(run_cli("sessions", "list", "--log", log), needle)


def test_logs_path_prints_the_default_log_and_creates_nothing(
    run_cli: RunCli, tmp_path: Path
) -> None:
    default = tmp_path / "data" / "modelwire" / "sessions.db"
    result = run_cli("logs", "path")
    assert result.code == 0, result.err
    assert result.out == f"{default}\n"
    assert not default.parent.exists()
    details = json.loads(run_cli("logs", "path", "--json").out)
    assert details == {
        "url": f"sqlite:///{default}",
        "path": str(default),
        "exists": False,
        "source": "default",
        "default": str(default),
    }
    env = run_cli("logs", "path", env={"MODELWIRE_LOG": "~/elsewhere.db"})
    assert env.out == f"{tmp_path / 'elsewhere.db'}\n"
    memory = run_cli("logs", "path", "--log", "memory:")
    assert memory.out == "memory:\n"


def test_sessions_list_on_a_fresh_machine_creates_no_file(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("sessions", "list")
    assert result.code == 0, result.err
    assert result.out.startswith("no sessions in ")
    assert not (tmp_path / "data").exists()


# ---- read-only places ---------------------------------------------------------------------


def _run(
    home: Path,
    *args: str,
    read_only: Sequence[Path] = (),
    input: str | None = None,
    env: dict[str, str] | None = None,
) -> CliResult:
    """Run the command with `home` as HOME and the `read_only` directories unwritable.

    As root (whom permission bits do not stop) each directory is bind-mounted read-only in a
    private mount namespace (`unshare`), so writes fail with EROFS, as on a read-only disk;
    otherwise the directories are made mode 0555 for the run.
    """
    argv = [*modelwire_argv(), *args]
    if read_only and os.geteuid() == 0:
        mounts = "; ".join(
            f"mount --bind {shlex.quote(str(d))} {shlex.quote(str(d))} && "
            f"mount -o remount,bind,ro {shlex.quote(str(d))}"
            for d in read_only
        )
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-ec"]
        argv += [f'{mounts}; exec "$@"', "sh", *modelwire_argv(), *args]
    modes = {d: d.stat().st_mode for d in read_only}
    try:
        if os.geteuid() != 0:
            for directory in read_only:
                directory.chmod(0o555)
        proc = subprocess.run(
            argv,
            env=cli_env(home, env),
            cwd=home,
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        for directory, mode in modes.items():
            directory.chmod(stat.S_IMODE(mode))
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def read_only_works(tmp_path: Path) -> None:
    """Skip where a directory cannot be made unwritable (root without mount namespaces)."""
    if os.geteuid() != 0:
        return
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    if shutil.which("unshare") is None:
        pytest.skip("running as root without `unshare`: cannot make a directory read-only")
    probe = _run(tmp_path, "--version", read_only=[probe_dir])
    if probe.code != 0:
        pytest.skip(f"cannot mount a directory read-only here: {probe.err.strip()[:200]}")


def _demo_session(home: Path, db: Path) -> str:
    made = _run(home, "demo", "--delay-ms", "0", "--log", str(db))
    assert made.code == 0, made.err
    return next(w for w in made.out.split() if w.startswith("demo-"))


def test_an_unwritable_home_is_one_clear_line(tmp_path: Path, read_only_works: None) -> None:
    for command in (("demo", "--delay-ms", "0"), ("chat", "hi")):
        result = _run(tmp_path, *command, read_only=[tmp_path], env={"DEEPSEEK_API_KEY": "k"})
        assert_one_line_error(
            result, "cannot create the session log directory", str(tmp_path / "data"), "--log"
        )
    listed = _run(tmp_path, "sessions", "list", read_only=[tmp_path])  # reading creates nothing
    assert listed.code == 0 and listed.out.startswith("no sessions"), listed.err


def test_an_existing_log_in_a_read_only_folder_can_be_read(
    tmp_path: Path, read_only_works: None
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "sessions.db"
    session_id = _demo_session(tmp_path, db)
    before = sorted(p.name for p in folder.iterdir())
    listed = _run(tmp_path, "sessions", "list", "--log", str(db), read_only=[folder])
    assert listed.code == 0, listed.err
    assert session_id in listed.out
    shown = _run(tmp_path, "sessions", "show", session_id, "--log", str(db), read_only=[folder])
    assert shown.code == 0 and "550 minutes" in shown.out, shown.err
    usage = _run(tmp_path, "sessions", "usage", session_id, "--log", str(db), read_only=[folder])
    assert usage.code == 0, usage.err
    wrote = _run(tmp_path, "demo", "--delay-ms", "0", "--log", str(db), read_only=[folder])
    assert_one_line_error(wrote, str(db), "read-only")
    assert sorted(p.name for p in folder.iterdir()) == before


def test_export_into_a_read_only_folder_names_the_target_only(
    tmp_path: Path, read_only_works: None
) -> None:
    db = tmp_path / "sessions.db"
    session_id = _demo_session(tmp_path, db)
    target_dir = tmp_path / "out"
    target_dir.mkdir()
    target = target_dir / "export.jsonl"
    args = ("sessions", "export", session_id, str(target), "--log", str(db))
    result = _run(tmp_path, *args, read_only=[target_dir])
    assert_one_line_error(result, str(target), "read-only")
    assert ".tmp" not in result.err
    assert list(target_dir.iterdir()) == []


def test_keys_set_with_a_read_only_config_dir_names_the_key_file(
    tmp_path: Path, read_only_works: None
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    args = ("keys", "set", "deepseek")
    result = _run(tmp_path, *args, read_only=[config], input="sk-stored-1\n")
    assert_one_line_error(result, str(config / "modelwire" / "keys.json"))
    assert "sk-stored-1" not in result.err
