"""Issue 18, fallbacks: a process that dies after the fallback decision resumes on the new route.

The position in the chain is derived from the log: `resume_turn` in another process sends the
turn's next attempt to the `to` target of its latest `llm/fallback`, and the decision the dead
process made is honoured, not made again (no second `llm/fallback`, no retry of the old route).

The unit tests cut a real memory log at the death point; the crash test SIGKILLs a real child
process (this file, run as a script) on SQLite and PostgreSQL once its `llm/fallback` is durable
and its request to the new route is in flight (the server holds that request: no sleep decides
when to kill), then resumes the turn in a new process.

Child usage: `python test_fallback_resume.py run|resume LOG_URL SESSION_ID BASE_URL`; it prints one
JSON line `{"turn", "reason", "text"}` when the turn ends.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from aiohttp import web
from retry_helpers import check_invariants, durable_params, fail, log_url, of_type, text, types
from test_fallback_decisions import routes
from test_fallback_wire import KEYS, Handler, TwoRoutes, chat_answer, providers, server

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.agent import Agent
from modelwire.retry import FallbackPlugin, RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import Event, MemoryLog, open_log
from modelwire.wire.http import close_sessions

__all__ = ["server"]

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
SID = "fallback-resumed"


def _upto(events: Sequence[Event], name: str) -> list[Event]:
    """The events up to and including the first one of type `name`."""
    at = [e.type for e in events].index(name)
    return list(events[: at + 1])


async def _dead(events: Sequence[Event]) -> MemoryLog:
    log = MemoryLog()
    for event in events:
        await log.append(SID, event.data)
    return log


async def test_a_turn_cut_right_after_the_fallback_decision_resumes_on_the_new_route() -> None:
    source = routes(alpha=None, beta=None)
    source.adapters["alpha"].queue(*[fail("SERVER", "down", status=503)] * 3)
    source.adapters["beta"].queue(text("never asked"))
    plugins = (source.retry(), FallbackPlugin(chain=["beta:b1"]))
    await source.agent(*plugins).run_turn(SID, "hi")
    cut = _upto(await source.log.read(SID), "llm/fallback")

    log = await _dead(cut)
    rig = routes(log, alpha=None, beta=None)
    rig.adapters["beta"].queue(text("resumed on beta"))
    result = await rig.agent(rig.retry(), FallbackPlugin(chain=["beta:b1"])).resume_turn(SID)

    assert (result.turn, result.reason.kind, result.text) == (1, "completed", "resumed on beta")
    assert rig.served() == [("beta", "b1")]  # alpha is not asked again
    events = await log.read(SID)
    assert len(of_type(events, "llm/fallback")) == 1  # honoured, not decided twice
    assert [(r.provider, r.retry) for r in of_type(events, "llm/retry")] == [
        ("alpha", 1),
        ("alpha", 2),
    ]
    (message,) = of_type(events, "assistant/message")
    assert (message.attempt, message.message.source.provider) == (4, "beta")
    check_invariants(events)


async def test_a_resumed_turn_goes_on_from_its_fallback_position_in_the_chain() -> None:
    source = routes(alpha=None, beta=None, gamma=None)
    source.adapters["alpha"].queue(fail("AUTH", "bad alpha key"))
    source.adapters["beta"].queue(fail("AUTH", "bad beta key"))
    plugin = FallbackPlugin(chain=["beta:b1", "gamma:g1"], on=["AUTH"])
    await source.agent(source.retry(), plugin).run_turn(SID, "hi")
    events = await source.log.read(SID)
    first = [e.type for e in events].index("llm/fallback")
    cut = list(events[: first + 1]) + _upto(events[first + 1 :], "assistant/chunk")

    log = await _dead(cut)  # died after beta's attempt failed, before deciding on it
    rig = routes(log, alpha=None, beta=None, gamma=None)
    rig.adapters["gamma"].queue(text("gamma"))
    plugin = FallbackPlugin(chain=["beta:b1", "gamma:g1"], on=["AUTH"])
    result = await rig.agent(rig.retry(), plugin).resume_turn(SID)

    assert result.text == "gamma"
    assert rig.served() == [("gamma", "g1")]
    records = of_type(await log.read(SID), "llm/fallback")
    assert [(f.from_route, f.to_route, f.position, f.attempt) for f in records] == [
        ("alpha", "beta", 1, 1),
        ("beta", "gamma", 2, 2),  # decided by the resumed process, one position on
    ]


# ---- the real scenario: SIGKILL after the decision, `resume_turn` in a new process -----------


def _held(entered: asyncio.Event, release: asyncio.Event) -> Handler:
    """Hold the request (the new route's first) until the test releases it."""

    async def handle(request: web.Request) -> web.StreamResponse:
        entered.set()
        await release.wait()
        return web.Response(status=503)

    return handle


async def _child(mode: str, url: str, sid: str, base_url: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        mode,
        url,
        sid,
        base_url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
    )


@pytest.mark.parametrize("backend", durable_params())
async def test_a_worker_killed_after_the_fallback_resumes_the_turn_on_the_new_route(
    server: TwoRoutes, tmp_path: Path, sid: str, backend: str
) -> None:
    url = log_url(backend, tmp_path)
    entered, release = asyncio.Event(), asyncio.Event()
    server.queued["b"] += [_held(entered, release), chat_answer("resumed on beta")]
    proc = await _child("run", url, sid, server.url)
    exited = asyncio.create_task(proc.wait())
    held = asyncio.create_task(entered.wait())
    await asyncio.wait({exited, held}, timeout=120, return_when=asyncio.FIRST_COMPLETED)
    assert held.done() and not exited.done(), "the worker never asked the fallback route"
    log = await open_log(url)
    try:
        durable = await log.read(sid)  # read by another process's connection: durable
        proc.send_signal(signal.SIGKILL)
        await exited
        release.set()
        assert proc.returncode == -signal.SIGKILL
        assert len(of_type(durable, "llm/fallback")) == 1
        dead = await log.read(sid)
        assert "turn/end" not in types(dead) and of_type(dead, "assistant/message") == []
        assert len(server.bodies["a"]) == 3

        resumed = await _child("resume", url, sid, server.url)
        stdout, stderr = await asyncio.wait_for(resumed.communicate(), 120)
        assert resumed.returncode == 0, stderr.decode()
        report = json.loads(stdout.decode().splitlines()[-1])
        assert report == {"turn": 1, "reason": "completed", "text": "resumed on beta"}

        events = await log.read(sid)
        (record,) = of_type(events, "llm/fallback")  # the dead process's, honoured
        assert (record.to_route, record.attempt, record.position) == ("beta", 3, 1)
        assert [(r.provider, r.retry) for r in of_type(events, "llm/retry")] == [
            ("alpha", 1),
            ("alpha", 2),
        ]
        assert len(server.bodies["a"]) == 3  # the resumed process never asked alpha
        assert len(server.bodies["b"]) == 2 and server.bodies["b"][0] == server.bodies["b"][1]
        (message,) = of_type(events, "assistant/message")
        assert (message.attempt, message.message.source.provider) == (4, "beta")
        assert [h.header.config.provider for h in of_type(events, "request/header")] == [
            "alpha",
            "beta",  # the dead process's request to beta
            "beta",  # the resumed process's first request: straight to beta
        ]
        assert [(s.turn, s.step) for s in of_type(events, "step/start")] == [(1, 1)]
        assert [(e.turn, e.reason.kind) for e in of_type(events, "turn/end")] == [(1, "completed")]
        check_invariants(events)
    finally:
        release.set()
        await log.close()


# ---- the child process -----------------------------------------------------------------------


async def _instant(seconds: float) -> None:
    await asyncio.sleep(0)


async def _main(mode: str, url: str, session_id: str, base_url: str) -> None:
    log = await open_log(url)
    try:
        runtime = LlmRuntime()
        ProvidersAdapter.from_config(providers(base_url), env=KEYS).register(runtime)
        agent = Agent(
            runtime=runtime,
            log=log,
            provider="alpha",
            model="a1",
            plugins=[RetryPlugin(sleep=_instant), FallbackPlugin(chain=[("beta", "b1")])],
        )
        if mode == "run":
            result = await agent.run_turn(session_id, "hi")
        else:
            result = await agent.resume_turn(session_id)
        report = {"turn": result.turn, "reason": result.reason.kind, "text": result.text}
        print(json.dumps(report), flush=True)
        await agent.close()
    finally:
        await close_sessions()
        await log.close()


if __name__ == "__main__":
    asyncio.run(_main(*sys.argv[1:5]))
