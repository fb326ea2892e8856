"""Where `modelwire chat` writes what a turn streams: the answer on stdout, the rest on stderr.

Only the answer's text goes to stdout: rendered as markdown when stdout is a terminal, as the
model wrote it otherwise (so `modelwire chat … > out.txt` holds the answer and nothing else). On
a terminal its control characters are shown escaped, on stderr too (`terminal`): a model's text
never writes the clipboard or the window title.
Reasoning (dim), tool calls, retries and notices go to stderr; `--no-reasoning` drops the
reasoning. With `--no-stream` or `--json` nothing is written while the turn runs: the caller
prints the final answer (or one JSON object) once the turn has ended, so a retried attempt never
leaves a partial answer behind.

A write to stdout that fails with a broken pipe (`modelwire chat … | head -1`) stops the output
and calls `on_broken` once, which cancels the turn: the agent loop then saves the streamed prefix.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Protocol, TextIO

from rich.console import Console
from rich.text import Text

from ..vocab import (
    BlockEnd,
    Finish,
    GenerateOptions,
    MaxTokens,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallBlock,
)
from .errors import quiet_stdout
from .live import LiveView
from .terminal import TerminalConsole, escape_controls

if TYPE_CHECKING:
    from .markdown import MarkdownStream

__all__ = ["AnswerSink", "ChatView", "PlainSink", "TerminalSink", "answer_sink"]


class AnswerSink(Protocol):
    """Receives the answer's text deltas as they stream."""

    def text(self, delta: str) -> None:
        """Write a delta (may raise `BrokenPipeError`)."""

    def pause(self) -> None:
        """End the current stretch of text (before something else is printed, or a new step)."""

    def close(self) -> None:
        """End the answer: it ends with a newline."""


class PlainSink:
    """The answer verbatim on a pipe or file, flushed per delta (`escape`: control characters
    written as ``\\xNN``, for a terminal that cannot redraw; see `terminal`)."""

    def __init__(self, stream: TextIO, *, escape: bool = False) -> None:
        self._stream = stream
        self._escape = escape
        self._last = "\n"

    def text(self, delta: str) -> None:
        if delta:
            self._stream.write(escape_controls(delta) if self._escape else delta)
            self._stream.flush()
            self._last = delta[-1]

    def pause(self) -> None:
        if self._last != "\n":
            self._stream.write("\n")
            self._stream.flush()
            self._last = "\n"

    def close(self) -> None:
        self.pause()


class TerminalSink:
    """The answer rendered as markdown on a terminal (`MarkdownStream`), or plain with `raw`."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._stream: MarkdownStream | None = None

    def text(self, delta: str) -> None:
        if self._stream is None:
            from .markdown import MarkdownStream

            self._stream = MarkdownStream(self._console)
        self._stream.push(delta)

    def pause(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()

    def close(self) -> None:
        self.pause()


def answer_sink(stdout: TextIO) -> AnswerSink:
    """The sink for `stdout`: markdown on a terminal that can redraw, verbatim otherwise (a pipe,
    a file, or a dumb terminal, where a live region would show nothing until the end)."""
    if stdout.isatty():  # the model's text never drives the terminal (`terminal`)
        console = TerminalConsole(file=stdout, highlight=False)
        if console.is_terminal and not console.is_dumb_terminal:
            return TerminalSink(console)
        return PlainSink(stdout, escape=True)
    return PlainSink(stdout)


class ChatView(LiveView):
    """The `llm/stream` middleware and agent plugin of `chat` (retries are reported by
    `LiveView` on the stderr console)."""

    def __init__(
        self,
        *,
        sink: AnswerSink | None,
        reasoning: bool,
        stderr: Console | None = None,
    ) -> None:
        super().__init__(stderr or TerminalConsole(stderr=True, highlight=False, soft_wrap=True))
        self.sink = sink
        self.show_reasoning = reasoning
        self.on_broken: Callable[[], None] | None = None
        self.broken = False
        self.attempt_text: list[str] = []
        self.reasoning_text: list[str] = []
        self._reasoning_open = False

    async def middleware(
        self,
        options: GenerateOptions,
        call_next: Callable[..., AsyncIterator[StreamChunk]],
    ) -> AsyncIterator[StreamChunk]:
        """Show each chunk where it belongs, pass it on unchanged."""
        self.attempt_text = []
        self.reasoning_text = []
        try:
            async for chunk in call_next():
                self._show(chunk)
                yield chunk
        finally:
            self._end_reasoning()
            self._answer(lambda sink: sink.pause())

    def _show(self, chunk: StreamChunk) -> None:
        match chunk:
            case ReasoningDelta(text=text):
                self.reasoning_text.append(text)
                if self.show_reasoning and text:
                    if not self._reasoning_open:
                        self._answer(lambda sink: sink.pause())
                    self._reasoning_open = True
                    self._info(lambda c: c.out(text, style="dim", end="", highlight=False))
            case TextDelta(text=text):
                self.attempt_text.append(text)
                self._end_reasoning()
                self._answer(lambda sink: sink.text(text))
            case BlockEnd(block=ToolCallBlock() as call):
                self._end_reasoning()
                self._answer(lambda sink: sink.pause())
                line = Text.assemble(("→ tool call ", "cyan"), (call.name, "bold cyan"), " ")
                self._info(lambda c: c.print(line + Text(call.arguments, style="cyan")))
            case Finish(reason=MaxTokens()):
                self._end_reasoning()
                self._answer(lambda sink: sink.pause())
                self._info(lambda c: c.print("[yellow]… cut off at the output-token limit[/]"))
            case _:
                pass  # failures are reported once, when the turn has ended

    def _end_reasoning(self) -> None:
        if self._reasoning_open:
            self._reasoning_open = False
            self._info(lambda c: c.out(""))

    def _info(self, write: Callable[[Console], None]) -> None:
        with contextlib.suppress(OSError):  # stderr is gone: the answer still matters
            write(self.console)

    def _answer(self, write: Callable[[AnswerSink], None]) -> None:
        sink = self.sink
        if sink is None or self.broken:
            return
        try:
            write(sink)
        except BrokenPipeError:
            self.broken = True
            quiet_stdout()
            if self.on_broken is not None:
                self.on_broken()

    def finish(self) -> None:
        """End the answer's output (a final newline) once the turn is over."""
        self._end_reasoning()
        self._answer(lambda sink: sink.close())
