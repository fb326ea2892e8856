"""Assembled views of one call: `generate()` (one result) and `stream_blocks()` (completed blocks).

Both consume `rt.stream()` (so the `llm/stream` chain and the failure boundary apply) and fold it
with the one `BlockAssembler`. A failed call's partial output is discarded (spec R-BND-3):
`generate()` returns the failure in `finish` with an empty message, `stream_blocks()` raises it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Self

import msgspec

from ..assembler import BlockAssembler
from ..errors import LlmError
from ..vocab import (
    Aborted,
    BlockEnd,
    ContentBlock,
    Error,
    Finish,
    FinishReason,
    GenerateOptions,
    LlmFailure,
    Message,
    ModelSource,
    ReplayEnvelope,
    TokenUsage,
    ToolCallBlock,
    assistant_message,
)
from .boundary import ChunkStream

__all__ = ["GenerateResult", "assemble_call", "stream_blocks"]


class GenerateResult(msgspec.Struct, frozen=True, kw_only=True):
    """One fully assembled call: the assistant message, usage, finish reason and replay state."""

    message: Message
    usage: TokenUsage | None
    finish: FinishReason
    replay_state: ReplayEnvelope | None

    @property
    def failure(self) -> LlmFailure | None:
        """The failure of a call that ended in `Error` or `Aborted`, else None."""
        finish = self.finish
        return finish.failure if isinstance(finish, (Error, Aborted)) else None

    def raise_for_failure(self) -> Self:
        """This result, or its failure raised as the `LlmError` category of its code
        (`mw.AuthError` for `MISSING_CREDENTIAL`, ...): `rt.generate_sync(ask).raise_for_failure()`."""
        failure = self.failure
        if failure is not None:
            raise LlmError.from_failure(failure)
        return self


async def assemble_call(options: GenerateOptions, stream: ChunkStream) -> GenerateResult:
    """Drain `stream` into a `GenerateResult` attributed to `options.provider`/`options.model`."""
    assembler = BlockAssembler()
    push = assembler.push
    async with stream:
        batches = stream.chunk_batches()
        if batches is None:  # a middleware wraps the boundary: chunk by chunk
            async for chunk in stream:
                push(chunk)
        else:
            async for batch in batches:
                for chunk in batch:
                    push(chunk)
    finish = assembler.finish
    if isinstance(finish, (Error, Aborted)):
        source = ModelSource(options.provider, options.model)
        return GenerateResult(
            message=assistant_message((), source),
            usage=assembler.usage,
            finish=finish,
            replay_state=None,
        )
    replay_state = assembler.replay_state
    source = ModelSource(options.provider, options.model, replay_state)
    return GenerateResult(
        message=assembler.message(source),
        usage=assembler.usage,
        finish=finish,
        replay_state=replay_state,
    )


async def stream_blocks(stream: ChunkStream) -> AsyncIterator[ContentBlock]:
    """Yield each content block once it is complete.

    Text and reasoning blocks are yielded at their first `block-end`; tool calls and blocks the
    adapter never closed are yielded after the finish, in first-seen order, from the assembler's
    keep/drop decision (a `max-tokens` finish drops tool calls). A failure finish raises its
    `LlmError` (partial output is discarded).
    """
    assembler = BlockAssembler()
    ended: set[int] = set()
    sent: set[int] = set()  # ids of the block objects already yielded (the assembler keeps them)
    async with stream:
        async for chunk in stream:
            assembler.push(chunk)
            if type(chunk) is BlockEnd:
                block = chunk.block
                if chunk.index not in ended:
                    ended.add(chunk.index)
                    if not isinstance(block, ToolCallBlock):
                        sent.add(id(block))
                        yield block
            elif type(chunk) is Finish:
                break
    finish = assembler.finish
    if isinstance(finish, (Error, Aborted)):
        raise LlmError.from_failure(finish.failure)
    for block in assembler.blocks():
        if id(block) not in sent:
            yield block
