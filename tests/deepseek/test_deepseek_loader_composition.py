"""Spec G.6 (loader-composition.spec, 3): adapters built from configuration files.

modelwire's composition is a YAML document whose `deepseek` section feeds
`DeepSeekAdapter.from_config`, re-read with `update_config`; credentials come from an env mapping
(here loaded from a dotenv-style file), never from the configuration document itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from deepseek_helpers import HELLO, Server, collect, options, sse_response, start_server

from modelwire.adapters.deepseek import DeepSeekAdapter


def load_env(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def section(path: Path) -> dict[str, object]:
    doc = yaml.safe_load(path.read_text())
    return dict(doc["deepseek"])


async def test_g6_01_file_edits_reach_the_next_request(tmp_path: Path, server: Server) -> None:
    other = Server()
    runner = await start_server(other)
    try:
        cfg = tmp_path / "modelwire.yaml"
        creds = tmp_path / "credentials.env"
        cfg.write_text(f"deepseek:\n  base_url: {server.url}\n  api_key_env: DS_KEY\n")
        creds.write_text("DS_KEY=first-key\n")
        env = load_env(creds)
        adapter = DeepSeekAdapter.from_config(section(cfg), env=env)
        server.queue(sse_response(HELLO))
        await collect(adapter.stream(options()))
        cfg.write_text(f"deepseek:\n  base_url: {other.url}\n  api_key_env: DS_KEY\n")
        creds.write_text("DS_KEY=rotated-key\n")
        env.update(load_env(creds))
        adapter.update_config(section(cfg))
        other.queue(sse_response(HELLO))
        await collect(adapter.stream(options()))
        assert server.requests[0].headers["authorization"] == "Bearer first-key"
        assert other.requests[0].headers["authorization"] == "Bearer rotated-key"
        assert other.requests[0].headers["user-agent"] == server.requests[0].headers["user-agent"]
    finally:
        await runner.cleanup()


async def test_g6_02_stored_key_survives_restart_and_rotates(
    tmp_path: Path, server: Server
) -> None:
    creds = tmp_path / "credentials.env"
    creds.write_text("DEEPSEEK_API_KEY=kept-key\n")
    config = {"base_url": server.url}
    server.default = sse_response(HELLO)
    first = DeepSeekAdapter.from_config(config, env=load_env(creds))
    await collect(first.stream(options()))
    restarted = DeepSeekAdapter.from_config(config, env=load_env(creds))  # a fresh process
    await collect(restarted.stream(options()))
    creds.write_text("DEEPSEEK_API_KEY=rotated-after-restart\n")
    rotated = DeepSeekAdapter.from_config(config, env=load_env(creds))
    await collect(rotated.stream(options()))
    assert [r.headers["authorization"] for r in server.requests] == [
        "Bearer kept-key",
        "Bearer kept-key",
        "Bearer rotated-after-restart",
    ]


async def test_g6_03_entry_config_plus_env_key_without_providers(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "process-key")
    server.queue(sse_response(HELLO))
    adapter = DeepSeekAdapter.from_config({"base_url": server.url, "models": [{"id": "m1"}]})
    await collect(adapter.stream(options(model="m1")))
    assert server.requests[0].headers["authorization"] == "Bearer process-key"
    assert server.requests[0].json["model"] == "m1"
