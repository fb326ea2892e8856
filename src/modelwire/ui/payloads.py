"""The JSON payloads of the inspector's endpoints: frozen msgspec structs, snake_case keys.

Times are epoch milliseconds as logged; token counts are ints in the meter's disjoint buckets;
a cost is a decimal string (USD) when the meter offers one and null otherwise — never invented.
Every string here may be model or tool output: the page renders it as text, never as HTML.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

from ..events import EpochHeader, RequestContext
from ..vocab import StreamChunk

__all__ = [
    "AttemptDetail",
    "AttemptStatus",
    "AttemptView",
    "BlockView",
    "CallUsage",
    "ChunkPage",
    "ChunkRow",
    "ContextView",
    "EventPage",
    "EventRow",
    "FailureView",
    "HeaderView",
    "MarkerView",
    "RetryView",
    "SessionRow",
    "SessionView",
    "SessionsPage",
    "StepView",
    "ToolRunView",
    "TranscriptItem",
    "TurnView",
    "UsageView",
]

AttemptStatus: TypeAlias = Literal[
    "ok", "failed", "aborted", "interrupted", "unfinished", "running"
]
"""How one provider call ended (`running` while its stream is open, `unfinished` when its step
or turn closed without a finish chunk, e.g. after a crash)."""


class UsageView(msgspec.Struct, frozen=True):
    """Token usage in the meter's disjoint buckets, plus their total (reasoning is in output)."""

    input: int
    cache_read: int
    cache_write: int
    output: int
    reasoning: int
    total: int


class FailureView(msgspec.Struct, frozen=True, omit_defaults=True):
    """A failed call or turn: the stable code, the HTTP status and the message."""

    code: str
    message: str
    status: int | None = None
    retry_after_ms: float | None = None
    request_id: str | None = None


# ---- the sessions list -----------------------------------------------------------------------


class SessionRow(msgspec.Struct, frozen=True, kw_only=True):
    """One row of the sessions list; a `pending` row (a session too big to summarize before the
    page answers) has only the log's own counts and times until a later request."""

    session_id: str
    events: int
    started: int
    last_time: int
    route: str | None
    turns: int | None
    tokens: int | None
    cost: str | None
    outcome: str | None
    outcome_code: str | None
    pending: bool = False


class SessionsPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of the sessions list: `matched` rows pass the search, `items` is the slice shown."""

    log: str
    total: int
    matched: int
    offset: int
    limit: int
    sort: str
    order: Literal["asc", "desc"]
    q: str
    items: tuple[SessionRow, ...]


# ---- one session -----------------------------------------------------------------------------


class AttemptView(msgspec.Struct, frozen=True, kw_only=True):
    """One provider call (turn, step, attempt) on the timeline."""

    turn: int
    step: int
    attempt: int
    provider: str | None
    model: str | None
    start: int
    end: int | None
    status: AttemptStatus
    finish: str | None
    failure: FailureView | None
    chunks: int
    first_seq: int | None
    last_seq: int | None
    usage: UsageView | None
    cost: str | None
    fallback: bool


class RetryView(msgspec.Struct, frozen=True, kw_only=True):
    """An `llm/retry` decision and its wait (`end` is its `llm/retry-started`, when logged)."""

    retry: int
    mode: str
    delay_ms: float
    max_retries: int | None
    failure: FailureView
    start: int
    end: int | None


class ToolRunView(msgspec.Struct, frozen=True, kw_only=True):
    """One tool execution: `tool/call` to `tool/result`; `approval` for a call that needs a
    person's decision: `pending`, `approved` or `denied` (None: it needs none)."""

    call_id: str
    name: str
    start: int
    end: int | None
    is_error: bool
    error_code: str | None
    approval: str | None = None


class MarkerView(msgspec.Struct, frozen=True, kw_only=True):
    """An event the inspector has no lane for (a plugin's own type, or one it cannot decode)."""

    seq: int
    time: int
    type: str
    text: str


class StepView(msgspec.Struct, frozen=True, kw_only=True):
    """A step: its attempts (retries inside it), the retry waits and the tool runs."""

    step: int
    start: int
    end: int | None
    attempts: tuple[AttemptView, ...]
    retries: tuple[RetryView, ...]
    tools: tuple[ToolRunView, ...]
    markers: tuple[MarkerView, ...]


class TurnView(msgspec.Struct, frozen=True, kw_only=True):
    """A turn; `updated_seq` is the last event that changed it (what a live update resends)."""

    turn: int
    start: int
    end: int | None
    outcome: str | None
    failure: FailureView | None
    detail: str | None
    steps: tuple[StepView, ...]
    updated_seq: int


class BlockView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One content block as text: `text`, `reasoning`, `tool-call`, `tool-result` or `image`."""

    type: str
    text: str = ""
    call_id: str | None = None
    name: str | None = None
    is_error: bool = False


class TranscriptItem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One entry of the conversation, in log order; `id` is stable across live updates.

    A `note` is not a message: a failed attempt, a retry decision or a turn that did not
    complete, shown where it happened (`is_error` for failures)."""

    id: str
    seq: int
    time: int
    kind: Literal["user", "assistant", "tool", "system", "draft", "note"]
    turn: int | None = None
    step: int | None = None
    attempt: int | None = None
    blocks: tuple[BlockView, ...] = ()
    call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    error_code: str | None = None
    interrupted: bool = False


class CallUsage(msgspec.Struct, frozen=True, kw_only=True):
    """Usage (and cost, when known) of one provider call."""

    turn: int
    step: int
    attempt: int
    usage: UsageView
    cost: str | None


class SessionView(msgspec.Struct, frozen=True, kw_only=True):
    """A session as the page draws it. `full` is False for a live update: `turns` then holds only
    the turns changed since the client's seq and `transcript` only the new entries.

    `complete` is False for the first page of a giant session: the view as of `next_seq`, short
    of the log's end (`running` then describes that prefix); the live stream sends the rest."""

    session_id: str
    full: bool
    complete: bool
    next_seq: int
    start: int | None
    end: int | None
    running: bool
    route: str | None
    turns: tuple[TurnView, ...]
    transcript: tuple[TranscriptItem, ...]
    draft: TranscriptItem | None
    calls: tuple[CallUsage, ...]
    total: UsageView
    cost: str | None


# ---- one attempt and the raw log ---------------------------------------------------------------


class HeaderView(msgspec.Struct, frozen=True):
    """The request header in force for an attempt (`request/header` at `seq`), as logged."""

    seq: int
    reason: str
    header: EpochHeader


class ContextView(msgspec.Struct, frozen=True):
    """The route capacity in force for an attempt (`request/context` at `seq`), as logged."""

    seq: int
    context: RequestContext


class AttemptDetail(msgspec.Struct, frozen=True, kw_only=True):
    """An attempt's request facts: header, context, and how many messages the request carried."""

    session_id: str
    attempt: AttemptView
    header: HeaderView | None
    context: ContextView | None
    input_messages: int


class ChunkRow(msgspec.Struct, frozen=True):
    """One raw `assistant/chunk` as logged."""

    seq: int
    time: int
    chunk: StreamChunk


class ChunkPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of an attempt's raw chunks; `next_seq` is the cursor of the next page (None: done)."""

    total: int
    items: tuple[ChunkRow, ...]
    next_seq: int | None


class EventRow(msgspec.Struct, frozen=True):
    """One raw event: seq, type, time and its payload (a typed struct, encoded as logged)."""

    seq: int
    type: str
    time: int
    data: msgspec.Struct


class EventPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a session's raw events from `from_seq`; `next_seq` is None at the end."""

    session_id: str
    items: tuple[EventRow, ...]
    next_seq: int | None
