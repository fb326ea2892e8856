"""The terminal failure boundary between the runtime and an adapter (spec/core.md §4.7, §6.11).

Four adapter-side failure sites become exactly one terminal `Finish(Error | Aborted)` carrying a
normalized `LlmFailure` (no replay state), after which the stream ends and nothing more is read:
(a) selection — route lookup, exact-model resolution and validation, the prepared-call re-check;
(b) dispatch — `adapter.stream()` raising; (c) iterator construction — `__aiter__` raising;
(d) every `__anext__` of the adapter iterator. The kind is `aborted` when the failure code is
`ABORTED`, otherwise `error`. Middleware, consumer and adapter-cleanup errors stay raised.

Cancellation (asyncio task cancellation replaces upstream's AbortSignal). At a failure site:

* If the *consuming task* is being cancelled (`asyncio.current_task().cancelling() > 0`), the
  boundary re-raises `asyncio.CancelledError` **instead of** producing a terminal chunk: the
  original one when the failure is a `CancelledError`, a fresh one chained from the adapter's
  exception when the adapter turned the cancellation into an ordinary error. Yielding a chunk to a
  task that asked to stop would swallow its cancellation (`asyncio.timeout`, `TaskGroup` and a
  consumer that `break`s at the finish would never see it), and a cancelled consumer discards the
  aborted chunk anyway.
* A `CancelledError` raised by the adapter while the consumer is *not* being cancelled (the
  adapter's own inner work was cancelled by someone else) is normalized like any adapter failure,
  into `Finish(Aborted(LlmFailure(..., code="ABORTED")))`.

Deadlines: the dispatch hands the boundary the call's `CallDeadline` (`runtime.deadline`) with
the adapter's iterator; each pull is then awaited under it, so `timeout_ms` and
`first_token_timeout_ms` hold for every adapter alike, ending the call in a `TIMEOUT` finish.

Early consumer exit: closing the stream (`aclose()`, `async with rt.stream(o) as s`, or
`contextlib.aclosing`) awaits the adapter iterator's `aclose` when the iterator is neither
exhausted nor failed; a cleanup failure reaches the consumer, unless the consumer's own exception
is already propagating, which then wins (the cleanup error is logged). After a failure the
adapter's `aclose` is never looked up.

Hot path: with no middleware, `rt.stream()` iterates one boundary generator over the adapter
iterator — one extra generator frame per chunk and no per-chunk allocation or type check; over
an HTTP adapter's pump (`BatchedChunks`) the boundary pulls once per read, so the pump's own
per-chunk generator step is saved. A consumer that folds chunks without awaiting between them
(the agent, `generate`) takes `ChunkStream.chunk_batches()` instead and pays no generator step
per chunk at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Final, Protocol, cast

from ..errors import ErrorCode, normalize_llm_failure
from ..vocab import Aborted, Error, Finish, LlmFailure, StreamChunk
from .deadline import CallDeadline
from .events import logger

__all__ = [
    "BatchedChunks",
    "ChunkStream",
    "Dispatched",
    "GuardedStream",
    "failure_finish",
    "guard_adapter",
    "guard_batches",
]

_CANCELLED_MESSAGE: Final = "the adapter call was cancelled"


def failure_finish(exc: BaseException) -> Finish:
    """The terminal chunk for an adapter-side failure: `aborted` for code ABORTED, else `error`."""
    if isinstance(exc, asyncio.CancelledError):
        text = str(exc) or _CANCELLED_MESSAGE
        return Finish(Aborted(LlmFailure(text, ErrorCode.ABORTED)))
    failure = normalize_llm_failure(exc)
    if failure.code == ErrorCode.ABORTED:
        return Finish(Aborted(failure))
    return Finish(Error(failure))


def _consumer_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _failed(exc: BaseException) -> Finish:
    """The terminal chunk for `exc` raised at a failure site, or `CancelledError` raised instead
    when the consuming task is being cancelled (the original one, or a fresh one chained)."""
    if _consumer_cancelling():
        if isinstance(exc, asyncio.CancelledError):
            raise exc
        raise asyncio.CancelledError() from exc
    return failure_finish(exc)


class BatchedChunks(Protocol):
    """An adapter iterator that can also hand its chunks over read by read (`wire.pump`'s
    `PumpStream`): the boundary then pulls one list per read instead of one chunk at a time,
    saving a generator step per chunk. The lists are the same chunks in the same order."""

    def chunk_batches(self) -> AsyncIterator[list[StreamChunk]]:
        """The chunks as one list per read (use this or the iterator itself, once)."""


Dispatched = tuple[AsyncIterator[StreamChunk], CallDeadline | None]
"""What a dispatch opens: the adapter's iterator, and the call's deadlines (None: none), under
which the boundary awaits each pull (`runtime.deadline`)."""

Opener = Callable[[], Awaitable[Dispatched]]


def guard_adapter(open_iterator: Opener) -> AsyncGenerator[StreamChunk, None]:
    """Run selection, dispatch and iteration of one adapter call behind the failure boundary,
    chunk by chunk.

    `open_iterator` performs sites (a)-(c) and returns the adapter's iterator and the call's
    deadlines; it runs only when this generator is first iterated (after every middleware had
    its say). An iterator that offers `chunk_batches()` (`BatchedChunks`) is pulled read by read.
    """
    return cast(AsyncGenerator[StreamChunk, None], _guarded(open_iterator, False))


def guard_batches(open_iterator: Opener) -> AsyncGenerator[list[StreamChunk], None]:
    """`guard_adapter` yielding lists: one per read of an adapter that offers
    `chunk_batches()`, one per chunk of any other; the failure finish comes as a list of one."""
    return cast(AsyncGenerator[list[StreamChunk], None], _guarded(open_iterator, True))


async def _guarded(
    open_iterator: Opener, lists: bool
) -> AsyncGenerator[StreamChunk | list[StreamChunk], None]:
    """The boundary itself: chunks (`lists` False) or lists of chunks (`lists` True)."""
    deadline: CallDeadline | None = None
    try:
        iterator, deadline = await open_iterator()
        batched = getattr(iterator, "chunk_batches", None)
        pulled: AsyncIterator[list[StreamChunk]] | AsyncIterator[StreamChunk]
        pulled = batched() if batched is not None else iterator
        pull = pulled.__anext__
    except (asyncio.CancelledError, Exception) as exc:
        failed = _failed(exc)
    else:
        settled = False
        try:
            while True:
                # Only the pull is guarded: anything thrown in at the `yield` (a consumer or
                # middleware error) is never turned into a failure finish.
                try:
                    if deadline is None:
                        got = await pull()
                    else:
                        got = await deadline.guard(pull())
                        deadline.first_output()
                except StopAsyncIteration:
                    settled = True
                    return
                except (asyncio.CancelledError, Exception) as exc:
                    settled = True
                    failed = _failed(exc)
                    break
                if batched is None:  # a chunk (the iterator's own `__anext__`)
                    yield [got] if lists else got
                elif lists:
                    yield got
                else:
                    for chunk in got:  # type: ignore[union-attr]  # one read's chunks
                        yield chunk
        finally:
            if deadline is not None:
                deadline.close()
            if not settled:
                close = getattr(iterator, "aclose", None)
                if close is not None:
                    await close()
    yield [failed] if lists else failed


class GuardedStream:
    """The runtime's terminal stream: iterated, it yields the chunks one by one
    (`guard_adapter`); a consumer that folds chunks without awaiting between them may instead
    take `chunk_batches()` (`guard_batches`) and save a generator step per chunk. Use one of
    the two, once."""

    __slots__ = ("_chunks", "_open", "_pulled")

    def __init__(self, open_iterator: Opener) -> None:
        self._open = open_iterator
        self._chunks: AsyncGenerator[StreamChunk, None] | None = None
        self._pulled: AsyncGenerator[list[StreamChunk], None] | None = None

    def __aiter__(self) -> AsyncGenerator[StreamChunk, None]:
        if self._chunks is None:
            self._chunks = guard_adapter(self._open)
        return self._chunks

    def __anext__(self) -> Awaitable[StreamChunk]:
        return self.__aiter__().__anext__()

    def chunk_batches(self) -> AsyncGenerator[list[StreamChunk], None]:
        """The chunks as lists (each the consumer's to keep), in order."""
        if self._pulled is None:
            self._pulled = guard_batches(self._open)
        return self._pulled

    async def aclose(self) -> None:
        """Close whichever view was taken (and the adapter iterator under it)."""
        if self._chunks is not None:
            await self._chunks.aclose()
        if self._pulled is not None:
            await self._pulled.aclose()


class ChunkStream:
    """What `rt.stream()` returns: an async iterator of chunks and an async context manager.

    `async for` runs directly on the outermost iterator (no wrapper frame per chunk). `aclose()`
    closes the outermost iterator and then every downstream iterator the middleware chain opened,
    so the adapter iterator is closed even when a middleware does not forward `aclose`.
    """

    __slots__ = ("_downstream", "_iterator")

    def __init__(
        self,
        iterator: AsyncIterator[StreamChunk],
        downstream: list[AsyncIterator[StreamChunk]] | None = None,
    ) -> None:
        self._iterator = iterator
        self._downstream = downstream

    def __aiter__(self) -> AsyncIterator[StreamChunk]:
        return self._iterator.__aiter__()

    def __anext__(self) -> Awaitable[StreamChunk]:
        return self._iterator.__anext__()

    def chunk_batches(self) -> AsyncIterator[list[StreamChunk]] | None:
        """The chunks as lists (one per read of an HTTP adapter), when no middleware wraps the
        runtime's boundary; None otherwise (iterate the stream itself). Use one or the other."""
        if self._downstream is None and isinstance(self._iterator, GuardedStream):
            return self._iterator.chunk_batches()
        return None

    async def aclose(self) -> None:
        """Close the chain outermost first; the first cleanup failure is raised after all ran."""
        first: Exception | None = None
        iterators = [self._iterator]
        if self._downstream:
            iterators.extend(it for it in self._downstream if it is not self._iterator)
        for iterator in iterators:
            close = getattr(iterator, "aclose", None)
            if close is None:
                continue
            try:
                await close()
            except Exception as exc:
                if first is None:
                    first = exc
        if first is not None:
            raise first

    async def __aenter__(self) -> ChunkStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            await self.aclose()
            return
        try:
            await self.aclose()
        except Exception as cleanup:
            # The consumer's own error wins; the cleanup failure is only reported.
            logger.warning("llm: stream cleanup failed while an error propagated", exc_info=cleanup)
