"""One attempt's stream into the log: every chunk verbatim, folded into a fresh assembler.

On cancellation the interrupted prefix is committed as an `interrupted` assistant message citing
exactly the logged chunks (spec F6), then the cancellation goes on. A client-side rate-limit wait
of the attempt's call (`runtime.ratewait`) is logged as `llm/rate-limit-wait` when it starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence

from ..assembler import BlockAssembler
from ..events_ratelimit import LlmRateLimitWait, RateLimitNotice
from ..runtime.ratewait import listen_for_rate_limit_waits
from ..session.events import AssistantChunk, AssistantMessage
from ..session.log import SessionLog
from ..vocab import ModelSource, StreamChunk, assistant_message
from .cancel import TurnCancelled, TurnSignal, cancellation

__all__ = ["consume"]


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
) -> tuple[BlockAssembler, tuple[int, ...]]:
    """Log and fold every chunk of `stream`; the assembler and the seqs of the logged chunks."""

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

    with listen_for_rate_limit_waits(waits):
        return await _consume(
            log, sid, signal, stream, turn=turn, step=step, attempt=attempt, source=source
        )


async def _consume(
    log: SessionLog,
    sid: str,
    signal: TurnSignal,
    stream: AsyncIterator[StreamChunk],
    *,
    turn: int,
    step: int,
    attempt: int,
    source: ModelSource,
) -> tuple[BlockAssembler, tuple[int, ...]]:
    assembler = BlockAssembler()
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
                        if await _landed(log, sid, data, seqs):
                            fold(chunk)
                        raise
                logged(seq)
                fold(chunk)
        if signal.cancelled:
            raise cancellation()
    except (asyncio.CancelledError, TurnCancelled):
        blocks = assembler.interrupted_blocks()
        if blocks:
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
    return assembler, tuple(seqs)


async def _one_by_one(
    iterator: AsyncIterator[StreamChunk],
) -> AsyncGenerator[tuple[StreamChunk], None]:
    """A stream that offers no batches (a middleware wraps it), as batches of one."""
    async for chunk in iterator:
        yield (chunk,)


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
