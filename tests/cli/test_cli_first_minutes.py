"""The first five minutes on the command line (issue 30): routes first (a typo in the route is an
unknown route, listing the known ones), the config's `[default] model = "route:model"` (chat and
worker), `modelwire config path`, stored keys that others may read (a warning, as ssh gives), and
a bad `[default]`: one line, exit 2, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
from cli_helpers import RunCli, assert_one_line_error, run_cli_async

from modelwire.cli.demo_script import InjectedFailure, ScriptedReply, ScriptedStep, WireUsage
from modelwire.cli.demo_server import DemoServer

ROOT = Path(__file__).resolve().parents[2]
KEY = {"LOCAL_KEY": "local-key-0123"}
ANSWER = ScriptedStep(reply=ScriptedReply((), ("Olá!",), WireUsage(5, 2, 0, 0)))


def _config(tmp_path: Path, base_url: str, default: str = "") -> str:
    path = tmp_path / "config.toml"
    path.write_text(
        f'{default}\n[providers.local]\napi = "openai-completions"\nbase_url = "{base_url}"\n'
        'api_key_env = "LOCAL_KEY"\nmodels = [{ id = "qwen3:8b" }, { id = "llama3.2" }]\n',
        encoding="utf-8",
    )
    return str(path)


def test_a_typo_in_the_route_is_an_unknown_route_listing_the_known_ones(
    run_cli: RunCli, tmp_path: Path
) -> None:
    config = _config(tmp_path, "http://127.0.0.1:9/v1")
    log = tmp_path / "never.db"
    result = run_cli("chat", "-m", "locl:qwen3:8b", "hi", "--config", config, "--log", str(log))
    assert_one_line_error(result, "-m 'locl:qwen3:8b'", "unknown route 'locl'")
    assert "known routes: deepseek, local" in result.err
    assert "DEEPSEEK" not in result.err  # not a key of the route nobody asked for
    assert not log.exists()  # nothing written


async def test_the_default_model_route_colon_model_is_what_chat_uses(tmp_path: Path) -> None:
    async with DemoServer((ANSWER, ANSWER), api_key=KEY["LOCAL_KEY"]) as server:
        config = _config(tmp_path, server.base_url, '[default]\nmodel = "local:qwen3:8b"')
        result = await run_cli_async(tmp_path, ["chat", "Diz olá", "--config", config], KEY)
        assert (result.code, result.out.strip()) == (0, "Olá!"), result.err
        # a model id with a colon is a model of the default route when that route lists it
        other = ["chat", "-m", "llama3.2", "Diz olá", "--config", config, "--json"]
        shown = msgspec.json.decode((await run_cli_async(tmp_path, other, KEY)).out)
    assert [r["model"] for r in server.requests] == ["qwen3:8b", "llama3.2"]
    assert (shown["route"], shown["model"]) == ("local", "llama3.2")


async def test_the_worker_runs_the_default_model_until_the_queue_is_dry(tmp_path: Path) -> None:
    async with DemoServer((ANSWER,), api_key=KEY["LOCAL_KEY"]) as server:
        config = _config(tmp_path, server.base_url, '[default]\nmodel = "local:qwen3:8b"')
        env = {"MODELWIRE_CONFIG": config, "MODELWIRE_LOG": str(tmp_path / "jobs.db"), **KEY}
        submit = await run_cli_async(tmp_path, ["queue", "submit", "s1", "Diz olá"], env)
        ticket = submit.out.strip()
        worker = await run_cli_async(tmp_path, ["worker", "--until-idle"], env)
        assert worker.code == 0, worker.err
        assert "idle, stopping" in worker.err
        waited = await run_cli_async(tmp_path, ["queue", "wait", ticket, "--timeout", "5"], env)
    assert (waited.code, waited.out) == (0, "Olá!\n"), waited.err
    assert server.requests[0]["model"] == "qwen3:8b"


def test_a_default_naming_an_unknown_route_is_one_line_and_changes_nothing(
    run_cli: RunCli, tmp_path: Path
) -> None:
    config = _config(tmp_path, "http://127.0.0.1:9/v1", '[default]\nmodel = "locl:qwen3:8b"')
    db = tmp_path / "jobs.db"
    for args in (["chat", "hi", "--log", str(db)], ["worker", "--log", str(db)]):
        result = run_cli(*args, "--config", config)
        assert_one_line_error(result, f"{config}: [default] model", "unknown route 'locl'")
        assert not db.exists()


def test_config_path_names_the_file_and_whether_it_exists(run_cli: RunCli, tmp_path: Path) -> None:
    missing = run_cli("config", "path")
    expected = tmp_path / "config" / "modelwire" / "config.toml"
    assert (missing.code, missing.out) == (0, f"{expected}\n")
    assert "does not exist yet" in missing.err and not expected.exists()
    config = _config(tmp_path, "http://127.0.0.1:9/v1")
    named = run_cli("config", "path", "--json", env={"MODELWIRE_CONFIG": config})
    shown = msgspec.json.decode(named.out)
    assert (shown["path"], shown["exists"], shown["source"]) == (config, True, "$MODELWIRE_CONFIG")
    assert shown["default"] == str(expected)
    assert shown["keys"] == str(expected.with_name("keys.json"))


async def test_a_key_file_others_can_read_is_used_with_one_warning(tmp_path: Path) -> None:
    async with DemoServer((ANSWER,), api_key="sk-stored-0123") as server:
        config = tmp_path / "c.toml"
        config.write_text(f'[deepseek]\nbase_url = "{server.base_url}"\n', encoding="utf-8")
        stored = await run_cli_async(tmp_path, ["keys", "set", "deepseek"], input="sk-stored-0123")
        assert stored.code == 0, stored.err
        keys = tmp_path / "config" / "modelwire" / "keys.json"
        assert oct(keys.stat().st_mode & 0o777) == "0o600"
        os.chmod(keys, 0o644)
        result = await run_cli_async(tmp_path, ["chat", "hi", "--config", str(config)])
    assert (result.code, result.out.strip()) == (0, "Olá!"), result.err
    warnings = [line for line in result.err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {keys} holds API keys but has mode 0644, so other users can read it: "
        f"run `chmod 600 {keys}` (used anyway)"
    ]
    assert "sk-stored" not in result.err + result.out


def test_a_config_file_holding_a_key_that_others_can_read_warns_once(
    run_cli: RunCli, tmp_path: Path
) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[deepseek]\napi_key = "sk-literal-0123"\n', encoding="utf-8")
    os.chmod(config, 0o604)
    result = run_cli("providers", "--config", str(config))
    assert result.code == 0, result.err
    assert result.err.count("warning:") == 1 and f"{config} holds an API key" in result.err
    assert "sk-literal" not in result.err + result.out
    os.chmod(config, 0o600)
    assert "warning" not in run_cli("providers", "--config", str(config)).err


async def test_chat_with_a_key_in_a_config_others_can_read_warns_once_per_file(
    tmp_path: Path,
) -> None:
    async with DemoServer((ANSWER, ANSWER), api_key="sk-literal-0123") as server:
        config = tmp_path / "c.toml"
        config.write_text(
            f'[deepseek]\nbase_url = "{server.base_url}"\napi_key = "sk-literal-0123"\n',
            encoding="utf-8",
        )
        os.chmod(config, 0o640)  # group-readable is readable by others too
        args = ["chat", "hi", "--config", str(config)]
        result = await run_cli_async(tmp_path, args)
        os.chmod(config, 0o600)
        private = await run_cli_async(tmp_path, args)
    assert (result.code, result.out.strip()) == (0, "Olá!"), result.err
    warnings = [line for line in result.err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {config} holds an API key but has mode 0640, so other users can read it: "
        f"run `chmod 600 {config}` (used anyway)"
    ]
    assert "sk-literal" not in result.err + result.out
    assert (private.code, private.out.strip()) == (0, "Olá!"), private.err
    assert "warning" not in private.err


def test_a_credential_header_in_a_config_others_can_read_warns_too(
    run_cli: RunCli, tmp_path: Path
) -> None:
    config = tmp_path / "c.toml"
    route = (
        '[providers.gw]\napi = "openai-completions"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'models = [{ id = "m" }]\n'
    )
    for headers, warned in (
        ('{ "X-Gateway-Token" = "gw-literal-0123" }', True),
        ('{ Authorization = "Bearer gw-literal-0123" }', True),
        ('{ "X-Title" = "my app" }', False),
    ):
        config.write_text(f"{route}headers = {headers}\n", encoding="utf-8")
        os.chmod(config, 0o644)
        result = run_cli("providers", "--config", str(config))
        assert result.code == 0, result.err
        assert result.err.count("warning:") == (1 if warned else 0), (headers, result.err)
        assert "gw-literal" not in result.err + result.out


def test_json_usage_errors_are_a_json_object_on_stdout(run_cli: RunCli) -> None:
    cases = [
        (["chat", "--json", "-o", "temperature=hot", "hi"], "INVALID_ARGS", "temperature"),
        (["chat", "--json", "hi"], "MISSING_CREDENTIAL", "DEEPSEEK_API_KEY"),
        (["queue", "status", "--json", "--bogus"], "INVALID_ARGS", "--bogus"),
        (["chat", "--json", "-m", "locl:x", "hi"], "NO_ADAPTER", "unknown route 'locl'"),
    ]
    for args, code, needle in cases:
        result = run_cli(*args)
        assert_one_line_error(result, needle)
        shown = msgspec.json.decode(result.out)
        assert shown["exit_code"] == 2 and shown["error"]["code"] == code, (args, shown)
        assert needle in shown["error"]["message"]
        assert result.err == f"error: {shown['error']['message']}\n"
    assert run_cli("chat", "-o", "temperature=hot", "hi").out == ""  # no --json: stderr only


async def test_a_model_the_provider_does_not_know_exits_1_as_the_exit_code_table_says(
    tmp_path: Path,
) -> None:
    text = "The model `qwen3:8b` does not exist or you do not have access to it."
    missing = InjectedFailure(404, text, "invalid_request_error")
    step = ScriptedStep(reply=ANSWER.reply, failures=(missing,))
    async with DemoServer((step,), api_key=KEY["LOCAL_KEY"]) as server:
        config = _config(tmp_path, server.base_url)
        args = ["chat", "-m", "local:qwen3:8b", "hi", "--config", config, "--json"]
        result = await run_cli_async(tmp_path, args, KEY)
    assert result.code == 1, result.err
    assert msgspec.json.decode(result.out)["error"]["code"] == "MODEL_NOT_FOUND"
    assert "1 the provider or the turn failed" in (ROOT / "README.md").read_text()


def test_queue_list_and_cancel_from_the_shell(run_cli: RunCli, tmp_path: Path) -> None:
    env = {"MODELWIRE_LOG": str(tmp_path / "jobs.db")}
    first = run_cli("queue", "submit", "report-1", "first", env=env).out.strip()
    second = run_cli("queue", "submit", "report-2", "second", env=env).out.strip()
    assert run_cli("queue", "cancel", first, env=env).out == f"{first} cancelled\n"
    listed = run_cli("queue", "list", env=env).out.splitlines()
    assert listed[0].split() == ["TICKET", "STATE", "SESSION", "WORKER"]
    assert [line.split() for line in listed[1:]] == [
        [first, "cancelled", "report-1", "–"],
        [second, "queued", "report-2", "–"],
    ]
    shown = msgspec.json.decode(
        run_cli("queue", "list", "--state", "queued", "--json", env=env).out
    )
    assert [t["id"] for t in shown] == [second]
    before = run_cli("queue", "list", "--json", env=env).out
    for ticket, needle in ((first, "already cancelled"), ("tk_nope", "no ticket 'tk_nope'")):
        assert_one_line_error(run_cli("queue", "cancel", ticket, env=env), needle)
    assert run_cli("queue", "list", "--json", env=env).out == before  # nothing changed
    waited = run_cli("queue", "wait", first, env=env)
    assert_one_line_error(waited, f"ticket '{first}' cancelled (cancelled)", code=1)
    status = run_cli("queue", "status", env=env).out
    assert "cancelled           1" in status and "queued              1" in status
