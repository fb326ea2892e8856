"""The `modelwire chat` command line (typer); the work is in `chat.py`."""

from __future__ import annotations

from typing import Annotated

import typer

from .errors import run_async
from .options import ConfigOption, DebugOption, LogOption, examples

__all__ = ["register"]

CHAT_HELP = """Chat with a model: one prompt, or an interactive session on a terminal.

The prompt is PROMPT, the whole of stdin when it is not a terminal, or both: PROMPT first, then
stdin after a blank line (a script whose stdin stays open passes </dev/null). Without either,
on a terminal, an interactive session starts (line editing, history, multi-line input; /help
lists its commands).

Only the answer goes to stdout (rendered as markdown on a terminal, as written otherwise); the
session line, reasoning, tool calls and retries go to stderr. Every turn is saved in the session
log. A tool call that needs approval asks `Run tool X with ARGS? [y/N]` on a terminal; off one
the turn pauses and chat prints how to decide (`modelwire sessions decide`). Exit codes: 0
answer, 1 the provider or the turn failed (or it paused), 2 usage error, 130 cancelled (Ctrl-C,
or stdout closed).
"""


def register(app: typer.Typer) -> None:
    """Add the `chat` command to `app`."""
    app.command(
        "chat",
        help=CHAT_HELP,
        short_help="Chat with a model (one prompt or interactive).",
        epilog=examples(
            'modelwire chat "Why is the sky blue?"',
            'git diff | modelwire chat "Write a commit message for this diff"',
            'modelwire chat -m local:qwen3:8b -s "Be terse." -o temperature=0.2 "Hi"',
            'modelwire chat -c "And in one sentence?"      # continue the last session',
            'modelwire chat --json "2+2?" | jq -r .answer',
            'modelwire chat --mcp files "Summarize notes.md"  # tools of [mcp.files]',
            'modelwire chat --agent myapp.agents:make_agent "Pay the invoice"',
            "modelwire chat                                 # interactive on a terminal",
        ),
    )(chat)


def chat(
    prompt: Annotated[
        str | None,
        typer.Argument(
            metavar="PROMPT",
            help="The message (stdin, when piped, is appended after it).",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "-m",
            "--model",
            metavar="ROUTE:MODEL",
            help="Route and model, e.g. deepseek:deepseek-v4-pro, or a model of the default "
            "route [default: the session's, else [default] in the config, else deepseek]",
            show_default=False,
        ),
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option("--provider", metavar="ROUTE", help="The route alone (as -m ROUTE:…)."),
    ] = None,
    system: Annotated[
        str | None, typer.Option("-s", "--system", metavar="TEXT", help="System prompt.")
    ] = None,
    continue_last: Annotated[
        bool,
        typer.Option("-c", "--continue", help="Continue the most recent chat session."),
    ] = False,
    session: Annotated[
        str | None,
        typer.Option("--session", metavar="ID", help="Continue session ID (it must exist)."),
    ] = None,
    new: Annotated[
        bool, typer.Option("--new", help="Start a new session with the --session ID.")
    ] = False,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "-o",
            "--option",
            metavar="KEY=VALUE",
            help="A call option: temperature, max_tokens or reasoning_effort (repeatable).",
            show_default=False,
        ),
    ] = None,
    tool: Annotated[
        list[str] | None,
        typer.Option(
            "--tool",
            metavar="NAME",
            help="Offer a built-in tool: calculator, clock (repeatable; none by default).",
            show_default=False,
        ),
    ] = None,
    mcp: Annotated[
        list[str] | None,
        typer.Option(
            "--mcp",
            metavar="NAME",
            help="Offer the tools of the config file's [mcp.NAME] MCP server (repeatable; see "
            "`modelwire mcp list`).",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="MODULE:FACTORY",
            help="Your agent factory, as for `modelwire worker`: FACTORY(log) -> Agent, with its "
            "own tools, route and model (a tool that needs approval asks y/N on a terminal).",
            show_default=False,
        ),
    ] = None,
    attach: Annotated[
        list[str] | None,
        typer.Option(
            "--attach",
            metavar="FILE",
            help="Send FILE with the prompt: a PDF, .txt/.md or audio file (repeatable).",
            show_default=False,
        ),
    ] = None,
    no_stream: Annotated[
        bool, typer.Option("--no-stream", help="Print the answer once it is complete.")
    ] = False,
    no_reasoning: Annotated[
        bool, typer.Option("--no-reasoning", help="Do not show the model's reasoning.")
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON object: session_id, turn, route, model, answer, reasoning, "
            "finish, usage, cost (USD as a decimal string; null when a price is unknown), error, "
            "cancelled.",
        ),
    ] = False,
    config: ConfigOption = None,
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    async def go() -> int:
        from .chat import ChatRequest, run_chat

        request = ChatRequest(
            prompt=prompt,
            provider=provider,
            model=model,
            session_id=session,
            new=new,
            continue_last=continue_last,
            system=system,
            options=tuple(option or ()),
            tools=tuple(tool or ()),
            mcp=tuple(mcp or ()),
            attach=tuple(attach or ()),
            stream=not no_stream,
            reasoning=not no_reasoning,
            as_json=json_out,
            config_path=config,
            log_option=log,
            agent=agent,
        )
        return await run_chat(request)

    run_async(go, debug=debug)
