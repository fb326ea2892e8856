"""Transcript entries (`TranscriptItem`) from the events that carry conversation messages.

An entry's `id` is `e<seq>` of the event it came from (stable across live updates); the draft of
a streaming attempt is `draft-<turn>.<step>.<attempt>` and is replaced when its message lands.
"""

from __future__ import annotations

from ..meter import CallKey
from ..session import AssistantMessage, Event, ToolResultRecord, UserMessage
from ..vocab import ContentBlock, TextBlock
from .blocks import block_views
from .payloads import BlockView, TranscriptItem

__all__ = [
    "assistant_item",
    "draft_item",
    "note_item",
    "system_item",
    "tool_item",
    "user_item",
]


def user_item(event: Event, data: UserMessage, turn: int | None) -> TranscriptItem:
    """A user message."""
    return TranscriptItem(
        id=f"e{event.seq}",
        seq=event.seq,
        time=event.time,
        kind="user",
        turn=turn,
        blocks=block_views(data.message.content),
    )


def assistant_item(event: Event, data: AssistantMessage) -> TranscriptItem:
    """The message of one attempt (text, reasoning, tool calls)."""
    return TranscriptItem(
        id=f"e{event.seq}",
        seq=event.seq,
        time=event.time,
        kind="assistant",
        turn=data.turn,
        step=data.step,
        attempt=data.attempt,
        blocks=block_views(data.message.content),
        interrupted=bool(data.interrupted),
    )


def tool_item(event: Event, data: ToolResultRecord) -> TranscriptItem:
    """A tool result (the page pairs it with the call of the same `call_id`)."""
    return TranscriptItem(
        id=f"e{event.seq}",
        seq=event.seq,
        time=event.time,
        kind="tool",
        turn=data.turn,
        step=data.step,
        blocks=block_views(data.message.content),
        call_id=data.call_id,
        name=data.name,
        is_error=data.is_error,
        error_code=data.error_code,
    )


def system_item(event: Event, text: str) -> TranscriptItem:
    """The system prompt of a request header (shown when it first appears or changes)."""
    return TranscriptItem(
        id=f"e{event.seq}",
        seq=event.seq,
        time=event.time,
        kind="system",
        blocks=block_views((TextBlock(text),)),
    )


def draft_item(key: CallKey, blocks: list[ContentBlock], last_seq: int, at: int) -> TranscriptItem:
    """What a still-streaming attempt has produced so far."""
    turn, step, attempt = key
    return TranscriptItem(
        id=f"draft-{turn}.{step}.{attempt}",
        seq=last_seq,
        time=at,
        kind="draft",
        turn=turn,
        step=step,
        attempt=attempt,
        blocks=block_views(blocks),
    )


def note_item(
    event: Event,
    text: str,
    *,
    key: CallKey | None = None,
    turn: int | None = None,
    is_error: bool = False,
) -> TranscriptItem:
    """A failed attempt (`key`), a retry decision or an incomplete turn end, as one line."""
    return TranscriptItem(
        id=f"e{event.seq}",
        seq=event.seq,
        time=event.time,
        kind="note",
        turn=key[0] if key is not None else turn,
        step=key[1] if key is not None else None,
        attempt=key[2] if key is not None else None,
        blocks=(BlockView(type="text", text=text),),
        is_error=is_error,
    )
