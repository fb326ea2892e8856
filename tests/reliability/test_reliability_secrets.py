"""Secret hygiene across the surface: CLI output, session-log payloads, errors and log records.

The suite's keys (`reliability_wire.SECRETS`) are distinctive strings; the providers' key is not
even shaped like a key, so only explicit redaction can hide it. Here `modelwire` runs as a
subprocess (`python -m modelwire.cli`) with the keys in its environment: a DeepSeek chat and a
providers chat that succeed, chats the server fails with a 401 or an in-stream error that both
*echo the caller's key back*, the same with ``--debug`` tracebacks, then `providers`, `models`,
`sessions list|show|usage|export` over the log they wrote. No output, no exported file and no
log payload may contain a key or its ``Authorization`` header value. (Every other test of the
suite scans its own failure messages, payloads and DEBUG log records the same way.)
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import msgspec
import pytest
from reliability_counts import assert_no_secret, bump
from reliability_scenarios import SCENARIOS, sse_response
from reliability_server import FaultServer
from reliability_wire import DEEPSEEK_KEY, KEY_ENV, PROVIDERS_KEY, good_events

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent, RequestErrorContext, Retry
from modelwire.retry import RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import open_log

SRC = Path(__file__).resolve().parents[2] / "src"
_ECHO_STATUS = next(s for s in SCENARIOS if s.name == "http-401-echoes-the-key")
_ECHO_STREAM = next(s for s in SCENARIOS if s.name == "stream-error-echoes-the-key")


async def cli(home: Path, *args: str, expect: int | None = 0) -> str:
    """Run `python -m modelwire.cli args` with both keys in its environment; stdout + stderr."""
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
        PYTHONPATH=str(SRC),
        DEEPSEEK_API_KEY=DEEPSEEK_KEY,
        **{KEY_ENV: PROVIDERS_KEY},
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "modelwire.cli",
        *args,
        env=env,
        cwd=home,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    text = out.decode() + err.decode()
    if expect is not None:
        assert proc.returncode == expect, (proc.returncode, text)
    else:
        assert proc.returncode != 0, text
    assert_no_secret(text, f"CLI output of {' '.join(args[:2])}")
    bump("cli runs")
    return text


def config(path: Path, url: str) -> str:
    path.write_text(
        f"""
[deepseek]
base_url = "{url}"
stream_idle_timeout_ms = 2000

[providers.rel-responses]
api = "openai-responses"
base_url = "{url}"
api_key_env = "{KEY_ENV}"
models = [{{ id = "rel-model" }}]

[providers.rel-anthropic]
api = "anthropic-messages"
base_url = "{url}"
api_key_env = "{KEY_ENV}"
models = [{{ id = "rel-model" }}]
""",
        encoding="utf-8",
    )
    return str(path)


async def test_secrets_never_reach_cli_output_or_the_session_log(
    tmp_path: Path, server: FaultServer
) -> None:
    cfg = config(tmp_path / "modelwire.toml", server.url)
    db = tmp_path / "chat.db"
    log = f"sqlite:///{db}"
    base = ("--config", cfg, "--log", log)

    server.behaviour = sse_response(good_events("deepseek", "deepseek says hi"))
    out = await cli(tmp_path, "chat", "hello", *base, "--session", "ok-deepseek", "--new")
    assert "deepseek says hi" in out
    server.behaviour = sse_response(good_events("openai-responses", "responses says hi"))
    out = await cli(
        tmp_path,
        "chat",
        "hello",
        "--provider",
        "rel-responses",
        *base,
        "--session",
        "ok-resp",
        "--new",
    )
    assert "responses says hi" in out

    failing = [
        ("deepseek", "deepseek", _ECHO_STATUS),
        ("rel-responses", "openai-responses", _ECHO_STATUS),
        ("rel-anthropic", "anthropic-messages", _ECHO_STATUS),
        ("deepseek", "deepseek", _ECHO_STREAM),
        ("rel-anthropic", "anthropic-messages", _ECHO_STREAM),
    ]
    for i, (route, kind, scenario) in enumerate(failing):
        for debug in ((), ("--debug",)):
            server.behaviour = scenario.behaviour(kind)
            await cli(
                tmp_path,
                "chat",
                "hello",
                "--provider",
                route,
                *base,
                "--session",
                f"fail-{i}-{len(debug)}",
                "--new",
                *debug,
                expect=None,
            )
    assert server.requests >= len(failing) * 2

    await cli(tmp_path, "providers", "--config", cfg)
    await cli(tmp_path, "providers", "--config", cfg, "--json")
    await cli(tmp_path, "models", "rel-responses", "--config", cfg)
    listing = await cli(tmp_path, "sessions", "list", "--log", log)
    assert "fail-0-0" in listing

    store = await open_log(log)
    try:
        infos = await store.sessions()
        assert len(infos) == 2 + len(failing) * 2
        ids = [info.session_id for info in infos]
        for first in range(0, len(ids), 2):  # two CLI processes at a time
            await asyncio.gather(
                *(
                    cli(tmp_path, "sessions", "show", sid, "--log", log)
                    for sid in ids[first : first + 2]
                )
            )
        await cli(tmp_path, "sessions", "usage", "ok-deepseek", "--log", log)
        await cli(tmp_path, "sessions", "usage", "fail-3-1", "--log", log)
        for info in infos:
            for event in await store.read(info.session_id):
                payload = msgspec.json.encode(event.data).decode()
                assert_no_secret(payload, f"log event {event.type}")
                bump("log events scanned")
    finally:
        await store.close()
    export = tmp_path / "fail.json"
    await cli(tmp_path, "sessions", "export", "fail-0-1", str(export), "--log", log)
    assert_no_secret(export.read_text(encoding="utf-8"), "an exported session")


async def test_secrets_never_reach_logging_records(
    server: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A 401 that echoes the key, retried in always mode while a downstream request-error
    listener fails with the failure text: the plugin's WARNING (captured at DEBUG with every
    other record and scanned by the suite's autouse fixture) carries no key."""
    server.queue(_ECHO_STATUS.behaviour("deepseek"))
    server.behaviour = sse_response(good_events("deepseek"))
    runtime = LlmRuntime()
    runtime.register_adapter(
        ["deepseek"],
        DeepSeekAdapter(
            api_key=DEEPSEEK_KEY,
            base_url=server.url,
            env={},
            retry_policy={"mode": "always", "backoff": {"initial_delay_ms": 1, "max_delay_ms": 2}},
        ),
    )
    log = await open_log("memory:")
    agent = Agent(
        runtime=runtime,
        log=log,
        provider="deepseek",
        model="deepseek-v4-flash",
        plugins=[RetryPlugin()],
    )

    async def choking_listener(ctx: RequestErrorContext, call_next: object) -> Retry | None:
        raise RuntimeError(f"observer choked on: {ctx.failure.message} ({ctx.failure.code})")

    agent.hooks.on_request_error.add(choking_listener)
    result = await agent.run_turn("logged", "hello")
    assert result.reason.kind == "completed", result.reason
    warnings = [r for r in caplog.records if "request-error listener failed" in r.getMessage()]
    assert warnings, "the retry plugin logged nothing"
    assert "401" in warnings[0].getMessage()
    for event in await log.read("logged"):
        assert_no_secret(msgspec.json.encode(event.data).decode(), f"log event {event.type}")
    await agent.close()
    await log.close()
