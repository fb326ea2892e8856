"""The tools `modelwire chat --tool NAME` can offer the model (none unless asked for).

- `calculator`: evaluates arithmetic (`+ - * / // %`, parentheses) without `eval`;
- `clock`: the current date and time (UTC and local).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from .errors import fail

if TYPE_CHECKING:
    from ..agent.tools import Tool
    from ..vocab.json import JsonValue

__all__ = ["TOOL_NAMES", "clock_tool", "resolve_tools"]


def clock_tool() -> Tool:
    """`clock()` → the current time, as ISO 8601 in UTC and in the local time zone."""
    from ..agent.tools import Tool

    def now(args: dict[str, JsonValue]) -> JsonValue:
        moment = datetime.now(tz=UTC)
        return {"utc": moment.isoformat(), "local": moment.astimezone().isoformat()}

    return Tool(
        "clock",
        "The current date and time (ISO 8601, UTC and local).",
        {"type": "object", "properties": {}},
        now,
    )


def _calculator() -> Tool:
    from .demo import calculator_tool

    return calculator_tool()


_TOOLS: Final[dict[str, Callable[[], Tool]]] = {"calculator": _calculator, "clock": clock_tool}
TOOL_NAMES: Final = tuple(_TOOLS)


def resolve_tools(names: Iterable[str]) -> list[Tool]:
    """The tools named (each once, in order); an unknown name is a `CliError` listing them."""
    tools: list[Tool] = []
    for name in dict.fromkeys(names):
        make = _TOOLS.get(name)
        if make is None:
            fail(f"unknown tool {name!r} for --tool (available: {', '.join(TOOL_NAMES)})")
        tools.append(make())
    return tools
