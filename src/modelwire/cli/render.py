"""Rendering with rich: live stream chunks, one-line event summaries, usage tables.

`ChunkPrinter` prints a model stream as it arrives (reasoning dim, text plain, each tool call once
complete, failures in red). `event_line` turns one durable event into a one-line summary for
`modelwire sessions show`. `usage_table` renders token usage (and cost) per provider call.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import assert_never

import msgspec
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..events_ratelimit import LlmRateLimitWait
from ..meter.cost import cost_text
from ..session.events import (
    AssistantChunk,
    AssistantMessage,
    Event,
    LlmRetry,
    LlmRetryStarted,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolDecision,
    ToolResultRecord,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEnd,
    TurnEndReason,
    TurnErrored,
    TurnInterrupted,
    TurnMaxTokens,
    TurnStart,
    UserMessage,
)
from ..vocab import (
    Aborted,
    AudioBlock,
    BlockEnd,
    BlockStart,
    ContentBlock,
    DocumentBlock,
    Error,
    Finish,
    ImageBlock,
    LlmFailure,
    MaxTokens,
    Message,
    ReasoningBlock,
    ReasoningDelta,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolCalls,
    ToolResultBlock,
    UsageChunk,
    media_label,
)

__all__ = [
    "ChunkPrinter",
    "block_text",
    "event_line",
    "failure_text",
    "fold",
    "message_answer",
    "message_text",
    "print_table",
    "rate_limit_wait_line",
    "turn_reason_text",
    "usage_table",
]


def failure_text(failure: LlmFailure) -> str:
    """`CODE (HTTP status): message`, the way failures are shown everywhere in the CLI."""
    status = failure.status
    shown = status is not None and f"HTTP {status}" not in failure.message
    return f"{failure.code}{f' (HTTP {status})' if shown else ''}: {failure.message}"


def rate_limit_wait_line(route: str, reason: str, wait_ms: float | None, detail: str) -> str:
    """`waiting 2s for <route> rate limit (<reason>: <detail>)`: one client-side wait (without
    a duration when it lasts until an earlier call of the route ends)."""
    seconds = ""
    if wait_ms is not None:
        s = wait_ms / 1000
        seconds = f"{s:.0f}s " if s >= 10 else f"{s:.3g}s "
    return f"waiting {seconds}for {route} rate limit ({reason}: {detail})"


class ChunkPrinter:
    """Prints one model stream live; call `push` per chunk, in order."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._open_kind: str | None = None
        self._column_dirty = False

    def _switch(self, kind: str | None) -> None:
        if kind != self._open_kind and self._column_dirty:
            self._console.out("")
            self._column_dirty = False
        self._open_kind = kind

    def _write(self, kind: str, text: str, style: str | None) -> None:
        self._switch(kind)
        if text:
            self._console.out(text, style=style, end="", highlight=False)
            self._column_dirty = True

    def push(self, chunk: StreamChunk) -> None:
        """Render one chunk."""
        match chunk:
            case BlockStart():
                pass
            case ReasoningDelta(text=text):
                self._write("reasoning", text, "dim")
            case TextDelta(text=text):
                self._write("text", text, None)
            case ToolCallDelta():
                pass  # shown once complete, at its block-end
            case BlockEnd(block=ToolCallBlock() as call):
                self._switch(None)
                self._console.print(
                    Text.assemble(("→ tool call ", "cyan"), (call.name, "bold cyan"), " ")
                    + Text(call.arguments, style="cyan"),
                    highlight=False,
                )
            case BlockEnd():
                pass
            case UsageChunk():
                pass
            case Finish(reason=reason):
                self._switch(None)
                self._finish(reason)
            case _:
                assert_never(chunk)

    def _finish(self, reason: Stop | ToolCalls | MaxTokens | Aborted | Error) -> None:
        match reason:
            case Stop() | ToolCalls():
                pass
            case MaxTokens():
                self._console.print("[yellow]… cut off at the output-token limit[/]")
            case Aborted(failure=failure):
                self._console.print(Text(f"✗ aborted: {failure_text(failure)}", style="yellow"))
            case Error(failure=failure):
                self._console.print(
                    Text(f"✗ request failed: {failure_text(failure)}", style="bold red")
                )
            case _:
                assert_never(reason)

    def close(self) -> None:
        """End the current line, if a delta left it open."""
        self._switch(None)


def block_text(block: ContentBlock) -> str:
    """A short one-line rendering of a content block."""
    match block:
        case TextBlock(text=text):
            return text
        case ReasoningBlock(text=text):
            return f"(reasoning) {text}"
        case ToolCallBlock(name=name, arguments=arguments):
            return f"{name}({arguments})"
        case ToolResultBlock(content=content, is_error=is_error):
            inner = " ".join(block_text(b) for b in content)
            return f"(tool error) {inner}" if is_error else inner
        case ImageBlock(attachment=ref):
            return f"[image {ref.media_type} {ref.width}x{ref.height}]"
        case DocumentBlock() | AudioBlock():
            return media_label(block)
        case _:
            assert_never(block)


def message_text(message: Message) -> str:
    """The blocks of a message as one line (` | ` between blocks)."""
    return " | ".join(" ".join(block_text(b).split()) for b in message.content) or "(empty)"


def message_answer(message: Message) -> str:
    """The text blocks of a message joined: what a reader calls its answer."""
    return "".join(b.text for b in message.content if isinstance(b, TextBlock))


def fold(text: str, *, lines: int, chars: int) -> tuple[str, int]:
    """`text` cut to at most `lines` lines and `chars` characters; returns (shown, hidden count).

    The hidden count is in characters (0: nothing was cut).
    """
    cut = len(text) if len(text) <= chars else chars
    newline = -1
    for _ in range(lines):
        newline = text.find("\n", newline + 1, cut)
        if newline < 0:
            break
    if newline >= 0:
        cut = min(cut, newline)
    if cut >= len(text):
        return text, 0
    return text[:cut].rstrip(), len(text) - cut


def turn_reason_text(reason: TurnEndReason) -> str:
    """The kind of a turn end, with its failure or abort cause."""
    match reason:
        case TurnCompleted() | TurnMaxTokens() | TurnBlocked() | TurnInterrupted():
            return reason.kind
        case TurnErrored(failure=failure):
            return f"error — {failure_text(failure)}"
        case TurnAborted(reason=cause):
            return f"aborted by {cause.kind}" + (f" ({cause.reason})" if cause.reason else "")
        case _:  # a reason newer than this module (e.g. an agent limit): its kind and fields
            limit = getattr(reason, "limit", None)
            if limit is not None:
                used, most = getattr(reason, "used", "?"), getattr(reason, "max", "?")
                return f"{reason.kind} — {limit} reached ({used} of at most {most})"
            return str(getattr(reason, "kind", "ended"))


def _usage_text(usage: TokenUsage) -> str:
    parts = [f"in {usage.input_tokens}", f"out {usage.output_tokens}"]
    if usage.cache_read_tokens:
        parts.append(f"cache-read {usage.cache_read_tokens}")
    if usage.reasoning_tokens:
        parts.append(f"reasoning {usage.reasoning_tokens}")
    return ", ".join(parts)


def _summary(data: msgspec.Struct) -> str:
    match data:
        case TurnStart(turn=turn, resumed_after=after):
            return f"turn {turn}" + (f" resumed after step {after}" if after is not None else "")
        case ToolDecision() as d:
            verdict = "approved" if d.approve else "denied"
            who = f" by {d.by}" if d.by else ""
            return f"{d.name} [{d.call_id}] {verdict}{who}" + (f": {d.reason}" if d.reason else "")
        case TurnEnd(turn=turn, reason=reason):
            return f"turn {turn}: {turn_reason_text(reason)}"
        case StepStart(turn=turn, step=step) | StepEnd(turn=turn, step=step):
            return f"turn {turn} step {step}"
        case UserMessage(message=message):
            return message_text(message)
        case RequestHeader(header=header, reason=why):
            tools = len(header.tools or ())
            return f"{header.config.provider}/{header.config.model} ({why}; {tools} tool(s))"
        case RequestContext(provider=provider, model=model, context_window=window, pricing=p):
            prices = f" · USD/1M in {cost_text(p.input)} out {cost_text(p.output)}" if p else ""
            return f"{provider}/{model}" + (f" window {window}" if window else "") + prices
        case AssistantChunk(turn=turn, step=step, attempt=attempt, chunk=chunk):
            return f"{turn}.{step} attempt {attempt}: {chunk.type}"
        case AssistantMessage() as m:
            flag = " [interrupted]" if m.interrupted else ""
            usage = f" ({_usage_text(m.usage)})" if m.usage is not None else ""
            return f"{m.turn}.{m.step} attempt {m.attempt}{flag}: {message_text(m.message)}{usage}"
        case ToolCallRecord(name=name, arguments=arguments, call_id=call_id) as c:
            waits = " (waits for approval)" if c.needs_approval else ""
            return f"{name}({arguments}) [{call_id}]{waits}"
        case ToolResultRecord(name=name, message=message, is_error=is_error):
            return f"{name} → " + ("error: " if is_error else "") + message_text(message)
        case LlmRetry() as r:
            limit = f"/{r.max_retries}" if r.max_retries is not None else ""
            return (
                f"{r.turn}.{r.step} retry {r.retry}{limit} after {r.delay_ms:.0f} ms "
                f"({r.mode}) — {failure_text(r.failure)}"
            )
        case LlmRetryStarted(turn=turn, step=step, retry=retry):
            return f"{turn}.{step} retry {retry} started"
        case LlmRateLimitWait() as w:
            line = rate_limit_wait_line(w.provider, w.reason, w.wait_ms, w.detail)
            return f"{w.turn}.{w.step} attempt {w.attempt}: {line}"
        case _:
            return msgspec.json.encode(data).decode()


_TYPE_STYLES: Mapping[str, str] = {
    "turn/start": "bold",
    "turn/end": "bold",
    "user/message": "green",
    "assistant/message": "magenta",
    "tool/call": "cyan",
    "tool/result": "cyan",
    "tool/decision": "cyan",
    "llm/retry": "yellow",
    "llm/retry-started": "yellow",
    "llm/rate-limit-wait": "yellow",
    "assistant/chunk": "dim",
}


def event_line(event: Event) -> Text:
    """`seq  type  summary` for one durable event."""
    style = _TYPE_STYLES.get(event.type, "")
    return Text.assemble(
        (f"{event.seq:>5}  ", "dim"), (f"{event.type:<18}", style), " ", _summary(event.data)
    )


def usage_table(
    title: str,
    rows: Iterable[tuple[str, TokenUsage]],
    total: TokenUsage,
    *,
    costs: Sequence[Decimal | None] | None = None,
    total_cost: Decimal | None = None,
) -> Table:
    """A table of usage rows (label, usage) with a total line; reasoning is a part of output.

    With `costs` (one per row, in USD; None: price unknown) a `cost $` column shows them and
    `total_cost`, an unknown one as "—"."""
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column("call", no_wrap=True)
    for name in ("input", "cache read", "cache write", "output", "reasoning", "total"):
        table.add_column(name, justify="right")
    if costs is not None:
        table.add_column("cost $", justify="right")

    def cells(usage: TokenUsage) -> list[str]:
        return [
            str(usage.input_tokens),
            str(usage.cache_read_tokens or 0),
            str(usage.cache_write_tokens or 0),
            str(usage.output_tokens),
            str(usage.reasoning_tokens or 0),
            str(usage.total_tokens),
        ]

    priced = costs is not None
    for n, (label, usage) in enumerate(rows):
        extra = [cost_text(costs[n])] if costs is not None else []
        table.add_row(label, *cells(usage), *extra)
    table.add_section()
    table.add_row(
        "total", *cells(total), *([cost_text(total_cost)] if priced else []), style="bold"
    )
    return table


def print_table(console: Console, table: Table) -> None:
    """Print `table`; off a terminal without the padding rich leaves at the end of each line."""
    if console.is_terminal:
        console.print(table)
        return
    with console.capture() as captured:
        console.print(table)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
