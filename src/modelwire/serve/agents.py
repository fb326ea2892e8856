"""The agent endpoints of `modelwire serve`: agent turns for web frontends, streamed from the log.

`POST /v1/agents/{name}/chat` (the AI SDK's `{id, messages}`) checks the client's history against
the log (`chatbody.py`; a mismatch is 409), starts the turn as a task of the server (a client that
leaves does not cancel it; `POST .../chat/{session_id}/stop` does) and answers the turn's UI
message stream (`uistream.py`) from the log through the session's tail (`follow.py`).
`GET .../chat/{session_id}/stream` resumes the running turn after `Last-Event-ID` or
`?from_seq=` (a log seq; none: the whole turn), in any process on the same log database; 204 when
no turn runs. `POST .../chat/{session_id}/decisions` decides a waiting call and, once none waits,
resumes the turn. `POST /v1/agents/{name}/ag-ui` is the same turn as AG-UI events (`agui.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from aiohttp import web

from ..agent import Agent
from ..agent.approval import approval_state
from ..errors import HarnessError
from ..events import TurnEnd, TurnStart
from ..session.log import SessionLog
from ..workers.factory import AgentFactory
from .chatbody import (
    UiMessage,
    history_problem,
    logged_messages,
    parse_body,
    parse_decision,
    seed_messages,
)
from .follow import Encoder, Followers, TurnTail
from .handlers import GATEWAY, GRACE_MS
from .uistream import HEADERS, UiEncoder

__all__ = ["AGENTS", "AgentFactory", "AgentHost", "add_agent_routes"]

_STATUS: Final = {
    "SESSION_NOT_FOUND": 404,
    "UNKNOWN_CALL": 404,
    "NOTHING_TO_RESUME": 404,
    "ALREADY_DECIDED": 409,
    "TURN_IN_PROGRESS": 409,
    "TURN_PAUSED": 409,
    "APPROVAL_PENDING": 409,
    "STALE_WRITE": 409,
    "INVALID_SESSION_ID": 400,
    "INVALID_ARGS": 400,
}


def problem(status: int, code: str, message: str) -> web.Response:
    """A JSON error reply `{"error": {code, message}}`."""
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


class AgentHost:
    """The app's agents, their running turns and the session tails (one per session)."""

    def __init__(self, factories: Mapping[str, AgentFactory]) -> None:
        self.factories = dict(factories)
        self.agents: dict[str, Agent[Any]] = {}
        self.turns: dict[str, asyncio.Task[object]] = {}
        self.followers: Followers | None = None

    async def start(self, log: SessionLog) -> None:
        self.followers = Followers(log)
        for name, factory in self.factories.items():
            made = factory(log)
            self.agents[name] = await made if inspect.isawaitable(made) else made

    async def stop(self, grace_ms: int = 0) -> None:
        """Let running turns finish for `grace_ms`, then cancel them (each logs its abort)."""
        running = list(self.turns.values())
        if running and grace_ms > 0:
            await asyncio.wait(running, timeout=grace_ms / 1000)
        for task in list(self.turns.values()):
            task.cancel()
        for task in list(self.turns.values()):
            with contextlib.suppress(BaseException):
                await task
        if self.followers is not None:
            await self.followers.close()

    def run(self, session_id: str, work: Awaitable[object], tail: TurnTail) -> None:
        """Run `work` (a turn) as the server's task, not the request's; a turn that fails
        before its `turn/end` is written (refused: `TURN_PAUSED`, `TURN_IN_PROGRESS`, …) ends
        `tail`'s stream with the refusal."""

        async def turn() -> object:
            try:
                return await work
            except HarnessError as error:
                tail.fail_now(f"{error.code}: {error.message}")
                return None
            except Exception as error:  # the user's agent failed: its followers must hear it
                tail.fail_now(f"the turn failed: {type(error).__name__}")
                return None
            finally:
                if self.turns.get(session_id) is task:
                    del self.turns[session_id]

        task = asyncio.ensure_future(turn())
        self.turns[session_id] = task


AGENTS: Final = web.AppKey("agents", AgentHost)
UI: Final = "ui"
"""The tail kind of the UI message stream (AG-UI's is `agui.AGUI`)."""


def find_agent(request: web.Request) -> tuple[AgentHost, Agent[Any], str] | web.Response:
    """The app's host, the agent `{name}` names and the name, or the 404."""
    host = request.app[AGENTS]
    name = request.match_info["name"]
    agent = host.agents.get(name)
    if agent is None:
        known = ", ".join(sorted(host.agents)) or "none"
        return problem(404, "UNKNOWN_AGENT", f"no agent {name!r} on this server (agents: {known})")
    return host, agent, name


def _followers(host: AgentHost) -> Followers:
    assert host.followers is not None, "the app has started"
    return host.followers


async def stream(
    request: web.Request,
    host: AgentHost,
    tail: TurnTail,
    after: int | None,
    headers: Mapping[str, str] = HEADERS,
) -> web.StreamResponse:
    """Send `tail`'s frames after seq `after` to the client until the turn ends or it leaves."""
    response = web.StreamResponse(headers=headers)
    await response.prepare(request)
    async with _followers(host).follow(tail):
        with contextlib.suppress(ConnectionError):  # the client left: the turn goes on
            async for data in tail.after(after):
                await response.write(data)
            await response.write_eof()
    return response


def _encoder(session_id: str) -> Callable[[], Encoder]:
    return lambda: UiEncoder(session_id)


async def start_turn(
    host: AgentHost,
    agent: Agent[Any],
    sid: str,
    earlier: Sequence[UiMessage],
    text: str,
    kind: str,
    make: Callable[[], Encoder],
) -> TurnTail | web.Response:
    """Check `earlier` against the session's log (a new session is seeded from it), start the
    turn on `text` as the server's task, and return the tail its stream follows (or the refusal)."""
    log = agent.log
    if host.turns.get(sid) is not None:
        return problem(409, "TURN_IN_PROGRESS", f"session {sid!r} has a turn running")
    try:
        exists = await log.exists(sid)
        events = await log.read(sid, chunks=False) if exists else []
        if exists:
            paused = (await approval_state(log, sid)).waiting
            if paused:
                calls = ", ".join(p.call_id for p in paused)
                message = f"session {sid!r} is paused for approval of {calls}: decide them first"
                return problem(409, "TURN_PAUSED", message)
            why = history_problem(logged_messages(events), earlier)
            if why is not None:
                return problem(409, "HISTORY_MISMATCH", f"session {sid!r}: {why}")
        elif earlier:
            # conditional on an empty session: two first requests cannot both seed it
            await log.append_many(sid, seed_messages(earlier), barrier=True, expect_seq=0)
            events = await log.read(sid, chunks=False)
    except HarnessError as error:
        return problem(_STATUS.get(error.code, 500), error.code, error.message)
    base = events[-1].seq + 1 if events else 0
    tail = _followers(host).tail(sid, kind, base, make, fresh=True)
    host.run(sid, agent.run_turn(sid, text), tail)
    return tail


async def _chat(request: web.Request) -> web.StreamResponse:
    found = find_agent(request)
    if isinstance(found, web.Response):
        return found
    host, agent, _ = found
    body = parse_body(await request.read())
    if isinstance(body, str):
        return problem(400, "INVALID_REQUEST", body)
    sid = body.id
    text = body.messages[-1].text()
    tail = await start_turn(host, agent, sid, body.messages[:-1], text, UI, _encoder(sid))
    if isinstance(tail, web.Response):
        return tail
    return await stream(request, host, tail, None)


def _from_seq(request: web.Request) -> int | web.Response | None:
    raw = request.headers.get("Last-Event-ID") or request.query.get("from_seq")
    if raw is None or raw == "":
        return None
    if not raw.isdigit():
        return problem(400, "INVALID_REQUEST", f"Last-Event-ID / from_seq {raw!r} is not a seq")
    return int(raw)


async def turn_bounds(log: SessionLog, sid: str) -> tuple[int | None, int | None]:
    """The seqs of the session's last `turn/start` and last `turn/end` (None: none)."""
    start = await log.latest(sid, "turn/start")
    end = await log.latest(sid, "turn/end")
    return (
        start.seq if start is not None and isinstance(start.data, TurnStart) else None,
        end.seq if end is not None and isinstance(end.data, TurnEnd) else None,
    )


async def resume_tail(
    request: web.Request, kind: str, make: Callable[[], Encoder]
) -> tuple[AgentHost, TurnTail, int | None] | web.Response:
    """The tail a resume of `request`'s session follows, or the reply (204, 400, 404)."""
    found = find_agent(request)
    if isinstance(found, web.Response):
        return found
    host, agent, _ = found
    sid = request.match_info["session_id"]
    after = _from_seq(request)
    if isinstance(after, web.Response):
        return after
    running = _followers(host).running(sid, kind)
    if running is not None:
        return host, running, after
    try:
        if not await agent.log.exists(sid):
            return problem(404, "SESSION_NOT_FOUND", f"session {sid!r} does not exist")
        start, end = await turn_bounds(agent.log, sid)
    except HarnessError as error:
        return problem(_STATUS.get(error.code, 500), error.code, error.message)
    if start is None:
        return web.Response(status=204)
    ended = end is not None and end > start
    if ended and (after is None or after >= (end or 0)):
        return web.Response(status=204)
    return host, _followers(host).tail(sid, kind, start, make), after


async def _resume(request: web.Request) -> web.StreamResponse:
    sid = request.match_info["session_id"]
    found = await resume_tail(request, UI, _encoder(sid))
    if isinstance(found, web.Response):
        return found
    host, tail, after = found
    return await stream(request, host, tail, after)


async def _decisions(request: web.Request) -> web.StreamResponse:
    found = find_agent(request)
    if isinstance(found, web.Response):
        return found
    host, agent, _ = found
    sid = request.match_info["session_id"]
    decision = parse_decision(await request.read())
    if isinstance(decision, str):
        return problem(400, "INVALID_REQUEST", decision)
    try:
        if not await agent.log.exists(sid):
            return problem(404, "SESSION_NOT_FOUND", f"session {sid!r} does not exist")
        await agent.decide(sid, decision.call_id, decision.approve, decision.reason)
        waiting = (await approval_state(agent.log, sid)).undecided
    except HarnessError as error:
        return problem(_STATUS.get(error.code, 500), error.code, error.message)
    resumed = not waiting and host.turns.get(sid) is None
    last = await agent.log.read(sid, chunks=False)
    base = last[-1].seq + 1 if last else 0
    if resumed:
        tail = _followers(host).tail(sid, UI, base, _encoder(sid), fresh=True)
        host.run(sid, agent.resume_turn(sid), tail)
    return web.json_response(
        {
            "decided": decision.call_id,
            "waiting": [p.call_id for p in waiting],
            "resumed": resumed,
            "from_seq": base - 1,
        }
    )


async def _stop(request: web.Request) -> web.StreamResponse:
    found = find_agent(request)
    if isinstance(found, web.Response):
        return found
    host, _, _ = found
    sid = request.match_info["session_id"]
    task = host.turns.get(sid)
    if task is None:
        return problem(404, "NO_TURN_RUNNING", f"no turn of session {sid!r} runs on this server")
    task.cancel()
    return web.json_response({"stopped": sid})


def add_agent_routes(app: web.Application, factories: Mapping[str, AgentFactory]) -> None:
    """Register the agent endpoints and build the agents when the app starts (after the
    gateway, on its log)."""
    from .agui import ag_ui, ag_ui_resume

    host = AgentHost(factories)
    app[AGENTS] = host

    async def start(app: web.Application) -> None:
        await host.start(app[GATEWAY].log)

    async def stop(app: web.Application) -> None:
        await host.stop(app[GRACE_MS])

    app.on_startup.append(start)
    app.on_shutdown.append(stop)
    base = "/v1/agents/{name}"
    app.router.add_post(base + "/chat", _chat)
    app.router.add_get(base + "/chat/{session_id}/stream", _resume)
    app.router.add_post(base + "/chat/{session_id}/decisions", _decisions)
    app.router.add_post(base + "/chat/{session_id}/stop", _stop)
    app.router.add_post(base + "/ag-ui", ag_ui)
    app.router.add_get(base + "/ag-ui/{session_id}/stream", ag_ui_resume)
