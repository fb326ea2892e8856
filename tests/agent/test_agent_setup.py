"""One-line setup: `open_runtime(config=None)` serves the built-in DeepSeek route, the config file's
routes and the installed catalog; `Agent.from_model("route:model")` adds the default log."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import of_type
from test_agent_deepseek_scenarios import API_KEY, LoopbackServer, server, text_answer

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
