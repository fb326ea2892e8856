"""`modelwire sessions resume ID`: continue the turn a dead process left open (`Agent.resume_turn`).

The route, model and system prompt come from the session's latest `request/header` (the request
the dead process was making), the route's adapter from the config file (as for `chat`). A retry
the dead process decided is honoured: only the rest of its wait. Ctrl-C cancels the resumed turn
(exit code 130). A session without an open turn is a one-line error (exit code 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from .config import load_config
from .errors import EXIT_FAILURE, EXIT_INTERRUPTED, fail
from .interrupt import run_interruptible
from .routes import build_routes

if TYPE_CHECKING:
    from ..agent import Agent
    from .live import LiveView

__all__ = ["resume_session"]


async def resume_session(
    session_id: str, *, config_path: str | None, log_option: str | None
) -> int:
    """Resume the open turn of `session_id`; returns the exit code."""
    config = load_config(config_path)
    routes = build_routes(config)

    from ..agent import Agent
    from ..agent.request import LogView
    from ..retry import RetryPlugin
    from ..runtime import LlmRuntime
    from .live import LiveView
    from .logs import open_cli_log, shown_url
    from .sessions import read_session

    console = Console(highlight=False, soft_wrap=True)
    async with open_cli_log(log_option) as (log, url):
        view = LogView()
        view.feed(await read_session(log, session_id, url))
        if view.open_turn is None:
            fail(f"session {session_id!r} in {shown_url(url)} has no open turn to resume")
        header = view.latest_header
        if header is None:
            fail(f"session {session_id!r} has no request to resume from (no request/header)")
        name, model = header.config.provider, header.config.model
        route = routes.get(name)
        if route.missing_env is not None:
            fail(
                f"{route.missing_env} is not set: export {route.missing_env}=<your key> to resume "
                f"session {session_id!r} on the {name!r} route"
            )
        runtime = LlmRuntime()
        routes.register(runtime, [name])
        live = LiveView(console)
        runtime.use(live.middleware)
        agent = Agent(
            runtime=runtime,
            log=log,
            provider=name,
            model=model,
            system=header.system,
            plugins=[live, RetryPlugin()],
        )
        console.print(
            f"[dim]resuming turn {view.open_turn} of session {session_id} · {name}/{model}[/]"
        )
        try:
            return await _resume(agent, session_id, console, live)
        finally:
            await agent.close()


async def _resume(agent: Agent, session_id: str, console: Console, live: LiveView) -> int:
    """Run `resume_turn`; SIGINT cancels it."""
    result, interrupted = await run_interruptible(agent.resume_turn(session_id))
    if result is None or interrupted:
        live.printer.close()
        console.print("[yellow]^C — cancelled; the partial answer is saved in the session[/]")
        return EXIT_INTERRUPTED
    live.printer.close()
    from .render import turn_reason_text

    kind = result.reason.kind
    if kind in ("completed", "max-tokens"):
        return 0
    if kind == "aborted":
        return EXIT_INTERRUPTED
    console.print(Text(f"✗ the turn ended {turn_reason_text(result.reason)}", style="bold red"))
    return EXIT_FAILURE
