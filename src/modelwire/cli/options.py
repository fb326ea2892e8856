"""Options shared by several commands, and the examples block every command's help ends with."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["ConfigOption", "DebugOption", "JsonOption", "LogOption", "examples"]

LogOption = Annotated[
    str | None,
    typer.Option(
        "--log",
        metavar="PATH|URL",
        help="Session log: a file path (SQLite), sqlite:////abs/path.db, memory: or "
        "postgresql://HOST/DB [default: $MODELWIRE_LOG, else sessions.db under the user data "
        "dir; see `modelwire logs path`]",
        show_default=False,
    ),
]
DebugOption = Annotated[
    bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors.")
]
ConfigOption = Annotated[
    str | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="Config file (.toml/.yaml) with provider routes [default: $MODELWIRE_CONFIG, else "
        "config.toml in the user config dir if present]",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def examples(*lines: str) -> str:
    """An `Examples:` epilog whose lines click prints as written (the `\\b` marker)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)
