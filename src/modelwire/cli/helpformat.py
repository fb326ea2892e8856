"""Help text that reads like other command-line tools: `ID FILE`, not typer's `{ID} {FILE}`.

Typer renders a required argument as `{NAME}` in the usage line and adds its Python type
(`<str>`) to the arguments table; `polish(command)` swaps every argument of the command tree to a
subclass that prints `NAME` (optional: `[NAME]`) and no type. Typer versions without these hooks
are left as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from typer.core import TyperArgument

if TYPE_CHECKING:
    from typer._click import Context

__all__ = ["polish"]


class PlainArgument(TyperArgument):
    """A positional argument shown as `NAME` / `[NAME]` without a type label."""

    def _usage_display_name(self) -> str:
        name = self.display_name_raw.upper()
        if not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: Context) -> str | None:
        return None


def polish(command: object) -> None:
    """Apply `PlainArgument` to every argument of `command` and its subcommands, in place."""
    for param in getattr(command, "params", ()):
        if type(param) is TyperArgument:
            param.__class__ = PlainArgument
    for sub in getattr(command, "commands", {}).values():
        polish(sub)
