"""The interactive `modelwire chat` loop and its slash commands (which never reach the model).

Enter sends; Esc Enter (or Alt-Enter), or a line ending in `\\`, starts a new line; ↑/↓ walk the
history (kept across sessions), Ctrl-R searches it; Ctrl-C cancels a reply (its prefix is saved)
and, at the prompt, leaves with exit code 130; Ctrl-D or /exit leaves with 0. A message that
starts with `/` is a command; `//text` sends `/text`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from .errors import EXIT_INTERRUPTED, CliError

if TYPE_CHECKING:
    from .chatsession import ChatSession

__all__ = ["COMMANDS", "run_interactive"]

COMMANDS: Final = {
    "/help": "this list",
    "/model": "show the route and model; /model ROUTE:MODEL (or MODEL) switches",
    "/system": "show the system prompt; /system TEXT sets it, /system - clears it",
    "/retry": "send the last message again (a new turn)",
    "/usage": "token usage of this session (and cost, when known)",
    "/exit": "leave (also /quit, Ctrl-D)",
}
_KEYS: Final = (
    "Enter sends · Esc Enter, Alt-Enter or a trailing \\ adds a line · ↑/↓ history, "
    "Ctrl-R search · Ctrl-C cancels a reply · //text sends /text"
)

Command = Callable[["ChatSession", str, Console], Awaitable[bool]]


async def _help(chat: ChatSession, arg: str, console: Console) -> bool:
    for name, text in COMMANDS.items():
        console.print(Text.assemble((f"  {name:<8}", "bold"), " ", text))
    console.print(Text(f"  {_KEYS}", style="dim"))
    return True


async def _model(chat: ChatSession, arg: str, console: Console) -> bool:
    if not arg:
        console.print(f"{escape(chat.route)}/{escape(chat.model)}")
        return True
    from .routes import choose_model

    route_name, model = await chat.routes.parse(arg, chat.route, "/model")
    route = chat.routes.get(route_name)
    if route.missing_env is not None:
        raise CliError(f"{route.missing_env} is not set: the {route.name!r} route needs a key")
    chosen = await choose_model(route, model)
    await chat.configure(route=route.name, model=chosen, system=chat.system)
    console.print(Text(f"now {route.name}/{chosen}", style="dim"))
    return True


async def _system(chat: ChatSession, arg: str, console: Console) -> bool:
    if not arg:
        console.print(escape(chat.system) if chat.system else Text("(no system prompt)", "dim"))
        return True
    await chat.configure(system=None if arg == "-" else arg)
    console.print(Text("system prompt cleared" if arg == "-" else "system prompt set", "dim"))
    return True


async def _usage(chat: ChatSession, arg: str, console: Console) -> bool:
    from ..meter import TokenMeter
    from ..meter.cost import cost_text
    from .render import usage_table

    if not await chat.log.exists(chat.session_id):
        console.print(Text("no turns yet", style="dim"))
        return True
    report = TokenMeter.project(await chat.log.read(chat.session_id))
    turns = sorted(report.turns.items())
    rows = [(f"turn {turn}", usage) for turn, usage in turns]
    costs = [report.turns_cost.get(turn) for turn, _ in turns]
    title = f"token usage of session {chat.session_id}"
    console.print(usage_table(title, rows, report.total, costs=costs, total_cost=report.cost))
    cost = "not known" if report.cost is None else f"${cost_text(report.cost)}"
    console.print(Text(f"cost: {cost}", style="dim"))
    return True


async def _exit(chat: ChatSession, arg: str, console: Console) -> bool:
    return False


_HANDLERS: Final[dict[str, Command]] = {
    "/help": _help,
    "/model": _model,
    "/system": _system,
    "/usage": _usage,
    "/exit": _exit,
    "/quit": _exit,
}


async def run_interactive(chat: ChatSession, *, stream: bool) -> int:
    """Read messages until end of input; returns the exit code (0, or 130 for Ctrl-C)."""
    from .chatoutput import print_answer, report_outcome
    from .lineinput import LineReader

    console = chat.view.console
    reader = LineReader([*COMMANDS, "/quit"])
    note = "" if reader.history_file else " (history is not saved: its file is not writable)"
    console.print(Text(f"type a message; /help lists commands, Ctrl-D leaves{note}", "dim"))
    while True:
        try:
            line = await reader.read()
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED
        while line is not None and line.endswith("\\"):  # a dumb terminal submits it: go on
            try:
                more = await reader.read("... ")
            except KeyboardInterrupt:
                return EXIT_INTERRUPTED
            line = line[:-1] + "\n" + (more or "")
            if more is None:
                break
        if line is None:
            return 0
        text = line.strip()
        if not text:
            continue
        if text.startswith("/") and not text.startswith("//"):
            name, _, arg = text.partition(" ")
            if name == "/retry":
                if chat.last_prompt is None:
                    console.print(Text("nothing to retry yet", style="yellow"))
                    continue
                line = chat.last_prompt
            else:
                handler = _HANDLERS.get(name)
                if handler is None:
                    console.print(Text(f"unknown command {name} (see /help)", style="yellow"))
                    continue
                try:
                    if not await handler(chat, arg.strip(), console):
                        return 0
                except CliError as err:
                    console.print(Text(f"error: {err.message}", style="red"))
                continue
        elif text.startswith("//"):
            line = line.lstrip()[1:]
        outcome = await chat.send(line)
        if not stream and outcome.answer:
            print_answer(outcome.answer)
        chat.view.finish()
        report_outcome(outcome, chat)
