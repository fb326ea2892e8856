"""Helpers for the replay tests: recorded sessions built in a real log and exported to JSONL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path

import msgspec

from modelwire.session import (
    AssistantChunk,
    AssistantMessage,
    EpochHeader,
    Event,
    MemoryLog,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
    TurnCompleted,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from modelwire.session.export import export_session
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    CallConfig,
    Error,
    Finish,
    GenerateOptions,
    LlmFailure,
    ModelSource,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
    assistant_message,
    user_message,
)

ROUTE = "acme"
MODEL = "acme-1"


def text_chunks(text: str, *, usage: TokenUsage | None = None) -> list[StreamChunk]:
    """One successful text call: start, one delta, end, usage, stop."""
    return [
        BlockStart(0, "text"),
        TextDelta(0, text),
        BlockEnd(0, TextBlock(text)),
        UsageChunk(usage or TokenUsage(input_tokens=3, output_tokens=1)),
        Finish(Stop()),
    ]


def error_chunks(code: str = "EMPTY_RESPONSE", message: str = "empty") -> list[StreamChunk]:
    """One failed call as the runtime logs it: a lone error finish."""
    return [Finish(Error(LlmFailure(message, code)))]


def chunk_events(
    chunks: Iterable[StreamChunk], *, turn: int = 1, step: int = 1, attempt: int = 1
) -> list[AssistantChunk]:
    return [AssistantChunk(turn, step, attempt, c) for c in chunks]


def as_events(
    datas: Sequence[msgspec.Struct], *, types: Sequence[str] | None = None
) -> list[Event]:
    """Wrap payloads as events with contiguous seqs (types from the registry unless given)."""
    from modelwire.session import event_types

    names = {struct: name for name, struct in event_types().items()}
    out = []
    for i, data in enumerate(datas):
        name = types[i] if types is not None else names[type(data)]
        out.append(Event(i, name, 1_700_000_000_000 + i, data))
    return out


def header(provider: str = ROUTE, model: str = MODEL, **kw: object) -> RequestHeader:
    config = CallConfig(provider=provider, model=model, **kw)  # type: ignore[arg-type]
    return RequestHeader(EpochHeader(config=config), "initial")


def turn(
    text: str, calls: Sequence[Sequence[StreamChunk]], *, number: int = 1, step: int = 1
) -> list[msgspec.Struct]:
    """A recorded turn: user message, request facts, one attempt per `calls`, the answer."""
    out: list[msgspec.Struct] = [TurnStart(number), StepStart(number, step)]
    out.append(UserMessage(user_message(text)))
    if number == 1:
        out.append(header())
        out.append(RequestContext(ROUTE, MODEL, 1000))
    for attempt, chunks in enumerate(calls, start=1):
        out.extend(chunk_events(chunks, turn=number, step=step, attempt=attempt))
    last = calls[-1]
    blocks = tuple(c.block for c in last if isinstance(c, BlockEnd))
    if blocks:
        out.append(
            AssistantMessage(
                turn=number,
                step=step,
                attempt=len(calls),
                message=assistant_message(blocks, ModelSource(ROUTE, MODEL)),
                source_event_seqs=(),
            )
        )
    out.extend([StepEnd(number, step), TurnEnd(number, TurnCompleted())])
    return out


async def record(datas: Sequence[msgspec.Struct], path: Path, session_id: str = "rec") -> Path:
    """Append `datas` to a fresh memory log and export the session to `path`."""
    log = MemoryLog()
    await log.append_many(session_id, datas)
    await export_session(log, session_id, path)
    return path


def write_json(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))
    return path


def chunk_json(chunk: StreamChunk) -> object:
    return msgspec.to_builtins(chunk)


def options(
    text: str = "hi", *, session_id: str | None = "s1", provider: str = ROUTE, model: str = MODEL
) -> GenerateOptions:
    return GenerateOptions(
        provider=provider, model=model, messages=(user_message(text),), session_id=session_id
    )


async def collect(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    return [c async for c in stream]
