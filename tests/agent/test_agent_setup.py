"""One-line setup: `open_runtime(config=None)` serves the built-in DeepSeek route, the config file's
routes and the installed catalog; `Agent.from_model("route:model")` adds the default log."""

from __future__ import annotations

import inspect
import json
import os
import warnings
from pathlib import Path

import pytest
from agent_helpers import of_type
from aiohttp import web
from test_agent_deepseek_scenarios import API_KEY, Handler, LoopbackServer, server, text_answer

import modelwire as mw
from modelwire.adapters.providers.catalog import load_catalog
from modelwire.agent import Agent, open_runtime
from modelwire.agent.setup import LazyLog
from modelwire.errors import HarnessError
from modelwire.session import MemoryLog, open_log

__all__ = ["server"]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh user config and data dir, and no modelwire variable from the outer environment."""
    for name in ("MODELWIRE_CONFIG", "MODELWIRE_LOG", "DEEPSEEK_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path


def _routes(rt: mw.LlmRuntime) -> set[str]:
    return {info.id for info in rt.list_providers()}


LOCAL = '[providers.local]\napi = "openai-completions"\nbase_url = "http://127.0.0.1:9/v1"\n'
LOCAL += 'models = [{ id = "qwen3:8b" }]\n'


async def test_without_config_the_builtin_deepseek_and_the_catalog_are_served() -> None:
    rt = mw.open_runtime()
    assert isinstance(rt, mw.LlmRuntime) and mw.open_runtime is open_runtime
    assert _routes(rt) == set(load_catalog().providers) | {"deepseek"}
    info = await rt.resolve_model_info("deepseek", "deepseek-v4-flash")
    assert info.id == "deepseek-v4-flash"


async def test_a_catalog_route_reads_its_key_from_the_environment() -> None:
    model = load_catalog().providers["openai"].models[0].id
    ask = mw.GenerateOptions("openai", model, (mw.user_message("x"),))
    result = await mw.open_runtime(env={}).generate(ask)
    assert isinstance(result.finish, mw.Error)
    assert result.finish.failure.code == "MISSING_CREDENTIAL"  # before any I/O


@pytest.mark.parametrize("where", ["argument", "env", "user-dir"])
def test_the_config_file_adds_its_routes(
    where: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = home / "config" / "modelwire" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(LOCAL, encoding="utf-8")
    if where == "env":
        monkeypatch.setenv("MODELWIRE_CONFIG", str(path))
    rt = mw.open_runtime(str(path) if where == "argument" else None)
    assert "local" in _routes(rt) and "deepseek" in _routes(rt)


def _name(rt: mw.LlmRuntime, route: str) -> str:
    (info,) = [p for p in rt.list_providers() if p.id == route]
    return info.name


def test_a_config_deepseek_provider_replaces_the_builtin_route() -> None:
    assert _name(mw.open_runtime({}), "deepseek") == "DeepSeek"  # the built-in adapter
    profile = {"api": "openai-completions", "base_url": "http://x/v1", "display_name": "Mine"}
    assert _name(mw.open_runtime({"providers": {"deepseek": profile}}), "deepseek") == "Mine"


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"extra": {}}, "unknown key 'extra'"),
        ({"deepseek": 3}, "deepseek must be a table"),
        ({"providers": {"local": {"api": "nope"}}}, 'provider "local" sets api "nope"'),
        ({"deepseek": {"base_url": "ftp://x"}}, "base_url"),
        ("missing.toml", "config file not found"),
    ],
    ids=["unknown-key", "not-a-table", "bad-profile", "bad-deepseek", "missing-file"],
)
def test_a_bad_config_is_invalid_config_naming_it(config: object, fragment: str) -> None:
    with pytest.raises(HarnessError) as info:
        mw.open_runtime(config)  # type: ignore[arg-type]
    assert info.value.code == "INVALID_CONFIG"
    assert fragment in info.value.message


@pytest.mark.parametrize("model", ["deepseek", ":m", "deepseek:", 42])
def test_from_model_needs_route_colon_model(model: object) -> None:
    with pytest.raises(HarnessError) as info:
        Agent.from_model(model, log="memory:")  # type: ignore[arg-type]
    assert info.value.code == "INVALID_CONFIG" and "route:model" in info.value.message


LOCAL_CONFIG = {
    "providers": {
        "local": {
            "api": "openai-completions",
            "base_url": "http://127.0.0.1:9/v1",
            "auth": "none",
            "models": [{"id": "qwen3:8b"}],
        }
    }
}


def test_from_model_splits_at_the_first_colon_and_takes_agent_options() -> None:
    agent = Agent.from_model(
        "local:qwen3:8b", log=MemoryLog(), config=LOCAL_CONFIG, max_steps=3, system="s"
    )
    assert (agent.provider, agent.model, agent.max_steps, agent.system) == (
        "local",
        "qwen3:8b",
        3,
        "s",
    )


async def test_from_model_runs_a_turn_on_the_default_log(
    server: LoopbackServer, home: Path
) -> None:
    server.handlers.append(text_answer("hi there"))
    config = {"deepseek": {"base_url": server.url, "api_key": API_KEY}}
    agent = Agent.from_model("deepseek:deepseek-v4-flash", config=config)
    assert isinstance(agent.log, LazyLog)
    result = await agent.run_turn("setup", "hello")
    assert (result.reason.kind, result.output) == ("completed", "hi there")
    await agent.close()
    assert agent.log.closed
    path = home / "data" / "modelwire" / "sessions.db"
    assert path.is_file()
    log = await open_log(f"sqlite:///{path}")
    try:
        assert of_type(await log.read("setup"), "turn/end")[-1].reason.kind == "completed"
    finally:
        await log.close()


def test_modelwire_log_names_the_default_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODELWIRE_LOG", "memory:")
    agent = Agent.from_model("deepseek:deepseek-v4-flash", config={})
    assert isinstance(agent.log, LazyLog) and agent.log.url == "memory:"


# ---- issue 30: one key store, the [default] model, routes first ---------------------------------


def _store_keys(home: Path, keys: dict[str, str], mode: int = 0o600) -> Path:
    path = home / "config" / "modelwire" / "keys.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(keys), encoding="utf-8")
    os.chmod(path, mode)
    return path


def _answer_recording(seen: list[str | None]) -> Handler:
    answer = text_answer("hi there")

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(request.headers.get("Authorization"))
        return await answer(request)

    return handle


@pytest.mark.parametrize("in_env", [False, True], ids=["stored", "environment-first"])
async def test_a_key_stored_with_keys_set_is_used_from_python_environment_first(
    server: LoopbackServer, home: Path, monkeypatch: pytest.MonkeyPatch, in_env: bool
) -> None:
    _store_keys(home, {"deepseek": "sk-stored-0123"})
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    if in_env:
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-env-0123")
    seen: list[str | None] = []
    server.handlers += [_answer_recording(seen), _answer_recording(seen)]
    config = {"deepseek": {"base_url": server.url}}
    ask = mw.GenerateOptions("deepseek", "deepseek-v4-flash", (mw.user_message("hi"),))
    (await mw.open_runtime(config).generate(ask)).raise_for_failure()
    agent = Agent.from_model("deepseek:deepseek-v4-flash", log="memory:", config=config)
    (await agent.run_turn("keys", "hello")).raise_for_failure()
    await agent.close()
    expected = "Bearer sk-env-0123" if in_env else "Bearer sk-stored-0123"
    assert seen == [expected, expected]


def test_a_key_file_others_can_read_warns_once_from_python(home: Path) -> None:
    path = _store_keys(home, {"openai": "sk-stored-0123"}, mode=0o644)
    with pytest.warns(UserWarning, match="keys.json holds API keys but has mode 0644") as caught:
        mw.open_runtime({})
    assert len(caught) == 1 and "sk-stored" not in str(caught[0].message)
    assert f"chmod 600 {path}" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mw.open_runtime({})  # once per file and process


def test_the_default_model_is_the_runtimes_and_from_models() -> None:
    config = {**LOCAL_CONFIG, "default": {"model": "local:qwen3:8b"}}
    assert mw.open_runtime(config).default_model == "local:qwen3:8b"
    agent = Agent.from_model(log="memory:", config=config)
    assert (agent.provider, agent.model) == ("local", "qwen3:8b")
    split = {**LOCAL_CONFIG, "default": {"provider": "local", "model": "qwen3:8b"}}
    assert mw.open_runtime(split).default_model == "local:qwen3:8b"
    assert mw.open_runtime({"default": {"model": "deepseek-v4-pro"}}).default_model == (
        "deepseek:deepseek-v4-pro"
    )
    with pytest.raises(HarnessError, match=r"no model: pass \"route:model\"") as info:
        Agent.from_model(log="memory:", config=LOCAL_CONFIG)
    assert info.value.code == "INVALID_CONFIG"


@pytest.mark.parametrize(
    ("default", "fragment"),
    [
        ({"model": "locl:qwen3:8b"}, "default.model 'locl:qwen3:8b': unknown route 'locl'"),
        ({"provider": "locl", "model": "x"}, "default.provider: unknown route 'locl'"),
        ({"model": "qwen3:8b"}, "unknown route 'qwen3'"),
        ({"modle": "local:qwen3:8b"}, "unknown key default.modle"),
        ({"model": 3}, "default.model must be a non-empty string"),
    ],
    ids=["route-typo", "provider-typo", "model-without-route", "key-typo", "not-a-string"],
)
def test_a_bad_default_is_invalid_config_naming_it(default: object, fragment: str) -> None:
    with pytest.raises(HarnessError) as info:
        mw.open_runtime({**LOCAL_CONFIG, "default": default})
    assert info.value.code == "INVALID_CONFIG"
    assert fragment in info.value.message
    assert "known routes: " in info.value.message or "default." in info.value.message


def test_from_model_refuses_a_route_typo_naming_the_known_routes() -> None:
    with pytest.raises(HarnessError) as info:
        Agent.from_model("locl:qwen3:8b", log="memory:", config=LOCAL_CONFIG)
    assert info.value.code == "NO_ADAPTER"
    assert "unknown route 'locl'" in info.value.message and "local" in info.value.message


def test_from_model_names_every_agent_option_so_a_type_checker_catches_a_typo() -> None:
    """Issue 30: no `**options` pass-through: every keyword of `Agent` is a named keyword of
    `from_model` with the same default, and a misspelt one is a TypeError (mypy: an error)."""
    own = inspect.signature(Agent.__init__).parameters
    named = inspect.signature(Agent.from_model).parameters
    assert not [p for p in named.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    options = {n: p for n, p in own.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(options) <= set(named)
    assert all(named[n].default == p.default for n, p in options.items())
    with pytest.raises(TypeError, match="max_step"):
        Agent.from_model("deepseek:deepseek-v4-flash", log="memory:", max_step=3)  # type: ignore[call-arg]
