"""One attempt's stream into the log: every chunk verbatim, folded into a fresh assembler.

On cancellation the interrupted prefix is committed as an `interrupted` assistant message citing
exactly the logged chunks (spec F6), then the cancellation goes on. A client-side rate-limit wait
of the attempt's call (`runtime.ratewait`) is logged as `llm/rate-limit-wait` when it starts.
The turn's `CallSink` hears of the attempt beside the log: its final usage goes into the turn's
tally however the stream ends, and a live listener (`Agent.stream_turn`) gets every chunk.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from ..assembler import BlockAssembler
from ..events_ratelimit import LlmRateLimitWait, RateLimitNotice
from ..meter import TokenMeter
from ..runtime.ratewait import listen_for_rate_limit_waits
from ..session.events import AssistantChunk, AssistantMessage, RequestContext
from ..session.log import SessionLog
from ..vocab import ModelSource, StreamChunk, assistant_message
from .cancel import TurnCancelled, TurnSignal, cancellation

__all__ = ["CallSink", "consume"]


@dataclass(slots=True)
class CallSink:
    """What a turn's provider calls report beside the log: the `tally` of their usage (each
    call's final sample at its prices, as the log's own fold counts it) and the `listener`
    that hears each chunk as it arrives (None: nobody streams the turn)."""

    tally: TokenMeter = field(default_factory=TokenMeter)
    listener: Callable[[StreamChunk], None] | None = None


async def consume(
    log: SessionLog,
    sid: str,
    signal: TurnSignal,
    stream: AsyncIterator[StreamChunk],
    *,
    turn: int,
    step: int,
    attempt: int,
    source: ModelSource,
    sink: CallSink,
    context: RequestContext | None,
) -> tuple[BlockAssembler, tuple[int, ...]]:
    """Log and fold every chunk of `stream`; the assembler and the seqs of the logged chunks.
    `sink` hears each chunk and the call's usage, at the prices of its `request/context`."""

    async def waits(notice: RateLimitNotice) -> None:
        wait = LlmRateLimitWait(
            turn=turn,
            step=step,
            attempt=attempt,
            provider=notice.route,
            reason=notice.reason,
            wait_ms=notice.wait_ms,
            detail=notice.detail,
        )
        await log.append(sid, wait)

    assembler = BlockAssembler()
    try:
        with listen_for_rate_limit_waits(waits):
            seqs = await _consume(
                log,
                sid,
                signal,
                stream,
                assembler,
                sink.listener,
                turn=turn,
                step=step,
                attempt=attempt,
                source=source,
            )
    finally:  # the sample the log holds for this call, an interrupted one's included
        pricing = None if context is None else context.pricing
        sink.tally.record((turn, step, attempt), assembler.usage, pricing)
    return assembler, seqs


async def _consume(
    log: SessionLog,
    sid: str,
    signal: TurnSignal,
    stream: AsyncIterator[StreamChunk],
    assembler: BlockAssembler,
    listener: Callable[[StreamChunk], None] | None,
    *,
    turn: int,
    step: int,
    attempt: int,
    source: ModelSource,
) -> tuple[int, ...]:
    seqs: list[int] = []
    # One writer per attempt: a chunk is validated, given its seq and buffered without a wait
    # whenever the log can take it so (`push`); otherwise it is appended the ordinary way.
    writer = log.chunk_writer(sid, turn, step, attempt)
    push, fold, logged = writer.push, assembler.push, seqs.append
    # The runtime's chunks one read at a time when it offers them so (no middleware): a chunk
    # then costs no generator step; each is still checked, logged and folded alone.
    offered = getattr(stream, "chunk_batches", None)
    batches: AsyncIterator[Sequence[StreamChunk]] | None = offered() if offered else None
    single = None
    if batches is None:
        batches = single = _one_by_one(stream)
    if listener is not None:  # a turn streamed live: the listener hears each batch first
        batches = _heard(batches, listener)
    try:
        async for batch in batches:
            for chunk in batch:
                if signal.cancelled:  # the signal check precedes the append (spec F6)
                    raise cancellation()
                seq = push(chunk)
                if seq < 0:
                    data = writer.data(chunk)
                    try:
                        seq = (await log.append(sid, data)).seq
                    except asyncio.CancelledError:
                        # The append may still land (backends finish a started write): adopt
                        # it so the interrupted message cites exactly the logged chunks.
                        landed = False
                        async with signal.grace():  # a stalled log: not known, not cited
                            landed = await _landed(log, sid, data, seqs)
                        if landed:
                            fold(chunk)
                        raise
                logged(seq)
                fold(chunk)
        if signal.cancelled:
            raise cancellation()
    except (asyncio.CancelledError, TurnCancelled):
        blocks = assembler.interrupted_blocks()
        if blocks:
            async with signal.grace():
                await log.append(
                    sid,
                    AssistantMessage(
                        turn=turn,
                        step=step,
                        attempt=attempt,
                        message=assistant_message(blocks, source),
                        usage=assembler.usage,
                        interrupted=True,
                        source_event_seqs=tuple(seqs),
                    ),
                )
        raise
    finally:
        if single is not None:
            await single.aclose()
        closer = getattr(stream, "aclose", None)  # the whole stream, whichever view was taken
        if closer is not None:
            await closer()
    return tuple(seqs)


async def _one_by_one(
    iterator: AsyncIterator[StreamChunk],
) -> AsyncGenerator[tuple[StreamChunk], None]:
    """A stream that offers no batches (a middleware wraps it), as batches of one."""
    async for chunk in iterator:
        yield (chunk,)


async def _heard(
    batches: AsyncIterator[Sequence[StreamChunk]], listener: Callable[[StreamChunk], None]
) -> AsyncGenerator[Sequence[StreamChunk], None]:
    """`batches`, each told to `listener` chunk by chunk before it is logged."""
    async for batch in batches:
        for chunk in batch:
            listener(chunk)
        yield batch


async def _landed(log: SessionLog, sid: str, data: AssistantChunk, seqs: list[int]) -> bool:
    """After a cancelled chunk append: True (and its seq recorded) if the log holds it anyway.

    Attempt numbers are unique within a step, so a matching chunk of this attempt newer than the
    last recorded seq can only be the one whose append was interrupted.
    """
    latest = await log.latest(sid, "assistant/chunk")
    if latest is None or latest.data != data or (seqs and latest.seq <= seqs[-1]):
        return False
    seqs.append(latest.seq)
    return True
