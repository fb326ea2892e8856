"""Following a session's running turn in the log: one reader per session per process.

`Followers.tail(session_id, kind, from_seq, make)` gives the session's `TurnTail` of one wire
protocol `kind` (the UI message stream, AG-UI): one task that reads the log from `from_seq` on
(every `poll_ms`, less often while the turn is idle; any process on the database may be the
writer), encodes each event once (`Encoder.encode`), and keeps the frames in one list that every
client of the turn reads at its own pace. A client that never reads holds a position in that
list, not a copy, so memory grows with the turn, not with the number of clients; a thousand
clients of one turn still make one log reader. The tail stops at the turn's end (or its failure)
and is forgotten once no client follows it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Final, Protocol

from ..errors import ErrorCode, HarnessError
from ..events import Event
from ..session.log import SessionLog

__all__ = ["IDLE_POLL_MS", "POLL_MS", "Encoder", "Followers", "TurnTail"]

POLL_MS: Final = 25
IDLE_POLL_MS: Final = 250
"""While nothing new arrives (a long tool call, a model thinking) the wait between reads doubles
from `poll_ms` up to this, and drops back at the next event: an idle turn costs few reads."""


class Encoder(Protocol):
    """Turns one log event into SSE bytes (empty: nothing to send) and knows when the turn ended."""

    @property
    def finished(self) -> bool: ...

    def encode(self, event: Event) -> bytes: ...

    def fail(self, seq: int, message: str) -> bytes:
        """The end of a stream that cannot go on (the log failed), after seq `seq`."""
        ...


class TurnTail:
    """One turn's frames, shared by every follower in the process (module docstring)."""

    def __init__(
        self, log: SessionLog, session_id: str, from_seq: int, encoder: Encoder, poll_ms: int
    ) -> None:
        self.log = log
        self.session_id = session_id
        self.next_seq = from_seq
        self.encoder = encoder
        self.frames: list[tuple[int, bytes]] = []
        self.done = False
        self.failure: str | None = None
        self.clients = 0
        self.kind = ""
        self.on_done: Callable[[TurnTail], None] | None = None
        self._poll_s = poll_ms / 1000
        self._idle_s = max(poll_ms, IDLE_POLL_MS) / 1000
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None and not self.done:
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def fail_now(self, message: str) -> None:
        """End the stream with `message` (the turn was refused before it wrote its end), once
        the events already in the log are read."""
        if self.done:
            return
        self.failure = message
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        end = self.encoder.fail(max(self.next_seq - 1, 0), message)
        self.frames.append((max(self.next_seq - 1, 0), end))
        self.done = True
        self._publish()
        if self.clients == 0 and self.on_done is not None:
            self.on_done(self)

    def _publish(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _run(self) -> None:
        wait = self._poll_s
        try:
            while not self.done:
                events = await self._read()
                for event in events:
                    self.next_seq = event.seq + 1
                    data = self.encoder.encode(event)
                    if data:
                        self.frames.append((event.seq, data))
                    if self.encoder.finished:
                        self.done = True
                        break
                if events:
                    self._publish()
                    wait = self._poll_s
                else:
                    wait = min(wait * 2, self._idle_s)
                if not self.done:
                    await asyncio.sleep(wait)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the followers get the failure as the end of their stream
            self.failure = f"reading session {self.session_id!r} failed: {error}"
            end = self.encoder.fail(self.next_seq - 1, self.failure)
            self.frames.append((self.next_seq - 1, end))
            self.done = True
        self._publish()
        if self.clients == 0 and self.on_done is not None:
            self.on_done(self)

    async def _read(self) -> list[Event]:
        try:
            return await self.log.read(self.session_id, self.next_seq)
        except HarnessError as error:
            if error.code == ErrorCode.SESSION_NOT_FOUND:
                return []  # the turn has not written its first event yet
            raise

    async def after(self, seq: int | None) -> AsyncIterator[bytes]:
        """The frames of events after `seq` (all with None), as they come, to the turn's end."""
        at = 0
        skip = -1 if seq is None else seq
        while True:
            changed = self._changed
            while at < len(self.frames):
                frame_seq, data = self.frames[at]
                at += 1
                if frame_seq > skip:
                    yield data
            if self.done:
                return
            await changed.wait()


class Followers:
    """The process's tails, one per session (module docstring)."""

    def __init__(self, log: SessionLog, poll_ms: int = POLL_MS) -> None:
        self.log = log
        self.poll_ms = poll_ms
        self._tails: dict[tuple[str, str], TurnTail] = {}

    def running(self, session_id: str, kind: str) -> TurnTail | None:
        """The session's `kind` tail in this process while its turn has not ended."""
        tail = self._tails.get((session_id, kind))
        return tail if tail is not None and not tail.done else None

    def tail(
        self,
        session_id: str,
        kind: str,
        from_seq: int,
        make: Callable[[], Encoder],
        *,
        fresh: bool = False,
    ) -> TurnTail:
        """The session's `kind` tail (a new one reading from `from_seq` when none follows a
        running turn here, or when `fresh`: a new turn of this process starts there)."""
        key = (session_id, kind)
        tail = self._tails.get(key)
        if tail is None or fresh or (tail.done and tail.clients == 0):
            tail = TurnTail(self.log, session_id, from_seq, make(), self.poll_ms)
            tail.kind = kind
            tail.on_done = self._drop
            self._tails[key] = tail
        tail.start()
        return tail

    @contextlib.asynccontextmanager
    async def follow(self, tail: TurnTail) -> AsyncIterator[TurnTail]:
        """Count one client of `tail` for the block; the last one out drops it."""
        tail.clients += 1
        try:
            yield tail
        finally:
            tail.clients -= 1
            if tail.clients == 0 and tail.done:
                self._drop(tail)

    def _drop(self, tail: TurnTail) -> None:
        """A tail whose turn ended with nobody following it is forgotten."""
        key = (tail.session_id, tail.kind)
        if self._tails.get(key) is tail:
            del self._tails[key]

    async def close(self) -> None:
        tails, self._tails = list(self._tails.values()), {}
        for tail in tails:
            await tail.stop()
