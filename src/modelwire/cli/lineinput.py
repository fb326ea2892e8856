"""The input line of the interactive chat: prompt-toolkit, with editing, history and multi-line.

Why prompt-toolkit rather than the standard library's `readline`: readline edits one physical
line at a time, so a multi-line message can be neither edited as a whole nor recalled from history
as one entry; it is GNU readline on Linux but libedit (other key bindings, other history format)
on macOS, and absent on Windows; and it blocks the event loop inside `input()`. prompt-toolkit
edits the whole message (Esc Enter or Alt-Enter inserts a newline, a pasted block stays one
message), keeps a history file of whole messages (↑/↓, Ctrl-R), completes the slash commands,
runs as a coroutine, and degrades to a plain prompt on a dumb terminal. It is pure Python; it is
imported only when an interactive session starts, never by one-shot `chat` or `import modelwire`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import CompleteEvent, Completion
    from prompt_toolkit.document import Document
    from prompt_toolkit.key_binding import KeyPressEvent

__all__ = ["LineReader", "history_path"]


def history_path() -> Path:
    """`chat-history` under the user data dir: the interactive chat's input history."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("modelwire")) / "chat-history"


def _usable(path: Path) -> bool:
    """Whether the history file can be appended to (creating its directory if needed)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError:
        return False
    return os.access(path, os.W_OK)


class LineReader:
    """Reads one message at a time; `read()` returns None at end of input (Ctrl-D) and raises
    `KeyboardInterrupt` for Ctrl-C at the prompt."""

    def __init__(self, commands: Sequence[str], history: Path | None = None) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import Completer, Completion
        from prompt_toolkit.history import FileHistory, History, InMemoryHistory
        from prompt_toolkit.key_binding import KeyBindings

        file = history if history is not None else history_path()
        self.history_file: Path | None = file if _usable(file) else None
        store: History = (
            FileHistory(str(self.history_file)) if self.history_file else InMemoryHistory()
        )
        names = tuple(commands)

        class SlashCompleter(Completer):
            def get_completions(
                self, document: Document, complete_event: CompleteEvent
            ) -> Iterable[Completion]:
                text = document.text_before_cursor
                if text.startswith("/") and " " not in text and "\n" not in text:
                    for name in names:
                        if name.startswith(text):
                            yield Completion(name, start_position=-len(text))

        keys = KeyBindings()

        @keys.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            document = buffer.document
            if document.is_cursor_at_the_end and document.text.endswith("\\"):
                buffer.delete_before_cursor(1)  # a trailing backslash continues the message
                buffer.insert_text("\n")
            else:
                buffer.validate_and_handle()

        output = None
        if not sys.stdout.isatty() and sys.stderr.isatty():
            from prompt_toolkit.output import create_output

            output = create_output(stdout=sys.stderr)  # the answer is redirected: prompt on stderr
        self._session: PromptSession[str] = PromptSession(
            history=store,
            completer=SlashCompleter(),
            complete_while_typing=False,
            key_bindings=keys,
            prompt_continuation=lambda width, line, wrap: "." * (width - 1) + " ",
            output=output,
            enable_history_search=False,
        )

    async def read(self, prompt: str = "you> ") -> str | None:
        """The next message (its lines joined by newlines), or None at end of input."""
        try:
            return await self._session.prompt_async(prompt)
        except EOFError:
            return None
