"""`modelwire keys set | list | rm`: keys stored per route (mode 0600), read after the environment,
never printed."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from cli_helpers import RunCli, assert_one_line_error, run_cli_async, write_config

from modelwire.cli.demo_script import ScriptedReply, ScriptedStep, WireUsage
from modelwire.cli.demo_server import DemoServer

STORED = "sk-stored-0123456789"
STEP = ScriptedStep(reply=ScriptedReply((), ("ok",), WireUsage(3, 1, 0, 0)))


def _keys_file(home: Path) -> Path:
    return home / "config" / "modelwire" / "keys.json"


def test_keys_set_stores_the_key_with_mode_0600_and_never_prints_it(
    run_cli: RunCli, tmp_path: Path
) -> None:
    result = run_cli("keys", "set", "deepseek", input=f"{STORED}\n")
    assert result.code == 0, result.err
    assert STORED not in result.out + result.err
    file = _keys_file(tmp_path)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert json.loads(file.read_text(encoding="utf-8")) == {"deepseek": STORED}
    assert not [p for p in file.parent.iterdir() if p.name != "keys.json"]  # no temp file left
    listed = run_cli("keys", "list")
    assert listed.code == 0, listed.err
    assert STORED not in listed.out + listed.err
    row = next(line for line in listed.out.splitlines() if line.startswith("deepseek"))
    assert row.split() == ["deepseek", "DEEPSEEK_API_KEY", "yes", "–", "stored"]
    document = json.loads(run_cli("keys", "list", "--json").out)
    assert STORED not in json.dumps(document)
    (entry,) = [r for r in document["routes"] if r["route"] == "deepseek"]
    assert entry == {
        "route": "deepseek",
        "configured": True,
        "variable": "DEEPSEEK_API_KEY",
        "stored": True,
        "env": False,
        "used": "stored",
    }
    env_listed = run_cli("keys", "list", "--json", env={"DEEPSEEK_API_KEY": "sk-env"})
    (entry,) = [r for r in json.loads(env_listed.out)["routes"] if r["route"] == "deepseek"]
    assert entry["used"] == "env"


def test_keys_rm_forgets_the_key(run_cli: RunCli, tmp_path: Path) -> None:
    assert run_cli("keys", "set", "deepseek", input=STORED).code == 0
    removed = run_cli("keys", "rm", "deepseek")
    assert removed.code == 0, removed.err
    assert json.loads(_keys_file(tmp_path).read_text(encoding="utf-8")) == {}
    assert_one_line_error(run_cli("keys", "rm", "deepseek"), "no stored key", "'deepseek'")


def test_keys_set_refuses_bad_input(run_cli: RunCli, tmp_path: Path) -> None:
    assert_one_line_error(run_cli("keys", "set", "deepseek", input=""), "no key given")
    spaced = run_cli("keys", "set", "deepseek", input="sk-one two\n")
    assert_one_line_error(spaced, "contains characters")
    assert "sk-one" not in spaced.err
    assert_one_line_error(run_cli("keys", "set", "nowhere", input=STORED), "'nowhere'")
    config = tmp_path / "c.toml"
    config.write_text(
        '[providers.local]\napi = "openai-completions"\nbase_url = "http://127.0.0.1:9"\n'
        'models = [{ id = "m" }]\n',
        encoding="utf-8",
    )
    no_var = run_cli("keys", "set", "local", "--config", str(config), input=STORED)
    assert_one_line_error(no_var, "'local'", "api_key_env")
    assert not _keys_file(tmp_path).exists()


async def test_chat_uses_the_stored_key_after_the_environment(tmp_path: Path) -> None:
    from cli_helpers import make_runner

    assert make_runner(tmp_path)("keys", "set", "deepseek", input=STORED).code == 0
    async with DemoServer((STEP,), api_key=STORED) as server:
        config = write_config(tmp_path / "c.toml", server.base_url)
        args = ["chat", "hi", "--config", config, "--log", "memory:"]
        stored = await run_cli_async(tmp_path, args)
        assert stored.code == 0, stored.err
        assert stored.out == "ok\n"
        assert STORED not in stored.err
    async with DemoServer((STEP,), api_key="sk-from-env") as server:
        config = write_config(tmp_path / "c.toml", server.base_url)
        args = ["chat", "hi", "--config", config, "--log", "memory:"]
        env_wins = await run_cli_async(tmp_path, args, {"DEEPSEEK_API_KEY": "sk-from-env"})
        assert env_wins.code == 0, env_wins.err


async def test_a_stored_key_fills_a_configured_routes_variable(tmp_path: Path) -> None:
    from cli_helpers import make_runner

    async with DemoServer((STEP,), api_key=STORED) as server:
        config = tmp_path / "c.toml"
        config.write_text(
            f'[providers.local]\napi = "openai-completions"\nbase_url = "{server.base_url}"\n'
            'api_key_env = "LOCAL_KEY"\nmodels = [{ id = "m1" }]\n',
            encoding="utf-8",
        )
        run = make_runner(tmp_path)
        missing = run("chat", "hi", "-m", "local:m1", "--config", str(config), "--log", "memory:")
        assert_one_line_error(missing, "LOCAL_KEY", "modelwire keys set local")
        assert run("keys", "set", "local", "--config", str(config), input=STORED).code == 0
        args = ["chat", "hi", "-m", "local:m1", "--config", str(config), "--log", "memory:"]
        result = await run_cli_async(tmp_path, args)
        assert result.code == 0, result.err
        assert result.out == "ok\n"
