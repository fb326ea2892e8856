"""One line per session for `modelwire sessions list`: route/model, turns, tokens, cost, preview.

A summary is projected from the session's events (the log is the source of truth): the route and
model of its latest request, the number of turns, the total tokens and cost from `TokenMeter`
(at the prices logged with each call; None when one is unknown, never estimated here), and the
first user message folded to one line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from ..session import AssistantMessage, Event, RequestHeader, SessionInfo, TurnStart, UserMessage
from .render import message_answer, message_text

__all__ = ["SessionSummary", "matches", "one_line", "summarize"]


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """What `sessions list` shows of one session."""

    info: SessionInfo
    route: str | None
    model: str | None
    turns: int
    tokens: int
    cost: Decimal | None
    preview: str
    texts: tuple[str, ...]  # the user and assistant texts, for --search


def one_line(text: str, width: int) -> str:
    """`text` with its whitespace collapsed, cut to `width` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)].rstrip() + "…"


def summarize(info: SessionInfo, events: Iterable[Event]) -> SessionSummary:
    """The summary of one session from its events."""
    from ..meter import TokenMeter

    listed = list(events)
    route = model = None
    turns = 0
    preview: str | None = None
    texts: list[str] = []
    for event in listed:
        data = event.data
        if isinstance(data, RequestHeader):
            route, model = data.header.config.provider, data.header.config.model
        elif isinstance(data, TurnStart):
            turns += 1
        elif isinstance(data, UserMessage):
            text = message_text(data.message)
            texts.append(text)
            if preview is None:
                preview = text
        elif isinstance(data, AssistantMessage):
            texts.append(message_answer(data.message))
    report = TokenMeter.project(listed)
    return SessionSummary(
        info=info,
        route=route,
        model=model,
        turns=turns,
        tokens=report.total.total_tokens,
        cost=report.cost,
        preview=one_line(preview or "", 200),
        texts=tuple(texts),
    )


def matches(summary: SessionSummary, needle: str) -> bool:
    """Whether `needle` (any case) occurs in the id, route/model or a message of the session."""
    wanted = needle.casefold()
    fields = (summary.info.session_id, f"{summary.route}/{summary.model}", *summary.texts)
    return any(wanted in field.casefold() for field in fields)
