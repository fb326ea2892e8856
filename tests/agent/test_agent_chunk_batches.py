"""The agent folds the runtime's chunks read by read (`ChunkStream.chunk_batches()`) when no
middleware wraps the boundary, and chunk by chunk otherwise: the log holds the same events
either way, one `assistant/chunk` per chunk with its own seq."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable

from agent_helpers import Rig, ScriptedAdapter, text_script

from modelwire.runtime import LlmRuntime
from modelwire.session import MemoryLog
from modelwire.vocab import GenerateOptions, StreamChunk

SID = "s1"


async def _passthrough(
    options: GenerateOptions, call_next: Callable[..., AsyncIterator[StreamChunk]]
) -> AsyncGenerator[StreamChunk, None]:
    async for chunk in call_next():
        yield chunk


class _Reads:
    """An adapter iterator that hands its chunks over in two reads (as the HTTP pump does)."""

    def __init__(self, chunks: list[StreamChunk]) -> None:
        self.reads = [chunks[:3], chunks[3:]]
        self.closed = False

    def __aiter__(self) -> _Reads:
        return self

    async def __anext__(self) -> StreamChunk:
        raise AssertionError("pulled chunk by chunk")

    async def _batches(self) -> AsyncGenerator[list[StreamChunk], None]:
        try:
            for read in self.reads:
                yield list(read)
        finally:
            self.closed = True

    def chunk_batches(self) -> AsyncGenerator[list[StreamChunk], None]:
        self.pulled = self._batches()
        return self.pulled

    async def aclose(self) -> None:
        await self.pulled.aclose()


class _ReadsAdapter(ScriptedAdapter):
    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:  # type: ignore[override]
        self.requests.append(options)
        self.last = _Reads(list(self.scripts.pop(0)))  # type: ignore[arg-type]
        return self.last


async def _chunks_of_a_turn(middleware: bool, batched: bool) -> tuple[list[object], object]:
    runtime = LlmRuntime()
    adapter = _ReadsAdapter() if batched else ScriptedAdapter()
    runtime.register_adapter(["scripted"], adapter)
    if middleware:
        runtime.use(_passthrough)
    rig = Rig(runtime, adapter, MemoryLog())
    adapter.queue(text_script("hello"))
    result = await rig.agent().run_turn(SID, "hi")
    events = [e for e in await rig.log.read(SID) if e.type == "assistant/chunk"]
    seqs = [e.seq for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # contiguous, one per chunk
    if batched:
        assert adapter.last.closed  # type: ignore[attr-defined]
    return [(e.seq, e.data) for e in events], result.output


async def test_agent_logs_the_same_chunks_with_and_without_a_middleware() -> None:
    plain = await _chunks_of_a_turn(middleware=False, batched=False)
    wrapped = await _chunks_of_a_turn(middleware=True, batched=False)
    assert plain == wrapped
    assert plain[1] == "hello"
    assert len(plain[0]) == len(text_script("hello"))


async def test_agent_logs_one_event_per_chunk_of_a_read_by_read_adapter() -> None:
    batched = await _chunks_of_a_turn(middleware=False, batched=True)
    wrapped = await _chunks_of_a_turn(middleware=True, batched=True)
    plain = await _chunks_of_a_turn(middleware=False, batched=False)
    assert batched == wrapped == plain
