"""Issue 4 scenario: a process SIGKILLed mid-stream, then a new process resuming the session.

A child process runs `Agent.run_turn` with the real `DeepSeekAdapter` against a loopback server
(in this test process) that streams its reply slowly and never finishes it; once the log shows
some of the attempt's `assistant/chunk` events, the child is SIGKILLed. The log must open cleanly
with contiguous seqs, every event decoding, and the killed turn open. A second child then runs a
new turn on the same session: the loop closes the dangling step and turn (`step/end`,
`turn/end {interrupted}`, the persistence repair of spec S.9), numbers the new turn from the log
(spec F1) and completes; the killed attempt's partial chunks never become a message nor reach
the next request. Runs on SQLite and PostgreSQL (skipped without `MODELWIRE_TEST_POSTGRES_URL`).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import of_type, types
from aiohttp import web
from crash_resume_child import API_KEY

from modelwire.agent.request import derive_messages
from modelwire.session import (
    AssistantChunk,
    Event,
    SessionLog,
    StepEnd,
    StepStart,
    TurnCompleted,
    TurnEnd,
    TurnInterrupted,
    TurnStart,
    open_log,
)
from modelwire.vocab import Finish, Message, TextBlock, TextDelta

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
CHILD = HERE / "crash_resume_child.py"
POSTGRES_URL = os.environ.get("MODELWIRE_TEST_POSTGRES_URL")

PARTIAL = [f"partial-{i:02d} " for i in range(40)]  # the reply the killed process never finishes
ANSWER = ["resumed ", "and ", "complete."]
FIRST, SECOND = "first question", "second question"
# Kill points: text deltas durable in the log before the SIGKILL (the finish is never sent).
KILL_POINTS = [pytest.param(5, id="mid-stream"), pytest.param(len(PARTIAL), id="before-finish")]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class StreamServer:
    """A DeepSeek-wire endpoint on 127.0.0.1: queued handlers answer requests in order.

    `bodies` holds every request body; `sent[i]` the content deltas offered to request `i`.
    `release` unblocks replies that hold their finish back (set at teardown).
    """

    url: str = ""
    bodies: list[dict[str, Any]] = field(default_factory=list)
    handlers: list[Handler] = field(default_factory=list)
    sent: list[list[str]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append(json.loads(await request.read()))
        assert self.handlers, "no response queued"
        return await self.handlers.pop(0)(request)

    def reply(self, words: Sequence[str], *, delay: float, finish: bool) -> Handler:
        """Stream `words` as content deltas `delay` s apart; without `finish`, hold until release."""
        sent: list[str] = []
        self.sent.append(sent)

        async def handle(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            try:
                await response.write(_event(_delta(role="assistant")))
                for word in words:
                    sent.append(word)  # before the write: the client may log it at once
                    await response.write(_event(_delta(content=word)))
                    await asyncio.sleep(delay)
                if not finish:
                    await self.release.wait()
                await response.write(_event(_delta("stop")) + b"data: [DONE]\n\n")
                await response.write_eof()
            except ConnectionError:  # the client process was killed mid-stream
                pass
            return response

        return handle


def _delta(finish: str | None = None, **fields: object) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


def _event(payload: dict[str, object]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


@pytest.fixture
async def server() -> AsyncIterator[StreamServer]:
    srv = StreamServer()
    app = web.Application()
    app.router.add_post("/chat/completions", srv.dispatch)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    srv.url = f"http://127.0.0.1:{port}"
    try:
        yield srv
    finally:
        srv.release.set()
        await runner.cleanup()


def _durable_backends() -> list[Any]:
    return [
        "sqlite",
        pytest.param(
            "postgres",
            marks=[
                pytest.mark.postgres,
                pytest.mark.skipif(
                    not POSTGRES_URL, reason="MODELWIRE_TEST_POSTGRES_URL is not set"
                ),
            ],
        ),
    ]


@pytest.fixture(params=_durable_backends())
def log_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A log URL two processes can share: a SQLite file, or the test PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'crash-resume.db'}"
    assert POSTGRES_URL
    return POSTGRES_URL


async def _spawn(url: str, sid: str, base_url: str, text: str) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        url,
        sid,
        base_url,
        text,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 15)
    except BaseException:
        await _kill(proc)
        raise
    if line != b"running\n":
        await _kill(proc)
        stderr = await proc.stderr.read()
        raise AssertionError(f"child failed to start: {line!r} {stderr.decode()}")
    return proc


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL `proc` unless it already exited, and reap it."""
    if proc.returncode is None:
        proc.send_signal(signal.SIGKILL)
    await proc.wait()


def _chunks(events: Sequence[Event]) -> list[tuple[int, AssistantChunk]]:
    """(seq, data) of every `assistant/chunk` event, in log order."""
    return [(e.seq, e.data) for e in events if isinstance(e.data, AssistantChunk)]


def _deltas(events: Sequence[Event], turn: int) -> list[str]:
    """The text deltas logged as `assistant/chunk` events of `turn`, in log order."""
    return [
        c.chunk.text
        for _, c in _chunks(events)
        if c.turn == turn and isinstance(c.chunk, TextDelta)
    ]


async def _wait_for_chunks(
    url: str, sid: str, proc: asyncio.subprocess.Process, count: int
) -> None:
    """Poll a connection of this process until the child's chunks are durable in the log."""
    log = await open_log(url)
    try:
        for _ in range(750):
            if proc.returncode is not None:
                raise AssertionError("the child exited before it was killed")
            if await log.exists(sid) and len(_deltas(await log.read(sid), 1)) >= count:
                return
            await asyncio.sleep(0.02)
        raise AssertionError("the child never logged its streamed chunks")
    finally:
        await log.close()


async def _kill_mid_stream(url: str, sid: str, server: StreamServer, count: int) -> None:
    proc = await _spawn(url, sid, server.url, FIRST)
    try:
        await _wait_for_chunks(url, sid, proc, count)
    finally:
        await _kill(proc)
    stderr = await proc.stderr.read()  # type: ignore[union-attr]
    assert proc.returncode == -signal.SIGKILL, stderr.decode()


async def _read_all(url: str, sid: str) -> list[Event]:
    """Open the log afresh (as a restarted process would) and decode every event of `sid`."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        raw.close()
    log: SessionLog = await open_log(url)
    try:
        return await log.read(sid)  # decodes every payload: a half-written event would raise
    finally:
        await log.close()


def _assert_contiguous(events: Sequence[Event]) -> None:
    assert [e.seq for e in events] == list(range(len(events)))


def _texts(messages: Sequence[Message]) -> list[tuple[str, str]]:
    return [
        (m.role, "".join(b.text for b in m.content if isinstance(b, TextBlock))) for m in messages
    ]


def _check_killed_turn(events: list[Event], server: StreamServer, count: int) -> None:
    _assert_contiguous(events)
    assert of_type(events, "turn/start") == [TurnStart(1)]
    assert of_type(events, "step/start") == [StepStart(1, 1)]
    for absent in ("turn/end", "step/end", "assistant/message"):
        assert absent not in types(events), absent
    assert types(events)[:3] == ["turn/start", "step/start", "user/message"]
    chunks = [c for _, c in _chunks(events)]
    assert {(c.turn, c.step, c.attempt) for c in chunks} == {(1, 1, 1)}
    assert not any(isinstance(c.chunk, Finish) for c in chunks)  # the reply never finished
    logged = _deltas(events, 1)
    # What the dead process logged is an in-order prefix of what the server sent, nothing torn.
    assert count <= len(logged) <= len(server.sent[0])
    assert logged == server.sent[0][: len(logged)]
    assert types(events)[-1] == "assistant/chunk"


@pytest.mark.parametrize("kill_after", KILL_POINTS)
async def test_sigkill_mid_stream_then_a_new_process_resumes_the_session(
    server: StreamServer, log_url: str, sid: str, kill_after: int
) -> None:
    server.handlers.append(server.reply(PARTIAL, delay=0.03, finish=False))
    await _kill_mid_stream(log_url, sid, server, kill_after)
    killed = await _read_all(log_url, sid)
    _check_killed_turn(killed, server, kill_after)
    partial = _deltas(killed, 1)

    # A new process resumes the session and runs the next turn to completion.
    server.handlers.append(server.reply(ANSWER, delay=0.0, finish=True))
    proc = await _spawn(log_url, sid, server.url, SECOND)
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 15)
    finally:
        await _kill(proc)
    assert proc.returncode == 0, stderr.decode()
    report = json.loads(stdout.decode().splitlines()[-1])
    assert report == {"turn": 2, "reason": "completed", "text": "".join(ANSWER)}

    events = await _read_all(log_url, sid)
    _assert_contiguous(events)
    assert events[: len(killed)] == killed  # nothing durable was rewritten or lost
    resumed = events[len(killed) :]
    # The repair closes the dead step and turn before the new turn opens.
    assert [e.data for e in resumed[:3]] == [
        StepEnd(1, 1),
        TurnEnd(1, TurnInterrupted()),
        TurnStart(2),
    ]
    assert types(resumed) == [
        "step/end",
        "turn/end",
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        *["assistant/chunk"] * (len(resumed) - 9),
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert of_type(events, "turn/start") == [TurnStart(1), TurnStart(2)]
    assert of_type(events, "step/start") == [StepStart(1, 1), StepStart(2, 1)]
    assert of_type(events, "step/end") == [StepEnd(1, 1), StepEnd(2, 1)]
    assert of_type(events, "turn/end") == [
        TurnEnd(1, TurnInterrupted()),
        TurnEnd(2, TurnCompleted()),
    ]
    (header,) = of_type(resumed, "request/header")
    assert header.reason == "resume"
    # Exactly one message: the new turn's, citing only its own chunks (first attempt of step 1).
    new_chunks = _chunks(resumed)
    assert {(c.turn, c.step, c.attempt) for _, c in new_chunks} == {(2, 1, 1)}
    (message,) = of_type(events, "assistant/message")
    assert (message.turn, message.step, message.attempt) == (2, 1, 1)
    assert message.interrupted is None
    assert message.source_event_seqs == tuple(seq for seq, _ in new_chunks)
    assert message.message.content == (TextBlock("".join(ANSWER)),)
    assert _texts(derive_messages(events)) == [
        ("user", FIRST),
        ("user", SECOND),
        ("assistant", "".join(ANSWER)),
    ]

    # The killed attempt's partial text never reached the resumed request.
    assert len(server.bodies) == 2
    sent_messages = server.bodies[1]["messages"]
    assert [m["role"] for m in sent_messages] == ["user", "user"]
    wire = json.dumps(server.bodies[1])
    assert FIRST in wire and SECOND in wire
    assert not any(word.strip() in wire for word in partial)
    assert API_KEY not in repr(events)
