"""`modelwire chat`: one-shot or interactive chat through an `Agent`, with Ctrl-C cancellation.

Routes come from `routes.build_routes` (the built-in `deepseek` route needs `DEEPSEEK_API_KEY`;
configured routes come from the config file). Every turn is written to the session log. Ctrl-C
during a stream cancels the turn: the agent loop commits the interrupted prefix, and the command
exits with code 130 (one-shot) or returns to the prompt (interactive). Ctrl-C at the prompt exits
with code 130; end of input (Ctrl-D) exits with 0.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from rich.console import Console
from rich.text import Text

from .config import load_config
from .errors import EXIT_FAILURE, EXIT_INTERRUPTED, fail
from .interrupt import run_interruptible
from .routes import BUILTIN_ROUTE, Route, build_routes

if TYPE_CHECKING:
    from ..agent import Agent
    from ..session import SessionLog
    from .live import LiveView

__all__ = ["ChatRequest", "choose_model", "run_chat"]

Outcome: TypeAlias = Literal["completed", "interrupted", "failed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """The parsed `chat` command line."""

    prompt: str | None
    provider: str | None
    model: str | None
    session_id: str | None
    system: str | None
    config_path: str | None
    log_option: str | None


async def choose_model(route: Route, wanted: str | None) -> str:
    """`wanted` if the route lists it (or lists nothing), else the route's first model.

    An id the route's catalog does not list is a one-line `CliError` naming route and model.
    """
    ids = [m.id for m in await route.adapter.list_models(route.name)]
    if wanted is None:
        if not ids:
            fail(f"route {route.name!r} lists no models: pass --model ID")
        return ids[0]
    if ids and wanted not in ids:
        fail(
            f"unknown model {wanted!r} for route {route.name!r} (known: {', '.join(ids)}; "
            f"see `modelwire models {route.name}`)"
        )
    return wanted


async def run_chat(request: ChatRequest) -> int:
    """Run the chat command; returns the exit code."""
    config = load_config(request.config_path)
    routes = build_routes(config)
    defaults = config.default
    name = request.provider or defaults.provider or BUILTIN_ROUTE
    route = routes.get(name)
    if route.missing_env is not None:
        fail(
            f"{route.missing_env} is not set: export {route.missing_env}=<your key> to use the "
            f"{name!r} route, or pick a configured route with --provider (see `modelwire providers`)"
        )
    default_model = defaults.model if defaults.provider in (None, name) else None
    model = await choose_model(route, request.model or default_model)
    system = request.system if request.system is not None else defaults.system

    from ..agent import Agent
    from ..retry import RetryPlugin
    from ..runtime import LlmRuntime
    from .demo import new_session_id
    from .live import LiveView
    from .logs import open_cli_log

    console = Console(highlight=False, soft_wrap=True)
    async with open_cli_log(request.log_option) as (log, _url):
        session_id = request.session_id or new_session_id("chat")
        runtime = LlmRuntime()
        routes.register(runtime, [name])
        view = LiveView(console)
        runtime.use(view.middleware)
        agent = Agent(
            runtime=runtime,
            log=log,
            provider=name,
            model=model,
            system=system,
            tools=[],
            plugins=[view, RetryPlugin()],
        )
        console.print(f"[dim]session {session_id} · {name}/{model}[/]")
        try:
            if request.prompt is not None:
                outcome = await _turn(agent, log, session_id, request.prompt, console, view)
                return {"completed": 0, "failed": EXIT_FAILURE, "interrupted": EXIT_INTERRUPTED}[
                    outcome
                ]
            return await _interactive(agent, log, session_id, console, view)
        finally:
            await agent.close()


async def _turn(
    agent: Agent, log: SessionLog, session_id: str, text: str, console: Console, view: LiveView
) -> Outcome:
    """Run one turn; SIGINT cancels it (the loop commits the interrupted prefix)."""
    result, interrupted = await run_interruptible(agent.run_turn(session_id, text))
    if result is None or interrupted:
        view.printer.close()
        console.print("[yellow]^C — cancelled; the partial answer is saved in the session[/]")
        return "interrupted"
    view.printer.close()
    kind = result.reason.kind
    if kind == "completed":
        return "completed"
    if kind == "aborted":
        return "interrupted"
    if kind == "max-tokens":
        console.print("[yellow]the answer hit the output-token limit[/]")
        return "completed"
    from ..session import TurnEnd
    from .render import turn_reason_text

    event = await log.latest(session_id, "turn/end")
    end = event.data if event is not None and isinstance(event.data, TurnEnd) else None
    detail = turn_reason_text(end.reason) if end is not None else kind
    console.print(Text(f"✗ the turn ended {detail}", style="bold red"))
    return "failed"


def _read_line(console: Console) -> str | None:
    """Read one prompt line; None at end of input. Ctrl-C raises KeyboardInterrupt."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return console.input("[bold green]you>[/] ")
    except EOFError:
        return None
    finally:
        signal.signal(signal.SIGINT, previous)


async def _interactive(
    agent: Agent, log: SessionLog, session_id: str, console: Console, view: LiveView
) -> int:
    console.print("[dim]type a message; Ctrl-C cancels a reply, Ctrl-D or /exit quits[/]")
    while True:
        try:
            line = _read_line(console)
        except KeyboardInterrupt:
            console.print()
            return EXIT_INTERRUPTED
        if line is None or line.strip() in ("/exit", "/quit"):
            console.print()
            return 0
        if not line.strip():
            continue
        await _turn(agent, log, session_id, line, console, view)
