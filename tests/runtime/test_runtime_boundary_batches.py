"""The failure boundary over an adapter iterator that hands its chunks over read by read
(`runtime.boundary.BatchedChunks`, as `wire.pump.PumpStream` does): the same chunks, the same
failure rules, one pull per read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable

import pytest
from runtime_helpers import ScriptedAdapter, collect, opts

from modelwire.errors import ErrorCode, LlmError
from modelwire.runtime import LlmRuntime
from modelwire.vocab import BlockStart, Error, Finish, GenerateOptions, StreamChunk, TextDelta

READS: tuple[tuple[StreamChunk, ...], ...] = (
    (BlockStart(0, "text"), TextDelta(0, "a")),
    (TextDelta(0, "b"),),
)


class Batched:
    """An adapter iterator offering `chunk_batches`; its plain iteration must not be used."""

    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail = fail
        self.pulls = 0
        self.closed = False

    def __aiter__(self) -> Batched:
        return self

    async def __anext__(self) -> StreamChunk:
        raise AssertionError("the boundary pulled chunk by chunk")

    async def _reads(self) -> AsyncGenerator[list[StreamChunk], None]:
        try:
            for read in READS:
                self.pulls += 1
                yield list(read)
            if self.fail is not None:
                raise self.fail
        finally:
            self.closed = True

    def chunk_batches(self) -> AsyncIterator[list[StreamChunk]]:
        self.batches = self._reads()
        return self.batches

    async def aclose(self) -> None:
        await self.batches.aclose()


class BatchedAdapter(ScriptedAdapter):
    def __init__(self, iterator: Batched) -> None:
        super().__init__()
        self.iterator = iterator

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:  # type: ignore[override]
        return self.iterator


async def test_boundary_pulls_a_batched_iterator_read_by_read(rt: LlmRuntime) -> None:
    iterator = Batched()
    rt.register_adapter(["p"], BatchedAdapter(iterator))
    assert await collect(rt.stream(opts())) == [c for read in READS for c in read]
    assert iterator.pulls == len(READS) and iterator.closed


async def test_boundary_failure_after_batches_is_one_terminal_finish(rt: LlmRuntime) -> None:
    iterator = Batched(LlmError("cut off", ErrorCode.TRANSPORT))
    rt.register_adapter(["p"], BatchedAdapter(iterator))
    chunks = await collect(rt.stream(opts()))
    assert chunks[:-1] == [c for read in READS for c in read]
    finish = chunks[-1]
    assert isinstance(finish, Finish) and isinstance(finish.reason, Error)
    assert finish.reason.failure.code == "TRANSPORT"


async def test_consumer_stopping_mid_batch_closes_the_batches(rt: LlmRuntime) -> None:
    iterator = Batched()
    rt.register_adapter(["p"], BatchedAdapter(iterator))
    async with rt.stream(opts()) as stream:
        async for chunk in stream:
            if isinstance(chunk, TextDelta):
                break  # inside the first read's list
    assert iterator.closed and iterator.pulls == 1


async def test_consumer_cancelled_while_a_batch_is_pulled_stays_cancelled(rt: LlmRuntime) -> None:
    gate, started = asyncio.Event(), asyncio.Event()

    class Slow(Batched):
        async def _reads(self) -> AsyncGenerator[list[StreamChunk], None]:
            try:
                started.set()
                await gate.wait()  # never set: the pull is in progress when the task is cancelled
                yield [BlockStart(0, "text")]
            finally:
                self.closed = True

    iterator = Slow()
    rt.register_adapter(["p"], BatchedAdapter(iterator))
    task = asyncio.ensure_future(collect(rt.stream(opts())))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert iterator.closed


async def collect_batches(rt: LlmRuntime) -> list[list[StreamChunk]]:
    """Drain one stream's `chunk_batches()` (it must offer them), closing the stream."""
    async with rt.stream(opts()) as stream:
        batches = stream.chunk_batches()
        assert batches is not None
        return [batch async for batch in batches]


async def test_chunk_batches_hand_the_consumer_one_list_per_read(rt: LlmRuntime) -> None:
    """`ChunkStream.chunk_batches()` with no middleware: the same chunks as iterating the stream,
    one list per read of a batched adapter; closing the stream closes the adapter's reads."""
    iterator = Batched()
    rt.register_adapter(["p"], BatchedAdapter(iterator))
    got = await collect_batches(rt)
    assert got == [list(read) for read in READS]
    assert iterator.closed


async def test_chunk_batches_of_a_plain_adapter_are_lists_of_one(rt: LlmRuntime) -> None:
    adapter = ScriptedAdapter()
    rt.register_adapter(["p"], adapter)
    plain = await collect(rt.stream(opts()))
    got = await collect_batches(rt)
    assert all(len(batch) == 1 for batch in got)
    assert [batch[0] for batch in got] == plain


async def test_chunk_batches_end_with_the_failure_finish_as_a_list_of_one(rt: LlmRuntime) -> None:
    iterator = Batched(LlmError("cut off", ErrorCode.TRANSPORT))
    rt.register_adapter(["p"], BatchedAdapter(iterator))
    got = await collect_batches(rt)
    assert got[:-1] == [list(read) for read in READS]
    (finish,) = got[-1]
    assert isinstance(finish, Finish) and isinstance(finish.reason, Error)
    assert finish.reason.failure.code == "TRANSPORT"


async def test_chunk_batches_abandoned_mid_stream_close_the_adapter(rt: LlmRuntime) -> None:
    iterator = Batched()
    rt.register_adapter(["p"], BatchedAdapter(iterator))
    async with rt.stream(opts()) as stream:
        batches = stream.chunk_batches()
        assert batches is not None
        async for _ in batches:
            break  # after the first read
    assert iterator.closed and iterator.pulls == 1


async def test_a_middleware_stream_offers_no_batches(rt: LlmRuntime) -> None:
    """A middleware sees (and may change) every chunk: its stream is iterated chunk by chunk."""
    rt.register_adapter(["p"], BatchedAdapter(Batched()))

    async def passthrough(
        options: GenerateOptions, call_next: Callable[..., AsyncIterator[StreamChunk]]
    ) -> AsyncGenerator[StreamChunk, None]:
        async for chunk in call_next():
            yield chunk

    rt.use(passthrough)
    async with rt.stream(opts()) as stream:
        assert stream.chunk_batches() is None
        got = [chunk async for chunk in stream]
    assert got == [c for read in READS for c in read]
