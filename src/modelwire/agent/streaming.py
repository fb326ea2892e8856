"""`TurnStream`: one agent turn, streamed to Python code as it runs (`Agent.stream_turn`).

`async for chunk in agent.stream_turn(session_id, text)` yields the chunks of the turn's provider
calls as they arrive — the same `StreamChunk`s `rt.stream()` yields: every attempt's, each
ending with its `Finish` (a failed attempt the turn retries ends in `Finish(Error(...))`), with
the turn's tool calls run between the steps — and ends when the turn ends. `text()` yields only
the answer text. `await stream` is the turn's `TurnResult` (also before or without iterating);
the loop re-raises what the turn raised. Cancelling the iterating task cancels the turn, as
cancelling `run_turn` would (`turn/end {aborted}`); leaving the loop early (`break`) does not:
the turn runs on, and `await stream` still returns its result.

The turn runs in a task of its own, started by the first `async for` or `await`; its chunks wait
in an unbounded queue until the loop takes them (the log, not this queue, is their record).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Generic

from ..errors import ErrorCode, HarnessError
from ..vocab import StreamChunk, TextDelta
from .result import OutputT, TurnResult

__all__ = ["TurnStream"]


class TurnStream(Generic[OutputT]):
    """One turn, streamed (see the module docstring)."""

    __slots__ = ("_iterated", "_queue", "_start", "_task")

    def __init__(
        self, start: Callable[[Callable[[StreamChunk], None]], Awaitable[TurnResult[OutputT]]]
    ) -> None:
        """`start(listener)` runs the turn, telling `listener` each chunk of its calls."""
        self._start = start
        self._queue: asyncio.Queue[StreamChunk | None] = asyncio.Queue()
        self._task: asyncio.Task[TurnResult[OutputT]] | None = None
        self._iterated = False

    def _begin(self) -> asyncio.Task[TurnResult[OutputT]]:
        task = self._task
        if task is None:
            queue = self._queue
            task = self._task = asyncio.ensure_future(self._start(queue.put_nowait))
            task.add_done_callback(lambda _: queue.put_nowait(None))
        return task

    async def __aiter__(self) -> AsyncIterator[StreamChunk]:
        if self._iterated:
            raise HarnessError("a turn stream can be iterated once", ErrorCode.INVALID_ARGS)
        self._iterated = True
        task = self._begin()
        queue = self._queue
        try:
            while (chunk := await queue.get()) is not None:
                yield chunk
        except asyncio.CancelledError:
            task.cancel()  # the caller gave up: so does the turn
            raise
        await task  # what the turn raised, raised here

    async def text(self) -> AsyncIterator[str]:
        """The text deltas of the turn's answers, as they arrive."""
        async for chunk in self:
            if type(chunk) is TextDelta:
                yield chunk.text

    def __await__(self) -> Generator[object, None, TurnResult[OutputT]]:
        return self._begin().__await__()
