"""A canary key and a canary password, swept through every failure path: they never appear in a
message, a repr, a chunk, a log event, an export file or CLI output.

A real aiohttp.web server on 127.0.0.1 (`reliability_echo`) fails with 401/429/503/500 and with
in-stream errors while echoing the credential it received in request-id headers, Retry-After and
the body. Every adapter (DeepSeek; providers over openai-completions, openai-responses and
anthropic-messages, with a configured gateway-token header as a second credential) is driven
through `LlmRuntime.stream`, `LlmRuntime.generate` and an `Agent` turn on a SQLite log file; the
session is then exported and shown by the CLI. The canaries are not shaped like API keys, so only
explicit redaction can hide them, and they are matched in any letter case.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from reliability_echo import IN_STREAM, SCENARIOS, EchoServer
from rich.pretty import pretty_repr

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.agent import Agent
from modelwire.cli.config import load_config
from modelwire.cli.routes import build_routes
from modelwire.errors import ErrorCode, HarnessError, LlmError, error_chain
from modelwire.runtime import LlmRuntime
from modelwire.session import open_log
from modelwire.session.export import export_session
from modelwire.vocab import Error, Finish, GenerateOptions, ModelDiscoveryRequest, user_message
from modelwire.workers import TurnQueue

KEY = f"canaryKEY{secrets.token_hex(12)}"
GATEWAY = f"canaryGW{secrets.token_hex(10)}"
PW = f"canaryPW{secrets.token_hex(8)}"
CANARIES = (KEY, GATEWAY, PW)
KEY_ENV = "CANARY_PROVIDER_KEY"
KINDS = ("deepseek", "openai-completions", "openai-responses", "anthropic-messages")
SRC = Path(__file__).resolve().parents[2] / "src"


def assert_clean(text: str, where: str) -> None:
    lowered = text.lower()
    for canary in CANARIES:
        assert canary.lower() not in lowered, f"a canary leaked into {where}: {text[:2000]}"


@pytest.fixture(autouse=True)
def _no_canary_in_log_records(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    for record in caplog.records:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += "".join(traceback.format_exception(record.exc_info[1]))
        assert_clean(text, f"log record {record.name}")


def _runtime(kind: str, url: str) -> tuple[LlmRuntime, GenerateOptions]:
    runtime = LlmRuntime()
    if kind == "deepseek":
        adapter = DeepSeekAdapter(api_key=KEY, base_url=url, env={"DEEPSEEK_API_KEY": KEY})
        runtime.register_adapter(["deepseek"], adapter)
        model = "deepseek-v4-flash"
    else:
        profile = {
            "api": kind,
            "base_url": url,
            "api_key_env": KEY_ENV,
            "headers": {"X-Gateway-Token": GATEWAY},
            "models": [{"id": "canary-model"}],
        }
        providers = ProvidersAdapter.from_config({"providers": {kind: profile}}, env={KEY_ENV: KEY})
        providers.register(runtime)
        model = "canary-model"
    return runtime, GenerateOptions(provider=kind, model=model, messages=(user_message("hi"),))


def _scan_error(err: BaseException, where: str) -> None:
    texts = [str(err), repr(err), error_chain(err), "".join(traceback.format_exception(err))]
    if isinstance(err, HarnessError):
        texts += [err.message, repr(err.failure)]
    for text in texts:
        assert_clean(text, where)


async def _cli(home: Path, *args: str) -> tuple[int, str]:
    """`python -m modelwire.cli args` in a clean environment (as tests/cli runs it)."""
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
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    text = out.decode() + err.decode()
    assert_clean(text, f"CLI output of {' '.join(args[:2])}")
    assert proc.returncode is not None
    return proc.returncode, text


async def _sweep_adapter(kind: str, server: EchoServer, log_url: str) -> str:
    """Every scenario through stream, generate and an Agent turn; returns the session id."""
    runtime, options = _runtime(kind, server.url)
    session_id = f"canary-{kind}"
    log = await open_log(log_url)
    agent = Agent(runtime=runtime, log=log, provider=options.provider, model=options.model)
    server.kind = kind
    try:
        for scenario in SCENARIOS:
            server.scenario = scenario
            where = f"{kind}/{scenario}"
            chunks = [chunk async for chunk in runtime.stream(options)]
            finish = chunks[-1]
            assert isinstance(finish, Finish) and isinstance(finish.reason, Error), (where, finish)
            failure = finish.reason.failure
            if scenario not in IN_STREAM:
                assert failure.status == int(scenario.split("-")[1]), where
                assert failure.request_id is None, where  # every id header echoed the key
                assert failure.provider_retry_after_ms is None, where
            assert_clean(repr(chunks), f"the chunks of {where}")
            assert_clean(msgspec.json.encode(chunks).decode(), f"the chunk JSON of {where}")
            try:  # a failure finish: raised as its LlmError, or returned as the result's finish
                generated = await runtime.generate(options)
            except LlmError as err:
                _scan_error(err, f"generate() of {where}")
            else:
                assert generated.finish.kind == "error", (where, generated.finish)
                assert_clean(repr(generated), f"the generate() result of {where}")
                assert_clean(pretty_repr(generated), f"the generate() result of {where}")
            result = await agent.run_turn(session_id, f"turn for {scenario}")
            assert result.reason.kind == "error", (where, result.reason)
            assert_clean(repr(result), f"the TurnResult of {where}")
        assert all(KEY in sent for sent in server.received), "the key was not sent"
        events = await log.read(session_id)
        ends = [e for e in events if e.type == "turn/end"]
        assert len(ends) == len(SCENARIOS)
        assert any(e.type == "assistant/chunk" and e.data.chunk.type == "finish" for e in events)
        for event in events:
            assert_clean(msgspec.json.encode(event).decode(), f"{kind} log event {event.type}")
            assert_clean(repr(event), f"the repr of {kind} log event {event.type}")
        export = Path(log_url.removeprefix("sqlite:///")).with_suffix(f".{kind}.jsonl")
        await export_session(log, session_id, export)
        assert_clean(export.read_text(encoding="utf-8"), f"the {kind} export file")
    finally:
        await agent.close()
        await log.close()
    return session_id


async def test_canary_key_never_leaks_from_any_failure_path(tmp_path: Path) -> None:
    log_url = f"sqlite:///{tmp_path / 'canary.db'}"
    async with EchoServer() as server:
        sessions = [await _sweep_adapter(kind, server, log_url) for kind in KINDS]
    runs = []
    for sid in sessions:
        export = tmp_path / f"{sid}.cli.jsonl"
        runs.append(_cli(tmp_path, "sessions", "show", sid, "--json", "--log", log_url))
        runs.append(_cli(tmp_path, "sessions", "show", sid, "--log", log_url))
        runs.append(_cli(tmp_path, "sessions", "export", sid, str(export), "--log", log_url))
    runs.append(_cli(tmp_path, "sessions", "list", "--log", log_url))
    for code, text in await asyncio.gather(*runs):
        assert code == 0, text
    for sid in sessions:
        assert_clean((tmp_path / f"{sid}.cli.jsonl").read_text(encoding="utf-8"), "a CLI export")


def _log_urls(tmp: Path) -> list[str]:
    return [
        f"postgresql://alice:{PW}@[broken/db",
        f"postgresql://alice:{PW}@127.0.0.1:1/db?password={PW}",
        f"postgresql://alice:{PW}@127.0.0.1:notaport/db",
        f"sqlite://admin:{PW}@h/x.db",
        f"sqlite:///{tmp}/x.db?password={PW}",
        f"sqlite:///{tmp}/x.db#{PW}",
        f"mysql://root:{PW}@db/x",
    ]


def _links(err: BaseException) -> list[BaseException]:
    """`err` and every exception its `__cause__` / `__context__` reach, suppressed or not."""
    found: list[BaseException] = []
    todo: list[BaseException | None] = [err]
    while todo:
        link = todo.pop()
        if link is not None and all(link is not seen for seen in found):
            found.append(link)
            todo += [link.__cause__, link.__context__]
    return found


async def test_canary_password_never_leaks_from_a_log_url(tmp_path: Path) -> None:
    for url in _log_urls(tmp_path):
        for opening in (open_log, TurnQueue.open):
            with pytest.raises(HarnessError) as info:
                await opening(url)
            assert info.value.code == ErrorCode.LOG_UNAVAILABLE, url
            for link in _links(info.value):  # a traceback prints the whole chain
                _scan_error(link, f"the cause chain of {opening.__qualname__}()")
                assert_clean(repr(link.args), f"the cause chain of {opening.__qualname__}()")
    runs = []
    for url in _log_urls(tmp_path):
        runs.append(_cli(tmp_path, "sessions", "list", "--log", url))
        if url.startswith("postgresql:"):  # the driver quotes these: tracebacks too
            runs.append(_cli(tmp_path, "sessions", "list", "--debug", "--log", url))
            runs.append(_cli(tmp_path, "queue", "status", "--debug", "--log", url))
    for code, text in await asyncio.gather(*runs):
        assert code != 0 and ("error:" in text or "Traceback" in text), text


def test_reprs_never_show_a_key_or_an_environment(tmp_path: Path) -> None:
    env = {"DEEPSEEK_API_KEY": KEY, KEY_ENV: KEY, "OTHER": GATEWAY}
    literal = DeepSeekAdapter(api_key=KEY, env=env)
    by_env = DeepSeekAdapter(env=env)
    by_env.update_config({"api_key": KEY, "base_url": "http://127.0.0.1:1"})
    profile = {
        "api": "anthropic-messages",
        "base_url": "http://127.0.0.1:1",
        "headers": {"Authorization": f"Bearer {KEY}", "X-Gateway-Token": GATEWAY},
        "models": [{"id": "m"}],
    }
    providers = ProvidersAdapter.from_config({"providers": {"p": profile}}, env=env)
    snapshot = providers.snapshot
    config_file = tmp_path / "modelwire.toml"
    config_file.write_text(
        f'[deepseek]\napi_key = "{KEY}"\n\n[providers.p]\napi = "openai-completions"\n'
        f'base_url = "http://127.0.0.1:1"\nheaders = {{ "X-Gateway-Token" = "{GATEWAY}" }}\n'
        'models = [{ id = "m" }]\n',
        encoding="utf-8",
    )
    cli_config = load_config(str(config_file))
    values: list[object] = [
        literal.config,
        by_env.config,
        snapshot,
        *snapshot.profiles.values(),
        *(m for p in snapshot.profiles.values() for m in p.models.values()),
        ModelDiscoveryRequest(provider="p", base_url="http://h", api="x", api_key=KEY),
        cli_config,
        build_routes(cli_config, env=env),
    ]
    for value in values:
        name = type(value).__name__
        for text in (repr(value), str(value), f"{value}", pretty_repr(value), pretty_repr([value])):
            assert_clean(text, f"the repr of {name}")
    assert "api_key='***'" in repr(literal.config)
    assert "env=<3 variables>" in repr(literal.config)
    assert "('X-Gateway-Token', '***')" in repr(snapshot.profiles["p"])
