"""Replay entries and the derivation of a call script from a recorded session's events (D.2).

One provider call is one run of `assistant/chunk` events that ends at its `finish` chunk, so the
attempts of a retried Step become separate entries. Each entry remembers the request the
recording made for it (latest `request/header` and the messages derived before its first chunk)
for `strict` replays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, Literal, TypeAlias

import msgspec

from ...errors import ErrorCode, HarnessError
from ...events import (
    AssistantChunk,
    AssistantMessage,
    EpochHeader,
    Event,
    RequestContext,
    RequestHeader,
    ToolResultRecord,
    UserMessage,
)
from ...vocab import (
    BlockEnd,
    BlockStart,
    ContentBlock,
    Finish,
    LlmFailure,
    Message,
    Stop,
    StreamChunk,
    TokenUsage,
    UsageChunk,
)

__all__ = [
    "PLACEHOLDER_PREFIX",
    "ChunksEntry",
    "HangEntry",
    "RecordedRequest",
    "ReplayCall",
    "ReplayEntry",
    "ReplayScript",
    "ThrowEntry",
    "derive_replay_script",
]

PLACEHOLDER_PREFIX: Final = "{{fromRequest:"
"""Opens a request placeholder inside any string of an entry (resolved at stream time)."""


class ChunksEntry(msgspec.Struct, frozen=True, tag="chunks", tag_field="kind"):
    """Replay exactly these chunks (a recorded call, including an in-band error finish)."""

    chunks: tuple[StreamChunk, ...]
    kind: ClassVar[Literal["chunks"]] = "chunks"


class ThrowEntry(msgspec.Struct, frozen=True, tag="throw", tag_field="kind"):
    """Replay the prefix `chunks`, then raise `LlmError` built from `failure` (a thrown stream)."""

    chunks: tuple[StreamChunk, ...]
    failure: LlmFailure
    kind: ClassVar[Literal["throw"]] = "throw"


class HangEntry(msgspec.Struct, frozen=True, tag="hang", tag_field="kind", omit_defaults=True):
    """Yield a partial text block, touch `ready_file` (if set), then wait until cancelled."""

    ready_file: str | None = None
    kind: ClassVar[Literal["hang"]] = "hang"


ReplayEntry: TypeAlias = ChunksEntry | ThrowEntry | HangEntry
"""One scripted provider call, discriminated by `kind`."""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """What the recording sent for one call: the header in force and the derived messages."""

    header: EpochHeader | None
    messages: tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class ReplayCall:
    """One script position: the entry, the recorded request (None for sidecar entries), a label."""

    entry: ReplayEntry
    request: RecordedRequest | None
    label: str
    templated: bool


@dataclass(frozen=True, slots=True)
class ReplayScript:
    """The calls of one recorded session, in log order, with where they came from.

    `headers` and `contexts` are the session's logged request facts (for model metadata).
    """

    session_id: str
    created_at: int
    source: str
    calls: tuple[ReplayCall, ...]
    headers: tuple[EpochHeader, ...] = ()
    contexts: tuple[RequestContext, ...] = ()


_ENCODER: Final = msgspec.json.Encoder()
_MARK: Final = PLACEHOLDER_PREFIX.encode()
_SUMMARY: Final = "compaction/summary"


def is_templated(entry: ReplayEntry) -> bool:
    """True when some string of `entry` holds a `{{fromRequest:` placeholder."""
    return _MARK in _ENCODER.encode(entry)


def make_call(entry: ReplayEntry, request: RecordedRequest | None, label: str) -> ReplayCall:
    """A script position for `entry` (placeholders detected once, here)."""
    return ReplayCall(entry, request, label, is_templated(entry))


def _where(source: str, event: Event, lines: Sequence[int] | None, index: int) -> str:
    if lines is not None and index < len(lines):
        return f"{source}: line {lines[index]} (seq {event.seq})"
    return f"{source} (seq {event.seq})"


def _unfinished(where: str, key: tuple[int, int, int]) -> HarnessError:
    turn, step, attempt = key
    return HarnessError(
        f"replay: {where}: model call {turn}/{step} (attempt {attempt}) ended without a finish "
        "chunk (a thrown stream); this scenario needs a sidecar override "
        "(<export>.override.json)",
        ErrorCode.INVALID_REPLAY_FILE,
    )


def _summary_entry(data: msgspec.Struct, where: str) -> tuple[StreamChunk, ...] | None:
    """The synthetic stream of a `compaction/summary` marked as a local LLM call (D6), else None."""
    if getattr(data, "llm_stream_call", None) is not True:
        return None
    raw: object = getattr(data, "raw_output", None)
    if isinstance(raw, Message):
        raw = raw.content
    if raw is None:
        raise HarnessError(
            f"replay: {where}: compaction/summary marks an LLM stream call without raw_output",
            ErrorCode.INVALID_REPLAY_FILE,
        )
    if isinstance(raw, str) or not isinstance(raw, Sequence):
        raise HarnessError(
            f"replay: {where}: compaction/summary raw_output must be a "
            "message or a sequence of content blocks",
            ErrorCode.INVALID_REPLAY_FILE,
        )
    blocks: list[ContentBlock] = list(raw)
    chunks: list[StreamChunk] = []
    for index, block in enumerate(blocks):
        chunks.append(BlockStart(index, block.type))
        chunks.append(BlockEnd(index, block))
    usage: object = getattr(data, "usage", None)
    if isinstance(usage, TokenUsage):
        chunks.append(UsageChunk(usage))
    chunks.append(Finish(Stop()))
    return tuple(chunks)


def derive_replay_script(
    events: Sequence[Event],
    *,
    source: str = "<events>",
    lines: Sequence[int] | None = None,
    start: int = 0,
) -> tuple[ReplayCall, ...]:
    """One call per recorded provider call, in log order (rules D3–D6).

    Only `assistant/chunk` and `compaction/summary` events make calls; a call ends at its
    `finish` chunk. A call still open when its (turn, step, attempt) changes, when a compaction
    summary arrives, or at the end of the events raises `INVALID_REPLAY_FILE` naming `source` and
    the line (from `lines`, parallel to `events`) or seq. Request facts and the message history
    are folded along the way so every call knows what the recording asked for. Calls are taken
    only from `events[start:]` (a forked child's inherited prefix is history, never calls).
    """
    calls: list[ReplayCall] = []
    messages: list[Message] = []
    header: EpochHeader | None = None
    open_key: tuple[int, int, int] | None = None
    open_chunks: list[StreamChunk] = []
    open_request: RecordedRequest | None = None
    last_where = source
    for index, event in enumerate(events):
        data = event.data
        if index < start and (isinstance(data, AssistantChunk) or event.type == _SUMMARY):
            continue
        if isinstance(data, AssistantChunk):
            key = (data.turn, data.step, data.attempt)
            if open_key is not None and key != open_key:
                raise _unfinished(_where(source, event, lines, index), open_key)
            if open_key is None:
                open_key = key
                open_request = RecordedRequest(header, tuple(messages))
            open_chunks.append(data.chunk)
            last_where = _where(source, event, lines, index)
            if isinstance(data.chunk, Finish):
                turn, step, attempt = open_key
                label = f"turn {turn} step {step} attempt {attempt}"
                calls.append(make_call(ChunksEntry(tuple(open_chunks)), open_request, label))
                open_key, open_chunks, open_request = None, [], None
        elif event.type == _SUMMARY:
            where = _where(source, event, lines, index)
            if open_key is not None:
                raise _unfinished(where, open_key)
            synthetic = _summary_entry(data, where)
            if synthetic is not None:
                # A local summarizer's request is not the conversation's: never compared.
                label = f"compaction summary at seq {event.seq}"
                calls.append(make_call(ChunksEntry(synthetic), None, label))
        elif isinstance(data, UserMessage):
            messages.append(data.message)
        elif isinstance(data, AssistantMessage):
            if data.message.content:
                messages.append(data.message)
        elif isinstance(data, ToolResultRecord):
            messages.append(data.message)
        elif isinstance(data, RequestHeader):
            header = data.header
    if open_key is not None:
        raise _unfinished(last_where, open_key)
    return tuple(calls)


def recorded_routes(
    events: Sequence[Event],
) -> tuple[tuple[EpochHeader, ...], tuple[RequestContext, ...]]:
    """Every logged request header and request context, in log order (for model metadata)."""
    headers: list[EpochHeader] = []
    contexts: list[RequestContext] = []
    for event in events:
        data = event.data
        if isinstance(data, RequestHeader):
            headers.append(data.header)
        elif isinstance(data, RequestContext):
            contexts.append(data)
    return tuple(headers), tuple(contexts)
