"""`modelwire sessions resume ID`: continue the turn a dead process left open (`Agent.resume_turn`).

The route, model and system prompt come from the session's latest `request/header` (the request
the dead process was making), the route's adapter from the config file (as for `chat`). A retry
the dead process decided is honoured: only the rest of its wait. Ctrl-C cancels the resumed turn
(exit code 130). Output follows `chat`: the answer on stdout, the rest on stderr.

A session without an open turn is a one-line error (exit code 2) that says how its last turn
ended and why: completed, failed (with the failure), cancelled (with the reason recorded, e.g.
`Ctrl-C` or `stdout closed (broken pipe)`), or closed as interrupted because its process died and
a later turn was started.
"""

from __future__ import annotations

from rich.text import Text

from ..session import Event, TurnAborted, TurnEnd, TurnErrored, TurnInterrupted, TurnPaused
from .chatopts import CallOptions
from .config import load_config
from .errors import fail
from .render import failure_text
from .routes import build_routes

__all__ = ["last_turn_story", "resume_session"]


def last_turn_story(events: list[Event]) -> str:
    """How the session's last turn ended, in words."""
    end = next((e.data for e in reversed(events) if isinstance(e.data, TurnEnd)), None)
    if end is None:
        return "it has no turn"
    reason = end.reason
    where = f"turn {end.turn}"
    match reason:
        case TurnAborted(reason=cause):
            why = cause.reason or {"user": "by the user"}.get(cause.kind, f"by {cause.kind}")
            return f"{where} was cancelled ({why}); its partial answer is saved"
        case TurnInterrupted():
            return (
                f"{where} was closed as interrupted: the process running it stopped before the "
                "turn ended (killed or crashed), and a later turn closed it"
            )
        case TurnErrored(failure=failure):
            return f"{where} failed: {failure_text(failure)}"
        case TurnPaused():
            return (
                f"{where} is paused: tool calls wait for a person's decision (`modelwire "
                "sessions decide`); chat with the agent that has the tools continues it"
            )
        case _:
            return f"{where} ended {reason.kind}"


def _open_story(events: list[Event], turn: int) -> str:
    """Where the dead process stopped in the open turn."""
    last = events[-1] if events else None
    if last is None:
        return ""
    chunks = sum(
        1 for e in events if e.type == "assistant/chunk" and getattr(e.data, "turn", 0) == turn
    )
    streamed = f", after {chunks} streamed chunk(s)" if chunks else ""
    return (
        f"its process stopped before the turn ended (killed or crashed): last event "
        f"{last.type} at seq {last.seq}{streamed}"
    )


async def resume_session(
    session_id: str, *, config_path: str | None, log_option: str | None
) -> int:
    """Resume the open turn of `session_id`; returns the exit code."""
    config = load_config(config_path)
    routes = build_routes(config)

    from ..agent.request import LogView
    from .chatoutput import report_outcome
    from .chatsession import ChatSession
    from .chatview import ChatView, answer_sink
    from .logs import open_cli_log, shown_url
    from .sessions import read_session

    async with open_cli_log(log_option) as (log, url):
        events = await read_session(log, session_id, url)
        view = LogView()
        view.feed(events)
        turn = view.open_turn
        if turn is None:
            fail(
                f"session {session_id!r} in {shown_url(url)} has no open turn to resume: "
                f"{last_turn_story(events)} (continue the conversation with "
                f"`modelwire chat --session {session_id}`)"
            )
        header = view.latest_header
        if header is None:
            fail(f"session {session_id!r} has no request to resume from (no request/header)")
        name, model = header.config.provider, header.config.model
        route = routes.get(name)
        if route.missing_env is not None:
            fail(
                f"{route.missing_env} is not set: export {route.missing_env}=<your key> (or "
                f"`modelwire keys set {name}`) to resume session {session_id!r} on the "
                f"{name!r} route"
            )
        import sys

        live = ChatView(sink=answer_sink(sys.stdout), reasoning=True)
        chat = ChatSession(
            log=log,
            routes=routes,
            session_id=session_id,
            route=name,
            model=model,
            system=header.system,
            options=CallOptions(),
            tools=[],
            view=live,
        )
        live.console.print(
            Text(
                f"resuming turn {turn} of session {session_id} · {name}/{model} — "
                f"{_open_story(events, turn)}",
                style="dim",
            )
        )
        try:
            outcome = await chat.resume()
        finally:
            await chat.close()
    live.finish()
    report_outcome(outcome, chat)
    return outcome.exit_code
