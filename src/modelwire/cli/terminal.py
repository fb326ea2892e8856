"""Terminal output a hostile session cannot drive: `TerminalConsole`, a rich console that shows
control characters in printed text as escapes (``\\x1b``) when it writes to a terminal.

A session's text — a model's answer, a tool's result, a user message, a tool name — is whatever
the provider, the tool or the log said. Printed as is, ``ESC ] 52 ;…`` writes the clipboard,
``ESC ] 0 ;…`` sets the window title and ``ESC [ 2 J`` clears the screen (rich itself removes
only BEL, BS, VT, FF and CR). Every C0 control but newline and tab, DEL, and the C1 controls
(U+0080–U+009F, which terminals may read as ``CSI`` / ``OSC``) are escaped in every text segment,
whichever call printed it (`print`, `out`, a live display); the escape codes rich writes for
styles and cursor moves are its own and stay. Output to a pipe or a file is left exactly as
written (`sessions show > file` keeps the text), as ``NO_COLOR`` leaves it uncoloured.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Final

from rich.console import Console
from rich.segment import Segment

__all__ = ["TerminalConsole", "escape_controls"]

_CONTROLS: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def escape_controls(text: str) -> str:
    """`text` with each control character but newline and tab written as ``\\xNN``."""
    return _CONTROLS.sub(_escaped, text)


def _segments(buffer: Iterable[Segment]) -> Iterator[Segment]:
    for segment in buffer:
        if segment.control is None and _CONTROLS.search(segment.text):
            yield Segment(escape_controls(segment.text), segment.style)
        else:
            yield segment


class TerminalConsole(Console):
    """A `rich.console.Console` (same arguments) escaping control characters in printed text
    when its file is a terminal (see the module docstring)."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        try:
            terminal = self.file.isatty()
        except (AttributeError, ValueError, OSError):  # a closed or file-less stream
            terminal = False
        return super()._render_buffer(_segments(buffer) if terminal else buffer)
