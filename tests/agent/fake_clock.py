"""A virtual clock for tests: `sleep` waits in virtual time, which jumps ahead when all is idle.

`FakeClock.sleep(seconds)` parks the caller until the virtual `now` reaches its deadline. A
driver task (`async with clock.running():`) lets every runnable task settle, then jumps `now` to
the earliest deadline and wakes the sleepers due then — so concurrent sleeps overlap exactly as
real ones would, and no test waits in real time.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import AsyncIterator

SETTLE_ROUNDS = 50
"""Event-loop turns the driver yields before it decides that nothing else can run."""


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self._due: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def ms(self) -> int:
        """The virtual time in epoch-style milliseconds (for an agent's `clock=`)."""
        return int(self.now * 1000)

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._due, (self.now + max(seconds, 0.0), next(self._order), future))
        await future

    async def _drive(self) -> None:
        while True:
            for _ in range(SETTLE_ROUNDS):
                await asyncio.sleep(0)
            while self._due and self._due[0][2].done():  # cancelled sleepers
                heapq.heappop(self._due)
            if not self._due:
                continue
            deadline = self._due[0][0]
            self.now = max(self.now, deadline)
            while self._due and self._due[0][0] <= deadline:
                _, _, future = heapq.heappop(self._due)
                if not future.done():
                    future.set_result(None)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[FakeClock]:
        driver = asyncio.create_task(self._drive())
        try:
            yield self
        finally:
            driver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await driver
