"""The dev invariant companion: stream grammar and registry readability checks (spec §7.8).

`install_invariants(rt)` adds an outermost `llm/stream` middleware that validates exactly what
consumers receive (and raises `InvariantError` before yielding a violating chunk) and an
`llm/adapter-change` listener that checks every registered route still has a readable retry
policy. It is a development and test facility; production compositions leave it out.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Final

from ..errors import ErrorCode, HarnessError
from ..never import assert_never
from ..vocab import (
    Aborted,
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    GenerateOptions,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from ..vocab.json import MAX_SAFE_INT as _MAX_SAFE_INT
from .middleware import CallNext
from .scope import Scope

if TYPE_CHECKING:
    from .runtime import LlmRuntime

__all__ = ["InvariantError", "check_registry", "checked_stream", "install_invariants"]

PACKAGE: Final = "modelwire"


class InvariantError(HarnessError):
    """A broken runtime invariant (code `INVARIANT`); a plugin or adapter defect, never a retry."""

    def __init__(self, detail: str) -> None:
        super().__init__(f'invariant violated by "{PACKAGE}": {detail}', ErrorCode.INVARIANT)


def _valid_index(index: object) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or index < 0 or index > _MAX_SAFE_INT:
        raise InvariantError(
            f"LLM stream block index must be a non-negative safe integer, got {index}"
        )
    return index


def _expect_open(open_blocks: dict[int, str], index: object, expected: str) -> None:
    actual = open_blocks.get(_valid_index(index))
    if actual != expected:
        raise InvariantError(
            f"{expected} delta at index {index} requires an open {expected} block, got {actual}"
        )


async def checked_stream(source: AsyncIterator[StreamChunk]) -> AsyncIterator[StreamChunk]:
    """Re-yield `source`, raising `InvariantError` before any chunk that breaks the grammar.

    An exception raised by `source` itself propagates as is (no missing-finish is invented).
    """
    open_blocks: dict[int, str] = {}
    finished = False
    usage_seen = False
    try:
        async for chunk in source:
            if finished:
                raise InvariantError(f"LLM stream emitted {chunk.type} after terminal finish")
            match chunk:
                case BlockStart():
                    index = _valid_index(chunk.index)
                    if index in open_blocks:
                        raise InvariantError(f"LLM stream repeated block-start index {index}")
                    open_blocks[index] = chunk.block_type
                case TextDelta():
                    _expect_open(open_blocks, chunk.index, "text")
                case ReasoningDelta():
                    _expect_open(open_blocks, chunk.index, "reasoning")
                case ToolCallDelta():
                    _expect_open(open_blocks, chunk.index, "tool-call")
                case BlockEnd():
                    index = _valid_index(chunk.index)
                    expected = open_blocks.get(index)
                    if expected is None:
                        raise InvariantError(
                            f"LLM stream block-end index {index} has no open block"
                        )
                    if chunk.block.type != expected:
                        raise InvariantError(
                            f"LLM stream block-end index {index} closes {chunk.block.type}, "
                            f"expected {expected}"
                        )
                    del open_blocks[index]
                case UsageChunk():
                    if usage_seen:
                        raise InvariantError("LLM stream emitted usage more than once")
                    usage_seen = True
                case Finish():
                    if open_blocks and not isinstance(chunk.reason, (Error, Aborted)):
                        raise InvariantError(
                            f"LLM stream finished with {len(open_blocks)} open block(s)"
                        )
                    finished = True
                case _:
                    assert_never(chunk, "llm stream invariant")
            yield chunk
    finally:
        close = getattr(source, "aclose", None)
        if close is not None:
            await close()
    if not finished:
        raise InvariantError("LLM stream ended without a terminal finish chunk")


def check_registry(runtime: LlmRuntime | None) -> None:
    """Every registered route must have a readable retry policy; no runtime means nothing to do."""
    if runtime is None:
        return
    for info in runtime.list_providers():
        try:
            runtime.provider_retry_policy(info.id)
        except Exception as exc:
            raise InvariantError(
                f'llm/adapter-change fired while provider "{info.id}" has no readable registration'
            ) from exc


def install_invariants(runtime: LlmRuntime, *, scope: Scope | None = None) -> Callable[[], None]:
    """Install both checks on `runtime` (the stream check outermost); returns the remover."""
    ref = weakref.ref(runtime)

    def middleware(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        return checked_stream(call_next())

    def on_change() -> None:
        check_registry(ref())

    remove_middleware = runtime.use(middleware, prepend=True, scope=scope)
    remove_listener = runtime.on_adapter_change(on_change, scope=scope)

    def remove() -> None:
        remove_listener()
        remove_middleware()

    return remove
