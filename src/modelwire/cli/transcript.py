"""`modelwire sessions show ID`: a session as a readable transcript (or its events, or JSON).

The transcript shows each turn: the user's messages, the assistant's answers (with the reasoning
dimmed), tool calls and results, retries, and how the turn ended — a cancelled turn with its
reason. Long texts are folded to a few lines with a count of what is hidden; `--full` shows them
whole. `--events` lists the durable events one per line (raw chunks summarized per attempt).
"""

from __future__ import annotations

from typing import Final

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from ..session import (
    AssistantChunk,
    AssistantMessage,
    Event,
    LlmRetry,
    RequestHeader,
    ToolDecision,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from ..vocab import Error, Finish, Message, ReasoningBlock, TextBlock, ToolCallBlock
from .logs import open_cli_log, shown_url
from .render import block_text, event_line, failure_text, fold, message_text, turn_reason_text
from .sessions import event_json, local_time, print_json, read_session
from .terminal import TerminalConsole

__all__ = ["show_session"]

FOLD_LINES: Final = 12
FOLD_CHARS: Final = 1_200
REASONING_LINES: Final = 3
SUMMARY_CHARS: Final = 200


async def show_session(
    session_id: str, *, log_option: str | None, as_json: bool, full: bool, events: bool
) -> int:
    """Print session `session_id` (see the module docstring)."""
    async with open_cli_log(log_option, write=False) as (log, url):
        listed = await read_session(log, session_id, url)
    if as_json:
        print_json([event_json(e) for e in listed])
        return 0
    if events:
        _events(
            TerminalConsole(highlight=False, soft_wrap=True), session_id, listed, url, full=full
        )
    else:
        _transcript(TerminalConsole(highlight=False), session_id, listed, full=full)
    return 0


def _folded(text: str, *, full: bool, lines: int = FOLD_LINES) -> Text:
    if full:
        return Text(text)
    shown, hidden = fold(text, lines=lines, chars=FOLD_CHARS)
    out = Text(shown)
    if hidden:
        out.append(f"\n… {hidden:,} more characters (--full shows them)", style="dim italic")
    return out


def _transcript(console: Console, session_id: str, events: list[Event], *, full: bool) -> None:
    header = next((e.data for e in reversed(events) if isinstance(e.data, RequestHeader)), None)
    where = ""
    if header is not None:
        where = f" · {header.header.config.provider}/{header.header.config.model}"
    console.print(Text(f"session {session_id}{where} · {len(events)} events", style="bold"))
    if header is not None and header.header.system:
        console.print(
            Text.assemble(
                ("system: ", "bold dim"), _folded(header.header.system, full=full, lines=3)
            )
        )
    for event in events:
        data = event.data
        if isinstance(data, TurnStart):
            again = " resumed" if data.resumed_after is not None else ""
            console.print()
            console.rule(Text(f"turn {data.turn}{again} · {local_time(event.time)}", style="bold"))
        elif isinstance(data, ToolDecision):
            verdict = "approved" if data.approve else "denied"
            who = f" by {data.by}" if data.by else ""
            why = f": {data.reason}" if data.reason else ""
            console.print(Text(f"✓ {data.name} [{data.call_id}] {verdict}{who}{why}", "cyan"))
        elif isinstance(data, UserMessage):
            console.print(
                Text.assemble(
                    ("you: ", "bold green"), _folded(message_text(data.message), full=full)
                )
            )
        elif isinstance(data, AssistantMessage):
            _assistant(console, data, full=full)
        elif isinstance(data, ToolResultRecord):
            flag = "error " if data.is_error else ""
            text = _folded(message_text(data.message), full=full, lines=4)
            console.print(Text.assemble((f"← {data.name} {flag}= ", "cyan"), text))
        elif isinstance(data, LlmRetry):
            console.print(
                Text(
                    f"↻ retry {data.retry} of step {data.step} after {data.delay_ms:.0f} ms — "
                    f"{failure_text(data.failure)}",
                    style="yellow",
                )
            )
        elif isinstance(data, TurnEnd):
            style = "dim" if data.reason.kind == "completed" else "yellow"
            console.print(Text(f"turn {data.turn} {turn_reason_text(data.reason)}", style=style))


def _body(message: Message) -> str:
    """A message's text as written (newlines kept), other blocks as one-line placeholders."""
    parts = [
        b.text if isinstance(b, TextBlock) else block_text(b)
        for b in message.content
        if not isinstance(b, ReasoningBlock)
    ]
    return "\n".join(parts) if len(parts) > 1 else "".join(parts)


def _assistant(console: Console, data: AssistantMessage, *, full: bool) -> None:
    model = ""
    source = data.message.source
    if getattr(source, "model", None):
        model = f" ({getattr(source, 'model', '')})"
    label = Text(f"assistant{model}: ", style="bold magenta")
    for block in data.message.content:
        if isinstance(block, ReasoningBlock) and block.text.strip():
            shown = _folded(block.text, full=full, lines=REASONING_LINES)
            shown.stylize("dim")
            console.print(Text.assemble(("reasoning: ", "dim bold"), shown))
    texts = "".join(b.text for b in data.message.content if isinstance(b, TextBlock))
    if texts.strip():
        console.print(Text.assemble(label, _folded(texts, full=full)))
    for block in data.message.content:
        if isinstance(block, ToolCallBlock):
            args = _folded(block.arguments, full=full, lines=4)
            console.print(Text.assemble(("→ ", "cyan"), (block.name, "bold cyan"), " ", args))
    if data.interrupted:
        console.print(Text("(interrupted: the answer above is the saved prefix)", style="yellow"))


def _events(
    console: Console, session_id: str, events: list[Event], url: str, *, full: bool
) -> None:
    console.print(
        f"[bold]session {escape(session_id)}[/] — {len(events)} events in {escape(shown_url(url))}"
    )
    pending: list[tuple[int, AssistantChunk]] = []

    def flush_chunks() -> None:
        if not pending:
            return
        (first, data), (last, tail) = pending[0], pending[-1]
        ending: str = tail.chunk.type
        if isinstance(tail.chunk, Finish):
            reason = tail.chunk.reason
            code = f" {reason.failure.code}" if isinstance(reason, Error) else ""
            ending = f"finish {reason.kind}{code}"
        count = f"{len(pending)} chunk" + ("s" if len(pending) != 1 else "")
        console.print(
            Text(
                f"{first:>5}  assistant/chunk    {data.turn}.{data.step} attempt "
                f"{data.attempt}: {count} (seq {first}–{last}), ending in {ending}",
                style="dim",
            )
        )
        pending.clear()

    for event in events:
        if isinstance(event.data, AssistantChunk):
            if pending and pending[0][1].attempt != event.data.attempt:
                flush_chunks()
            pending.append((event.seq, event.data))
            continue
        flush_chunks()
        line = event_line(event)
        if not full and len(line) > SUMMARY_CHARS:
            line.truncate(SUMMARY_CHARS - 1)
            line.append("…")
        console.print(line, soft_wrap=True)
    flush_chunks()
