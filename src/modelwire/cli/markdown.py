"""Streaming markdown on a terminal (rich): finished blocks print once, the open one shows live.

A model's answer arrives a few characters at a time, but markdown can only be rendered by block (a
heading, a paragraph, a list, a fenced code block). `MarkdownStream` cuts the text at blank lines
outside code fences: everything before such a cut is a finished block, printed rendered and never
touched again; the block still being written is shown below it in a transient live region,
re-rendered a few times a second, and printed for good when the stream closes. Lines are scanned
once each, so a long answer costs linear time.
"""

from __future__ import annotations

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown

__all__ = ["MarkdownStream"]


class MarkdownStream:
    """Renders one streamed markdown text on `console` (a terminal); `push` deltas, then `close`."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._lines: list[str] = []  # complete lines of the open block(s)
        self._partial: list[str] = []  # the current line, not yet ended by a newline
        self._fence: str | None = None  # the marker of an open code fence
        self._cut: int | None = None  # lines before this index form finished blocks
        self._live: Live | None = None
        self.written = False

    def push(self, text: str) -> None:
        """Add streamed text."""
        if not text:
            return
        pieces = text.split("\n")
        self._partial.append(pieces[0])
        for piece in pieces[1:]:
            self._complete("".join(self._partial))
            self._partial = [piece]
        if self._cut is not None:
            done, self._lines = self._lines[: self._cut], self._lines[self._cut :]
            self._cut = None
            self._print("\n".join(done))
        self._show()

    def _complete(self, line: str) -> None:
        stripped = line.lstrip()
        if self._fence is not None:
            if stripped.startswith(self._fence):
                self._fence = None
        elif stripped.startswith(("```", "~~~")):
            self._fence = stripped[:3]
        elif not stripped and any(existing.strip() for existing in self._lines[-1:]):
            self._cut = len(self._lines) + 1  # after this blank line
        self._lines.append(line)

    def _print(self, text: str) -> None:
        if not text.strip():
            return
        self.written = True
        target = self._live.console if self._live is not None else self._console
        target.print(Markdown(text))

    def _tail(self) -> str:
        return "\n".join([*self._lines, "".join(self._partial)])

    def _show(self) -> None:
        tail = self._tail()
        if not tail.strip():
            return
        if self._live is None:
            self._live = Live(
                console=self._console,
                transient=True,
                auto_refresh=True,
                refresh_per_second=8,
                vertical_overflow="crop",
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        self._live.update(Markdown(tail))

    def close(self) -> None:
        """Stop the live region and print what it showed, rendered."""
        live, self._live = self._live, None
        if live is not None:
            live.stop()
        tail = self._tail()
        self._lines, self._partial, self._fence, self._cut = [], [], None, None
        self._print(tail)
