"""`modelwire chat`: one prompt (argument and/or stdin) or an interactive session, via an `Agent`.

Which session: a new one (`chat-…`), `--session ID` (an existing one; `--new` to start one with
that id) or `-c` (the most recently active chat session; demo and replay sessions are skipped).
A continued session keeps its route, model and system prompt unless `-m`/`-s` say otherwise.
Which route and model: `-m route:model` (or `-m model`, or `--provider`), else the session's,
else the config file's `[default]`, else the built-in `deepseek` route and its first model.
`--mcp NAME` adds the tools of the config file's `[mcp.NAME]` server (started before the log is
opened, so one that cannot start fails first; stopped at the end). `--agent MODULE:FACTORY`
(as for `modelwire worker`) runs the user's agent instead, with its tools, route and model.
A turn that pauses for approvals asks y/N on a terminal, else prints how to decide
(`chatprompt.py`); a continued session whose last turn is paused is settled first (asked, or
resumed once decided; then PROMPT, if any, is the next turn).

Output and exit codes: see `chatview` (stdout holds only the answer) and `errors` (0 answer,
1 failed turn, 2 usage error, 130 cancelled).
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from rich.text import Text

from ..session import RequestHeader
from .attach import attachment_blocks, prompt_with_attachments
from .chatopts import combine_prompt, parse_options, read_stdin_prompt
from .chatoutput import outcome_json, print_answer, report_outcome
from .chatsession import AgentMaker, Approver, ChatSession
from .config import load_config
from .errors import fail
from .routes import BUILTIN_ROUTE, Route, RouteSet, build_routes, choose_model

if TYPE_CHECKING:
    from ..agent import Agent
    from ..session import SessionLog
    from ..workers import AgentFactory
    from .chatview import ChatView

__all__ = ["ChatRequest", "choose_model", "run_chat"]

SKIPPED_BY_CONTINUE = ("demo-", "replay-")
"""Session id prefixes `-c` never picks (the demo's and replay's own sessions)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """The parsed `chat` command line."""

    prompt: str | None
    provider: str | None = None
    model: str | None = None
    session_id: str | None = None
    new: bool = False
    continue_last: bool = False
    system: str | None = None
    options: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    mcp: tuple[str, ...] = ()
    attach: tuple[str, ...] = ()
    stream: bool = True
    reasoning: bool = True
    as_json: bool = False
    config_path: str | None = None
    log_option: str | None = None
    agent: str | None = None


def _check_agent(request: ChatRequest) -> None:
    """`--agent` brings its own route, model, system prompt, tools and options."""
    flags = (
        ("-m", request.model),
        ("--provider", request.provider),
        ("-s", request.system),
        ("--tool", request.tools),
        ("--mcp", request.mcp),
        ("-o", request.options),
    )
    given = [flag for flag, value in flags if value]
    if given:
        fail(
            f"--agent {request.agent} brings its own route, model, system prompt, tools and "
            f"options: drop {', '.join(given)}"
        )


async def _pick_route(
    request: ChatRequest, routes: RouteSet, header: RequestHeader | None
) -> tuple[Route, str, str | None]:
    """The route, model and system prompt of the first turn (see the module docstring)."""
    default_route, default_model = await routes.default()
    previous = header.header.config if header is not None else None
    base = request.provider or (previous.provider if previous else None)
    base = base or default_route or BUILTIN_ROUTE
    name, model = base, None
    if request.model is not None:
        name, model = await routes.parse(request.model, base, "-m")
        if request.provider is not None and name != request.provider:
            fail(
                f"-m {request.model!r} names route {name!r} but --provider says {request.provider!r}"
            )
    route = routes.get(name, "--provider" if request.provider else None)
    if route.missing_env is not None:
        var = route.missing_env
        fail(
            f"{var} is not set: export {var}=<your key> or store one with `modelwire keys set "
            f"{name}` to use the {name!r} route, or pick another route with -m ROUTE:MODEL "
            "(see `modelwire providers`)",
            code="MISSING_CREDENTIAL",
        )
    if model is None and previous is not None and previous.provider == name:
        model = previous.model
    if model is None and default_route in (None, name):
        model = default_model
    chosen = await choose_model(route, model)
    system = request.system
    if system is None:
        system = header.header.system if header is not None else routes.config.default.system
    return route, chosen, system or None


async def _pick_session(
    log: SessionLog, url: str, request: ChatRequest
) -> tuple[str, RequestHeader | None]:
    from .demo import new_session_id
    from .logs import shown_url

    if request.continue_last:
        infos = [
            i for i in await log.sessions() if not i.session_id.startswith(SKIPPED_BY_CONTINUE)
        ]
        if not infos:
            fail(f"no chat session to continue in {shown_url(url)} (start one without -c)")
        session_id = max(infos, key=lambda i: (i.last_time, i.session_id)).session_id
    elif request.session_id is not None:
        session_id = request.session_id
        exists = await log.exists(session_id)
        if exists and request.new:
            fail(
                f"session {session_id!r} already exists in {shown_url(url)}: drop --new to continue it"
            )
        if not exists and not request.new:
            fail(
                f"no session {session_id!r} in {shown_url(url)} (pass --new to start a session "
                "with this id; see `modelwire sessions list`)",
                code="SESSION_NOT_FOUND",
            )
        if not exists:
            return session_id, None
    else:
        return new_session_id("chat"), None
    latest = await log.latest(session_id, "request/header")
    header = latest.data if latest is not None and isinstance(latest.data, RequestHeader) else None
    return session_id, header


async def run_chat(request: ChatRequest) -> int:
    """Run the chat command; returns the exit code."""
    from .logs import open_cli_log
    from .mcp import chosen_servers, running
    from .tools import resolve_tools

    if request.continue_last and request.session_id is not None:
        fail("-c continues the most recent session and --session names one: pass only one")
    if request.new and request.session_id is None:
        fail("--new starts the session named by --session ID: pass --session too")
    interactive = request.prompt is None and sys.stdin is not None and sys.stdin.isatty()
    if interactive and request.as_json:
        fail("--json prints one answer: pass PROMPT or pipe the prompt on stdin")
    continuing = request.continue_last or request.session_id is not None
    prompt = None
    if not interactive:
        piped = read_stdin_prompt()
        if request.prompt is not None or not continuing or (piped or "").strip():
            prompt = combine_prompt(request.prompt, piped)  # else: settle a paused turn only
    if request.attach and prompt is None:
        fail("--attach sends files with one prompt: pass PROMPT or pipe the prompt on stdin")
    attached = attachment_blocks(request.attach)
    options = parse_options(request.options)
    tools = resolve_tools(request.tools)
    config = load_config(request.config_path)
    routes = build_routes(config)
    servers = chosen_servers(config, request.mcp)
    factory = None
    if request.agent is not None:
        from .worker import load_factory

        _check_agent(request)
        factory = load_factory(request.agent)
    elif not continuing:  # a missing key or unknown model fails before the log is touched
        await _pick_route(request, routes, None)
    async with running(servers), open_cli_log(request.log_option) as (log, url):
        session_id, header = await _pick_session(log, url, request)
        if factory is None:
            route, model, system = await _pick_route(request, routes, header)
            name = route.name
        else:
            name, model, system = "", "", None  # the agent's, once built
        chat = ChatSession(
            log=log,
            routes=routes,
            session_id=session_id,
            route=name,
            model=model,
            system=system,
            options=options,
            tools=tools,
            mcp_servers=servers,
            view=_view(request),
            factory=None if factory is None else _maker(factory),
            agent_spec=request.agent,
            approver=_approver(),
        )
        try:
            await chat.start()
            if not request.as_json:
                note = " (continued)" if header is not None else ""
                chat.view.console.print(
                    Text(f"session {session_id}{note} · {chat.route}/{chat.model}", style="dim")
                )
            outcome = await chat.paused()  # a paused last turn first: asked, or resumed
            if outcome is None and prompt is None and not interactive:
                fail("empty prompt (stdin holds no text): pass PROMPT or pipe text on stdin")
            if outcome is None or (outcome.kind == "completed" and (prompt or interactive)):
                if prompt is None:
                    from .interactive import run_interactive

                    return await run_interactive(chat, stream=request.stream)
                outcome = await chat.send(prompt_with_attachments(prompt, attached))
        finally:
            await chat.close()
    if request.as_json:
        sys.stdout.write(msgspec.json.encode(outcome_json(outcome, chat)).decode() + "\n")
    elif not request.stream and outcome.answer:
        print_answer(outcome.answer)
    chat.view.finish()
    report_outcome(outcome, chat)
    return outcome.exit_code


def _approver() -> Approver | None:
    from .chatprompt import ask_on_terminal, on_a_terminal

    return ask_on_terminal if on_a_terminal() else None


def _maker(factory: AgentFactory) -> AgentMaker:
    async def make(log: SessionLog) -> Agent[Any]:  # Any: the user's agent
        built = factory(log)
        return await built if inspect.isawaitable(built) else built

    return make


def _view(request: ChatRequest) -> ChatView:
    from .chatview import ChatView, answer_sink

    streaming = request.stream and not request.as_json
    return ChatView(
        sink=answer_sink(sys.stdout) if streaming else None,
        reasoning=request.reasoning and not request.as_json,
    )
