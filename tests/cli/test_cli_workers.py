"""`modelwire worker` and `modelwire queue status|submit|wait` over a real SQLite file and a real
model: a loopback server speaking OpenAI's Chat Completions stream (keyless, answering
`echo: TEXT`), reached by an agent factory module written into the test's home.

The commands run as subprocesses (`cli_helpers`), with the home on PYTHONPATH for `--agent`;
the tests inspect the queue in-process with `TurnQueue`.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cli_helpers import (
    CliResult,
    assert_one_line_error,
    cli_env,
    on_path,
    run_cli_async,
    spawn_cli,
)

from modelwire.workers import TurnQueue

ROOT = Path(__file__).resolve().parents[2]

FACTORIES = """
import os

from modelwire import open_runtime
from modelwire.agent import Agent


def make(log):
    profile = {
        "api": "openai-completions",
        "base_url": os.environ["ECHO_BASE_URL"],
        "auth": "none",
        "models": [{"id": "echo-1"}],
    }
    return Agent(open_runtime(config={"providers": {"echo": profile}}), log, "echo", "echo-1")


async def make_async(log):
    return make(log)


def broken(log):
    raise RuntimeError("no model today")


NOT_CALLABLE = 42
"""


class EchoModel:
    """`POST /v1/chat/completions` (stream) answers `echo: <last user text>`; the first request
    whose text is in `stall_once` gets one chunk, then nothing until its client goes away."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.stall_once: set[str] = set()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.requests.append(body)
        user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        text = user if isinstance(user, str) else "".join(p.get("text", "") for p in user)
        head = {"id": "chatcmpl-echo", "object": "chat.completion.chunk", "model": body["model"]}

        def frame(payload: dict[str, object]) -> bytes:
            return b"data: " + json.dumps({**head, **payload}).encode() + b"\n\n"

        def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
            return frame({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        usage = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if text in self.stall_once:
            self.stall_once.discard(text)
            await response.write(chunk({"role": "assistant", "content": "echo"}))
            while request.transport is not None and not request.transport.is_closing():
                await asyncio.sleep(0.02)
            return response
        for part in (
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "echo: "}),
            chunk({"content": text}),
            chunk({}, "stop"),
            frame({"choices": [], "usage": usage}),
            b"data: [DONE]\n\n",
        ):
            await response.write(part)
        await response.write_eof()
        return response

    async def __aenter__(self) -> EchoModel:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


@pytest.fixture
async def echo() -> Any:
    async with EchoModel() as server:
        yield server


def _home(tmp_path: Path, echo: EchoModel) -> dict[str, str]:
    (tmp_path / "factories.py").write_text(FACTORIES, encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(
        f'[providers.local]\napi = "openai-completions"\nbase_url = "{echo.base_url}"\n'
        'auth = "none"\nmodels = [{ id = "qwen3:8b" }]\n',
        encoding="utf-8",
    )
    return {"ECHO_BASE_URL": echo.base_url, "PYTHONPATH": str(tmp_path)}


def _env(tmp_path: Path, extra: dict[str, str]) -> dict[str, str]:
    """`cli_env` with `extra`'s PYTHONPATH put in front of the tree's `src`."""
    env = dict(extra)
    base = cli_env(tmp_path)["PYTHONPATH"]
    if "PYTHONPATH" in env:
        env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{base}"
    return env


async def _cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    return await run_cli_async(tmp_path, args, _env(tmp_path, env or {}), timeout=60)


async def _wait(tmp_path: Path, db: Path, ticket: str, *extra: str) -> CliResult:
    """`queue wait TICKET` with a bound (a stuck worker fails the test with TIMEOUT, quickly)."""
    return await _cli(
        tmp_path, "queue", "wait", "--log", str(db), ticket, "--timeout", "30", *extra
    )


async def _counts(db: Path) -> dict[str, object]:
    async with await TurnQueue.open(f"sqlite:///{db}") as queue:
        counts = await queue.counts()
    return {
        "queued": counts.queued,
        "running": counts.running,
        "completed": counts.completed,
        "failed": counts.failed,
    }


async def _submit(db: Path, session: str, text: str) -> str:
    async with await TurnQueue.open(f"sqlite:///{db}") as queue:
        return (await queue.submit(session, text)).id


async def _stop(proc: asyncio.subprocess.Process) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_submit_run_wait_status_and_a_graceful_sigterm(
    tmp_path: Path, echo: EchoModel
) -> None:
    env = _home(tmp_path, echo)
    db = tmp_path / "jobs.db"
    tickets = []
    for session, text in (("s-one", "first question"), ("s-two", "second question")):
        submitted = await _cli(tmp_path, "queue", "submit", "--log", str(db), session, text)
        assert submitted.code == 0, submitted.err
        assert re.fullmatch(r"tk_[0-9a-f]{32}\n", submitted.out), submitted.out
        tickets.append(submitted.out.strip())
    queued = await _cli(tmp_path, "queue", "status", "--log", str(db), "--json")
    assert json.loads(queued.out)["queued"] == 2

    worker = await spawn_cli(
        tmp_path,
        ["worker", "--log", str(db), "--agent", "factories:make", "--concurrency", "2"],
        _env(tmp_path, env),
    )
    try:
        first = await _wait(tmp_path, db, tickets[0])
        second = await _wait(tmp_path, db, tickets[1], "--json")
        status = await _cli(tmp_path, "queue", "status", "--log", str(db), "--json")
        text = await _cli(tmp_path, "queue", "status", "--log", str(db))
    finally:
        code, err = await _stop(worker)

    assert first.code == 0, first.err
    assert first.out == "echo: first question\n"
    assert f"{tickets[0]} completed" in first.err and "session s-one" in first.err
    assert second.code == 0, second.err
    waited = json.loads(second.out)
    assert waited["state"] == "completed" and waited["output"] == "echo: second question"
    assert waited["session_id"] == "s-two" and waited["claims"] == 1
    counts = json.loads(status.out)
    assert counts == {
        "queued": 0,
        "running": 0,
        "completed": 2,
        "failed": 0,
        "by_worker": {},
        "expired": 0,
        "cancelled": 0,
        "paused": 0,
    }
    assert re.search(r"^completed\s+2$", text.out, re.MULTILINE), text.out

    assert code == 0, err
    lines = err.splitlines()
    assert lines and all(line.startswith("modelwire worker: ") for line in lines), err
    for ticket in tickets:
        assert any(f"claimed {ticket}" in line for line in lines), err
        assert any(f"finished {ticket} completed" in line for line in lines), err
    assert any("SIGTERM: stopping" in line for line in lines), err
    assert "stopped" in lines[-1]
    assert len(echo.requests) == 2


async def test_the_model_option_uses_the_config_routes_and_an_async_factory_works(
    tmp_path: Path, echo: EchoModel
) -> None:
    env = _home(tmp_path, echo)
    db = tmp_path / "jobs.db"
    by_model = await _submit(db, "m-one", "via the model option")
    worker = await spawn_cli(
        tmp_path,
        [
            "worker",
            "--log",
            str(db),
            "-m",
            "local:qwen3:8b",
            "--config",
            "config.toml",
            "-s",
            "Be terse.",
        ],
        _env(tmp_path, env),
    )
    try:
        done = await _wait(tmp_path, db, by_model)
    finally:
        code, err = await _stop(worker)
    assert done.code == 0 and done.out == "echo: via the model option\n", done.err
    assert code == 0, err
    assert echo.requests[-1]["model"] == "qwen3:8b"
    assert echo.requests[-1]["messages"][0] == {"role": "system", "content": "Be terse."}

    by_async = await _submit(db, "m-two", "via an async factory")
    worker = await spawn_cli(
        tmp_path,
        ["worker", "--log", str(db), "--agent", "factories:make_async"],
        _env(tmp_path, env),
    )
    try:
        done = await _wait(tmp_path, db, by_async)
    finally:
        code, err = await _stop(worker)
    assert done.code == 0 and done.out == "echo: via an async factory\n", done.err
    assert code == 0, err


async def _until(what: str, check: Any, timeout_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_sigterm_mid_turn_releases_the_lease_and_another_worker_finishes_the_turn(
    tmp_path: Path, echo: EchoModel
) -> None:
    env = _env(tmp_path, _home(tmp_path, echo))
    db = tmp_path / "jobs.db"
    ticket = await _submit(db, "s-slow", "a slow one")
    echo.stall_once.add("a slow one")
    args = ["worker", "--log", str(db), "--agent", "factories:make", "--grace-ms", "300"]
    first = await spawn_cli(tmp_path, args, env)
    await _until("the first model call", lambda: echo.requests)
    code, err = await _stop(first)
    assert code == 0, err
    assert f"released {ticket} (session s-slow) unfinished" in err
    left = json.loads((await _cli(tmp_path, "queue", "status", "--log", str(db), "--json")).out)
    # the stopped worker's ticket is no longer running under its name: an expired lease
    assert (left["running"], left["expired"], left["by_worker"]) == (0, 1, {})

    second = await spawn_cli(tmp_path, args, env)
    try:
        done = await _wait(tmp_path, db, ticket, "--json")
    finally:
        code, err = await _stop(second)
    assert done.code == 0, done.err
    status = json.loads(done.out)
    assert (status["state"], status["claims"]) == ("completed", 2)
    assert status["output"] == "echo: a slow one"
    assert code == 0 and f"took over {ticket}" in err, err


async def test_a_second_signal_exits_at_once_and_the_turn_is_resumed_elsewhere(
    tmp_path: Path, echo: EchoModel
) -> None:
    env = _env(tmp_path, _home(tmp_path, echo))
    db = tmp_path / "jobs.db"
    ticket = await _submit(db, "s-stuck", "stuck")
    echo.stall_once.add("stuck")
    args = ["worker", "--log", str(db), "--agent", "factories:make", "--lease-ms", "1500"]
    worker = await spawn_cli(tmp_path, args, env)
    await _until("the model call", lambda: echo.requests)
    worker.send_signal(signal.SIGTERM)
    assert worker.stderr is not None
    seen = b""
    while b"SIGTERM: stopping" not in seen:
        seen += await asyncio.wait_for(worker.stderr.readline(), 30)
    worker.send_signal(signal.SIGINT)
    rest = (await asyncio.wait_for(worker.stderr.read(), 30)).decode()
    assert await worker.wait() == 130, seen.decode() + rest
    assert rest.endswith("interrupted\n") and "SIGINT again: exiting now" in rest, rest
    assert "Traceback" not in rest and "released" not in rest

    second = await spawn_cli(tmp_path, args, env)
    try:
        done = await _wait(tmp_path, db, ticket, "--json")
    finally:
        code, err = await _stop(second)
    assert done.code == 0, done.err
    status = json.loads(done.out)
    assert (status["state"], status["claims"], status["output"]) == ("completed", 2, "echo: stuck")
    assert code == 0 and f"took over {ticket}" in err, err


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        pytest.param(["--agent", "factories"], ["'factories'", "MODULE:FACTORY"], id="no-colon"),
        pytest.param(
            ["--agent", "nowhere_mod:make"], ["'nowhere_mod:make'", "no module"], id="no-module"
        ),
        pytest.param(
            ["--agent", "factories:absent"],
            ["'factories:absent'", "no attribute"],
            id="no-attribute",
        ),
        pytest.param(
            ["--agent", "factories:NOT_CALLABLE"],
            ["'factories:NOT_CALLABLE'", "not a callable"],
            id="not-callable",
        ),
        pytest.param(
            ["--agent", "factories:broken"],
            ["'factories:broken'", "RuntimeError: no model today", "[INVALID_CONFIG]"],
            id="factory-raises",
        ),
        pytest.param([], ["--agent MODULE:FACTORY or --model ROUTE:MODEL"], id="no-agent"),
        pytest.param(
            ["--agent", "factories:make", "--model", "local:qwen3:8b"], ["only one"], id="both"
        ),
        pytest.param(
            ["--agent", "factories:make", "-s", "Be terse."],
            ["--system is for --model"],
            id="system-with-agent",
        ),
        pytest.param(
            ["--model", "qwen3"],
            ["DEEPSEEK_API_KEY is not set", "'deepseek' route"],
            id="a-model-of-the-default-route-needs-its-key",
        ),
        pytest.param(
            ["--model", "nowhere:x"],
            ["unknown route 'nowhere'", "known routes: deepseek"],
            id="unknown-route",
        ),
        pytest.param(
            ["--model", "local:nope", "--config", "config.toml"],
            ["'nope'", "local"],
            id="unknown-model",
        ),
        pytest.param(
            ["--agent", "factories:make", "--concurrency", "0"],
            ["concurrency must be a positive integer, got 0", "[INVALID_CONFIG]"],
            id="concurrency-0",
        ),
        pytest.param(
            ["--agent", "factories:make", "--lease-ms", "1000", "--renew-ms", "1000"],
            ["lease_ms (1000 ms) must be longer than its renewal interval", "[INVALID_CONFIG]"],
            id="lease-not-longer-than-renewal",
        ),
        pytest.param(
            ["--agent", "factories:make", "--grace-ms", "0"],
            ["grace_ms", "[INVALID_CONFIG]"],
            id="grace-0",
        ),
    ],
)
async def test_a_bad_worker_command_line_claims_nothing(
    tmp_path: Path, echo: EchoModel, args: list[str], needles: list[str]
) -> None:
    env = _home(tmp_path, echo)
    db = tmp_path / "jobs.db"
    await _submit(db, "s-bad", "never claimed")
    result = await _cli(tmp_path, "worker", "--log", str(db), *args, env=env)
    assert_one_line_error(result, *needles)
    assert await _counts(db) == {"queued": 1, "running": 0, "completed": 0, "failed": 0}
    assert echo.requests == []


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "--agent", "factories:make"],
        ["queue", "status"],
        ["queue", "submit", "s1", "hi"],
        ["queue", "wait", "tk_x"],
    ],
    ids=["worker", "status", "submit", "wait"],
)
async def test_a_memory_log_cannot_hold_a_queue(
    tmp_path: Path, echo: EchoModel, command: list[str]
) -> None:
    env = _home(tmp_path, echo)
    result = await _cli(tmp_path, *command, "--log", "memory:", env=env)
    assert_one_line_error(result, "memory:", "--log PATH")
    from_env = await _cli(tmp_path, *command, env={**env, "MODELWIRE_LOG": "memory:"})
    assert_one_line_error(from_env, "memory:")


async def test_unknown_tickets_empty_text_and_timeouts(tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    missing = await _cli(tmp_path, "queue", "wait", "--log", str(db), "tk_nope")
    assert_one_line_error(missing, "'tk_nope'", "[INVALID_ARGS]")
    assert not db.exists()  # a read command creates nothing
    empty = await _cli(tmp_path, "queue", "status", "--log", str(db), "--json")
    assert empty.code == 0 and json.loads(empty.out)["queued"] == 0 and not db.exists()

    ticket = await _submit(db, "s-wait", "nobody runs this")
    unknown = await _cli(tmp_path, "queue", "wait", "--log", str(db), "tk_nope")
    assert_one_line_error(unknown, "no ticket 'tk_nope'", "[INVALID_ARGS]")
    late = await _cli(tmp_path, "queue", "wait", "--log", str(db), ticket, "--timeout", "0.3")
    assert_one_line_error(late, ticket, "still queued", "[TIMEOUT]", code=1)
    blank = await _cli(tmp_path, "queue", "submit", "--log", str(db), "s-wait", "")
    assert_one_line_error(blank, "non-empty", "[INVALID_ARGS]")
    piped = await run_cli_async(
        tmp_path, ["queue", "submit", "--log", str(db), "s-pipe", "--json"], input="from stdin"
    )
    assert piped.code == 0, piped.err
    assert json.loads(piped.out)["session_id"] == "s-pipe"
    assert (await _counts(db))["queued"] == 2


async def test_a_failed_turn_exits_1_with_its_failure(tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    ticket = await _submit(db, "s-fail", "this one fails")
    async with await TurnQueue.open(f"sqlite:///{db}") as queue:
        claim = await queue.claim("tester", 30_000)
        assert claim is not None
        await queue.finish(claim, claim.lease, "failed", reason="error", error="HTTP 500: boom")
    result = await _cli(tmp_path, "queue", "wait", "--log", str(db), ticket)
    assert_one_line_error(result, ticket, "failed (error): HTTP 500: boom", code=1)
    as_json = await _cli(tmp_path, "queue", "wait", "--log", str(db), ticket, "--json")
    assert as_json.code == 1 and json.loads(as_json.out)["state"] == "failed"


@pytest.mark.parametrize(
    "command", [("worker",), ("queue", "status"), ("queue", "submit"), ("queue", "wait")]
)
async def test_help_lists_the_commands_with_examples(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    root = await _cli(tmp_path, "--help")
    listing = root.out.split("Commands:")[1]
    for name in ("worker", "queue"):
        line = next(line for line in listing.splitlines() if line.strip().startswith(name + " "))
        assert not line.rstrip().endswith("..."), line
    result = await _cli(tmp_path, *command, "--help")
    assert result.code == 0, result.err
    assert result.out.splitlines()[0].startswith(f"Usage: modelwire {' '.join(command)}")
    assert "{" not in result.out and "<str>" not in result.out, result.out
    assert f"modelwire {command[0]}" in result.out.split("Examples:")[1]


async def _readme_block(tmp_path: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """The README's Many workers block, run as one `bash -e` script with `modelwire` on PATH."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"## Many workers\n.*?```bash\n(.*?)```", readme, re.DOTALL)
    assert match is not None, "the README has no Many workers block"
    full = on_path(tmp_path, cli_env(tmp_path, env))
    proc = await asyncio.create_subprocess_exec(
        "bash", "-e", "-o", "pipefail", "-c", match.group(1),
        env=full, cwd=tmp_path, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="needs bash")
async def test_the_readme_block_runs_as_written(tmp_path: Path, echo: EchoModel) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[deepseek]\nbase_url = "{echo.base_url}"\n', encoding="utf-8")
    env = {"MODELWIRE_CONFIG": str(config), "DEEPSEEK_API_KEY": "sk-readme-0123456789"}
    code, out, err = await _readme_block(tmp_path, env)
    assert code == 0, f"{out}\n{err}"
    assert "echo: Summarize the quarterly report\n" in out
    assert re.search(r"^tk_\w+ +completed +report-42 +\S+:\d+", out, re.MULTILINE), out
    assert re.search(r"^completed\s+1$", out, re.MULTILINE), out
    assert "modelwire worker: claimed tk_" in err and "idle, stopping" in err
    assert "Traceback" not in err and (tmp_path / "jobs.db").is_file()


@pytest.mark.skipif(sys.platform == "win32", reason="needs bash")
async def test_the_readme_block_without_a_key_stops_at_the_worker_naming_it(
    tmp_path: Path,
) -> None:
    code, out, err = await _readme_block(tmp_path, {})
    assert code == 2, f"{out}\n{err}"
    assert out == ""  # `ticket=$(…)` took the submit's output; nothing after the worker ran
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: DEEPSEEK_API_KEY is not set"), last
