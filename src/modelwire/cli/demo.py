"""`modelwire demo`: the whole stack, offline, in one agent turn.

A local DeepSeek-compatible server (`demo_server.py`) serves the scripted conversation of
`demo_script.py`; the real `DeepSeekAdapter` talks HTTP to it; a real `Agent` runs one turn with
the `calculator` tool and `RetryPlugin` (the server fails the second step's first request once
with HTTP 503), writing every fact to the session log. The header is printed before anything
heavy is imported, so the first output appears at once.
"""

from __future__ import annotations

import ast
import operator
import os
import secrets
import shlex
import shutil
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from ..agent.tools import Tool
    from ..session import SessionLog
    from ..vocab.json import JsonValue

__all__ = ["calculator_tool", "evaluate", "new_session_id", "print_header", "run_demo"]

_BINARY: Final[dict[type[ast.operator], Callable[[float, float], float]]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def print_header(console: Console | None = None) -> None:
    """The demo's first line (printed before the heavy imports)."""
    (console or Console(highlight=False, soft_wrap=True)).print(
        "[bold]modelwire demo[/] — offline: a local DeepSeek-compatible server, the real "
        "DeepSeekAdapter, one Agent turn with a tool call and a retried request"
    )


def evaluate(expression: str) -> int | float:
    """Evaluate arithmetic (`+ - * / // %`, unary minus, parentheses, numbers) without `eval`."""

    def walk(node: ast.expr) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            if isinstance(node.value, bool):
                raise ValueError("booleans are not numbers here")
            return float(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError(f"unsupported expression element: {ast.dump(node)[:40]}")

    if len(expression) > 200:
        raise ValueError("expression longer than 200 characters")
    tree = ast.parse(expression, mode="eval")
    result = walk(tree.body)
    return int(result) if result.is_integer() else result


def calculator_tool() -> Tool:
    """The demo's tool: `calculator(expression)` → the numeric result."""
    from ..agent.tools import Tool

    def calculate(args: dict[str, JsonValue]) -> JsonValue:
        expression = args.get("expression")
        if not isinstance(expression, str):
            raise ValueError("expression must be a string")
        return evaluate(expression)

    return Tool(
        "calculator",
        "Evaluate an arithmetic expression (+ - * / // %, parentheses).",
        {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. (2*60+35)+50"}},
            "required": ["expression"],
        },
        calculate,
    )


def new_session_id(prefix: str) -> str:
    """A fresh, sortable session id: `<prefix>-YYYYMMDD-HHMMSS-<6 hex>`."""
    stamp = datetime.now(tz=UTC).strftime("%Y%m%d-%H%M%S")
    return f"{prefix}-{stamp}-{secrets.token_hex(3)}"


def invocation() -> list[str]:
    """How to run this very `modelwire` from a new shell: `modelwire` when that is what PATH
    finds; else the script this process runs (relative to the current directory when inside
    it, as `./scripts/demo` runs `.venv/bin/modelwire`); else `python -m modelwire`."""
    script = sys.argv[0] if sys.argv else ""
    if os.path.basename(script) not in ("modelwire", "modelwire.exe") or not os.path.isfile(script):
        return [sys.executable, "-m", "modelwire"]
    found = shutil.which("modelwire")
    if found is not None and os.path.samefile(found, script):
        return ["modelwire"]
    full = os.path.abspath(script)
    inside = os.path.commonpath([full, os.getcwd()]) == os.getcwd()
    return [os.path.relpath(full) if inside else full]


def path_hint() -> str | None:
    """How to put `modelwire` on PATH, when this process's is not there (None: it is)."""
    command = invocation()
    if command == ["modelwire"]:
        return None
    bin_dir = os.path.dirname(command[0])  # the script's, or the interpreter's
    if sys.prefix != sys.base_prefix and bin_dir:  # a virtualenv: activate puts it on PATH
        return f"to type just `modelwire`: source {shlex.quote(bin_dir)}/activate"
    return "to type just `modelwire`: pipx install . (or uv tool install .) from the clone"


def inspect_command(session_id: str, url: str, log_option: str | None) -> str:
    """The exact command that shows the session, runnable from a new shell (names `--log`
    unless it is the default log)."""
    from .logs import shown_url

    parts = [*invocation(), "sessions", "show", session_id]
    if log_option is not None:
        parts += ["--log", shown_url(url)]
    return shlex.join(parts)


async def run_demo(*, log_option: str | None, delay_ms: int) -> int:
    """Run the demo turn; 0 when it completed."""
    console = Console(highlight=False, soft_wrap=True)
    from .logs import open_cli_log

    async with open_cli_log(log_option) as (log, url):
        from .demo_script import DEMO_SCRIPT
        from .demo_server import DemoServer

        async with DemoServer(DEMO_SCRIPT, frame_delay_s=delay_ms / 1000) as server:
            console.print(f"[dim]local DeepSeek-compatible server on {server.base_url}[/]")
            return await _run_turn(console, log, url, log_option, server.base_url)


async def _run_turn(
    console: Console, log: SessionLog, url: str, log_option: str | None, base_url: str
) -> int:
    from ..adapters.deepseek import DeepSeekAdapter
    from ..agent import Agent
    from ..meter import TokenMeter
    from ..retry import RetryPlugin
    from ..runtime import LlmRuntime
    from ..session import TurnEnd
    from .demo_script import DEMO_MODEL, DEMO_PROMPT, DEMO_SYSTEM
    from .live import LiveView
    from .logs import shown_url
    from .render import turn_reason_text, usage_table

    runtime = LlmRuntime()
    runtime.register_adapter(["deepseek"], DeepSeekAdapter(api_key="demo-key", base_url=base_url))
    view = LiveView(console)
    runtime.use(view.middleware)
    agent = Agent(
        runtime=runtime,
        log=log,
        provider="deepseek",
        model=DEMO_MODEL,
        system=DEMO_SYSTEM,
        tools=[view.show_tool(calculator_tool())],
        plugins=[view, RetryPlugin()],
    )
    session_id = new_session_id("demo")
    console.print(Text.assemble(("you: ", "bold green"), DEMO_PROMPT))
    try:
        result = await agent.run_turn(session_id, DEMO_PROMPT)
    finally:
        await agent.close()
    kind = result.reason.kind
    events = await log.read(session_id)
    report = TokenMeter.project(events)
    rows = [(f"{t}.{s}.{a}", usage) for (t, s, a), usage in sorted(report.calls.items())]
    console.print()
    console.print(
        usage_table("token usage per call, turn.step.attempt (TokenMeter)", rows, report.total)
    )
    console.print()
    if kind != "completed":
        ends = [e.data for e in events if isinstance(e.data, TurnEnd)]
        detail = turn_reason_text(ends[-1].reason) if ends else kind
        console.print(f"[bold red]the turn ended {detail}[/]")
    console.print(
        f"session [bold]{session_id}[/] ({len(events)} events) stored in {shown_url(url)}"
    )
    if url.startswith("memory:"):
        console.print(
            "[dim](a memory: log ends with the process; --log sqlite:///FILE keeps it)[/]"
        )
    else:
        hint = path_hint()
        if hint is not None:
            console.print(f"[dim]({hint})[/]")
        console.print("inspect it with:")
        console.print(f"  {inspect_command(session_id, url, log_option)}", style="bold")
    return 0 if kind == "completed" else 1
