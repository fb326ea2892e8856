"""The session lease an agent holds while it runs a turn (`run_turn`, `resume_turn`).

Before a turn opens, the agent takes the session's lease (`SessionLog.acquire_lease`, owner the
agent's `owner` id): a session another live writer holds is refused with `TURN_IN_PROGRESS`, and
from then on every append of the turn is fenced by the lease's token. One task per agent renews
the leases of its running turns every `renew_ms`; once a renewal meets `LEASE_LOST` (the lease
expired or was taken over, e.g. after this process was paused), the turn is cancelled — it can write nothing
more — and `run_turn` raises the `LEASE_LOST`. The lease is released when the turn ends, so the
next writer need not wait for it to expire (a release the log does not take within
`release_ms`, the agent's `cancel_grace_ms`, is left to expire).

A lease given by the caller (`lease=`, a turn queue's claim) is held instead: the agent fences its
appends with it and the caller renews and releases it. `lease_ms=None` takes no lease (the turn
is then guarded only by the log's conditional appends and the silence rule of `repair.py`).

Renewals wait with `asyncio.sleep` unless a `sleep` is given: the agent's own `sleep` (often a
test's instant one) paces its retries and tools, not the lease.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Final

from ..errors import ErrorCode, HarnessError
from ..session.lease import Lease, check_lease_ms, default_owner, running_here
from ..session.log import SessionLog
from .cancel import TurnSignal
from .wait import Sleep

__all__ = ["DEFAULT_LEASE_MS", "TurnLeases", "default_owner"]

DEFAULT_LEASE_MS: Final = 30_000.0
"""How long an agent's session lease lasts unless renewed."""


class TurnLeases:
    """Takes, renews and releases the session leases of one agent's turns."""

    def __init__(
        self,
        log: SessionLog,
        *,
        owner: str | None,
        lease_ms: float | None,
        renew_ms: float | None,
        release_ms: float = 2_000.0,
        sleep: Sleep | None = None,
    ) -> None:
        self.log = log
        self.owner = owner or default_owner()
        self.lease_ms = lease_ms
        self.renew_ms = None if lease_ms is None else check_lease_ms(lease_ms, renew_ms)
        self.release_ms = release_ms
        self._sleep: Sleep = sleep or asyncio.sleep
        self._held: dict[str, _Held] = {}  # session -> the lease its running turn holds
        self._keeper: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def turn(
        self,
        session_id: str,
        given: Lease | None,
        on_lost: Callable[[HarnessError], None],
        signal: TurnSignal | None = None,
    ) -> AsyncIterator[Lease | None]:
        """Hold the session's lease for one turn (see the module docstring); yields it (None
        when leases are off). `on_lost` is called once when a renewal finds it lost; the
        release of a cancelled turn runs within its `signal`'s grace."""
        if given is not None:
            if given.session_id != session_id:
                raise HarnessError(
                    f"the lease given for session {session_id!r} is the lease of session "
                    f"{given.session_id!r}",
                    ErrorCode.INVALID_ARGS,
                )
            await self.log.hold(given)
            with running_here(given.owner, session_id):
                yield given
            return
        if self.lease_ms is None:
            yield None
            return
        with running_here(self.owner, session_id):
            async with self._taken(session_id, on_lost, signal) as lease:
                yield lease

    @contextlib.asynccontextmanager
    async def _taken(
        self, session_id: str, on_lost: Callable[[HarnessError], None], signal: TurnSignal | None
    ) -> AsyncIterator[Lease]:
        assert self.lease_ms is not None
        lease = await self.log.acquire_lease(session_id, self.owner, self.lease_ms)
        held = _Held(lease, on_lost)
        self._held[session_id] = held
        keeper = self._keeper
        if keeper is None or keeper.done():
            self._keeper = asyncio.get_running_loop().create_task(self._keep())
        try:
            yield lease
        finally:
            if self._held.get(session_id) is held:
                del self._held[session_id]
            keeper = self._keeper
            if not self._held and keeper is not None:
                keeper.cancel()  # nothing left to renew: no timer outlives the turns
                await asyncio.wait([keeper])
            # bounded: a stalled log must not hold a cancelled turn (the lease then expires)
            with contextlib.suppress(HarnessError, TimeoutError):
                async with asyncio.timeout(self.release_ms / 1000.0):
                    async with signal.grace() if signal else contextlib.nullcontext():
                        await self.log.release_lease(held.lease)

    async def _keep(self) -> None:
        """One task renews every lease this agent holds, every `renew_ms`, while it holds any."""
        assert self.lease_ms is not None and self.renew_ms is not None
        try:
            while self._held:
                await self._sleep(self.renew_ms / 1000.0)
                for sid, held in list(self._held.items()):
                    if self._held.get(sid) is not held:
                        continue  # its turn ended meanwhile
                    try:
                        held.lease = await self.log.renew_lease(held.lease, self.lease_ms)
                    except HarnessError as exc:
                        if exc.code != ErrorCode.LEASE_LOST:
                            continue  # the log is unavailable: the next round tries again
                        if self._held.get(sid) is held:
                            del self._held[sid]
                        held.on_lost(exc)
        finally:
            self._keeper = None


class _Held:
    """A lease a turn holds, as last renewed, and what to call once it is lost."""

    __slots__ = ("lease", "on_lost")

    def __init__(self, lease: Lease, on_lost: Callable[[HarnessError], None]) -> None:
        self.lease = lease
        self.on_lost = on_lost
