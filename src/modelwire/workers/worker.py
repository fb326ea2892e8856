"""`Worker`: runs queued turns with the user's agent, up to `concurrency` at a time.

`Worker(log_url, factory)` opens the queue and the log of one database and builds its agent with
`factory(log)` (a function or coroutine function returning an `Agent`; one that raises stops the
worker before anything is claimed). `until_idle` stops it once it runs nothing and finds nothing
to claim (a batch: run the queue dry, then exit). `await worker.run()` claims tickets (`TurnQueue.claim`, which
takes the session's lease) and runs each under its lease, renewed every `renew_ms` through the
queue's connection:

- a fresh ticket runs `agent.run_turn(session, text, lease=…, ticket=…)`;
- a ticket taken over from a dead worker continues from the log: its turn, found by the ticket
  on `turn/start`, is resumed (`resume_turn`: a decided retry keeps only its remaining wait, an
  undecided failure is judged again, tool calls without a result are answered
  `TOOL_INTERRUPTED` or, for idempotent tools, run again) or, if it already ended, just finished;
- the ticket then ends completed or failed (`TurnQueue.finish`, under the lease), or `paused`
  when its turn waits for approvals; decided, it is claimed again and its turn resumed.

A lease lost (paused past its expiry and taken over) cancels the turn: its writes are refused
with `LEASE_LOST` and the ticket is left to its new holder. A log that becomes unavailable (the
database restarted) fails the current calls with `LOG_UNAVAILABLE`; the worker reopens the log,
rebuilds the agent, and continues those turns while their leases hold. `stop()` (the CLI calls
it on SIGTERM) stops claiming, lets running turns finish for `grace_ms`, then gives their leases
up so another worker takes them over at once. One line per claimed, finished, taken-over or lost
ticket goes to `say`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..agent import Agent
from ..errors import ErrorCode, HarnessError
from ..session import SessionLog, open_log
from ..session.events import AbortCause, TurnEnd, TurnErrored, TurnPaused, TurnStart, UserMessage
from ..session.lease import Lease, check_lease_ms, default_owner
from .factory import AgentFactory, build_agent, worker_url
from .queue import TurnQueue
from .tickets import Claim, State

__all__ = ["AgentFactory", "Worker", "WorkerStats"]

_LOG = logging.getLogger("modelwire.worker")


@dataclass
class WorkerStats:
    """What a worker did: claims, takeovers among them, tickets finished, leases lost, log
    reconnects."""

    claimed: int = 0
    takeovers: int = 0
    finished: int = 0
    lost: int = 0
    reconnects: int = 0


class Worker:
    """A pool member running queued turns (see the module docstring)."""

    def __init__(
        self,
        log_url: str,
        factory: AgentFactory,
        *,
        concurrency: int = 4,
        lease_ms: float = 30_000.0,
        renew_ms: float | None = None,
        poll_ms: float = 500.0,
        grace_ms: float = 30_000.0,
        owner: str | None = None,
        say: Callable[[str], None] | None = None,
        until_idle: bool = False,
    ) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise HarnessError(
                f"concurrency must be a positive integer, got {concurrency!r}",
                ErrorCode.INVALID_CONFIG,
            )
        self.renew_ms = check_lease_ms(lease_ms, renew_ms)
        for name, value in (("poll_ms", poll_ms), ("grace_ms", grace_ms)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise HarnessError(
                    f"{name} must be a positive number of milliseconds, got {value!r}",
                    ErrorCode.INVALID_CONFIG,
                )
        self.log_url = log_url
        self.factory = factory
        self.concurrency = concurrency
        self.lease_ms = float(lease_ms)
        self.poll_s = poll_ms / 1000.0
        self.grace_s = grace_ms / 1000.0
        self.owner = owner or default_owner()
        self.until_idle = until_idle
        self.stats = WorkerStats()
        self._say = say or _LOG.info
        self._stopping = asyncio.Event()
        self._queue: TurnQueue | None = None
        self._log: SessionLog | None = None
        self._agent: Agent[Any] | None = None  # Any: the user's agent
        self._reopening = asyncio.Lock()
        self._leases: dict[str, Lease] = {}  # ticket -> its lease, as last renewed
        self._cancelled: set[str] = set()  # tickets whose turn this worker cancelled (queue cancel)
        self._retired: list[Agent[Any]] = []  # agents of broken logs, closed at the end

    def stop(self) -> None:
        """Stop claiming; running turns get `grace_ms` to finish (see the module docstring)."""
        self._stopping.set()

    async def run(self) -> WorkerStats:
        """Claim and run tickets until `stop()`; returns what was done."""
        self._queue = queue = await TurnQueue.open(worker_url(self.log_url, self.lease_ms))
        tasks: set[asyncio.Task[None]] = set()
        try:
            await self._open()
            self._say(f"worker {self.owner}: running up to {self.concurrency} turns")
            stopping = asyncio.ensure_future(self._stopping.wait())
            while not self._stopping.is_set():
                while len(tasks) < self.concurrency and not self._stopping.is_set():
                    try:
                        claim = await queue.claim(self.owner, self.lease_ms)
                    except HarnessError as exc:
                        self._say(f"claim failed: {exc.message}")
                        break
                    if claim is None:
                        if self.until_idle and not tasks:  # nothing left to claim or run
                            self._say(f"worker {self.owner}: idle, stopping (--until-idle)")
                            self.stop()
                        break
                    tasks.add(asyncio.ensure_future(self._run_claim(claim)))
                await asyncio.wait(
                    {stopping, *tasks}, timeout=self.poll_s, return_when=asyncio.FIRST_COMPLETED
                )
                tasks = {task for task in tasks if not task.done()}
                if tasks:
                    await self._cancel_asked(queue)
            await self._drain(tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # before their log closes
            await self._close()
        self._say(f"worker {self.owner}: stopped ({self.stats})")
        return self.stats

    async def _drain(self, tasks: set[asyncio.Task[None]]) -> None:
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.grace_s)
        queue = self._queue
        assert queue is not None
        if pending:  # give the leases up first: the turns' own writes are then refused
            for ticket, lease in list(self._leases.items()):
                with contextlib.suppress(HarnessError):
                    await queue.release(lease)
                self._say(f"released {ticket} (session {lease.session_id}) unfinished")
        for task in pending:
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _cancel_asked(self, queue: TurnQueue) -> None:
        """Cancel the turns of the tickets `modelwire queue cancel` asked to stop."""
        try:
            asked = await queue.cancel_requests(self.owner)
        except HarnessError:
            return  # the database is away: asked again next poll
        for ticket in asked:
            lease = self._leases.get(ticket)
            if lease is not None and ticket not in self._cancelled and self._agent is not None:
                self._cancelled.add(ticket)
                self._say(f"cancelling {ticket} (session {lease.session_id}): queue cancel")
                self._agent.cancel(lease.session_id, AbortCause("user", "queue cancel"))

    # ---- the log and the agent -----------------------------------------------------------------

    async def _open(self) -> None:
        self._log = log = await open_log(worker_url(self.log_url, self.lease_ms))
        try:
            self._agent = await build_agent(self.factory, log, self._stopping)
        except BaseException:
            await log.close()
            raise

    async def _close(self) -> None:
        agent, log, queue = self._agent, self._log, self._queue
        self._agent = self._log = None
        retired, self._retired = self._retired, []
        for closing in (*retired, agent, log, queue):
            if closing is not None:
                with contextlib.suppress(Exception):
                    await closing.close()

    async def _reopen(self, broken: SessionLog | None) -> None:
        """Replace a log that became unavailable (once per broken log), retrying until the
        database answers or the worker stops."""
        async with self._reopening:
            if self._log is not broken and self._log is not None:
                return
            self.stats.reconnects += 1
            old_agent, self._agent = self._agent, None
            if old_agent is not None:
                # Not closed now: that would cancel the other turns still running on it (their
                # callers get CancelledError after `turn/end {aborted}`), failing their tickets.
                # They fail on the closed log instead and continue on the new one.
                self._retired.append(old_agent)
            if broken is not None:
                with contextlib.suppress(Exception):
                    await broken.close()
            pause = 0.2
            while not self._stopping.is_set():
                try:
                    await self._open()
                    self._say("log reconnected")
                    return
                except HarnessError as exc:
                    if exc.code != ErrorCode.LOG_UNAVAILABLE:
                        raise
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, 2.0)

    # ---- one ticket ----------------------------------------------------------------------------

    async def _run_claim(self, claim: Claim) -> None:
        self.stats.claimed += 1
        if claim.takeover:
            self.stats.takeovers += 1
        verb = "took over" if claim.takeover else "claimed"
        self._say(f"{verb} {claim.ticket} (session {claim.session_id}, token {claim.lease.token})")
        self._leases[claim.ticket] = claim.lease
        lost: list[HarnessError] = []
        keeper = asyncio.ensure_future(self._keep(claim, lost))
        try:
            await self._drive(claim, lost)
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await keeper
            self._leases.pop(claim.ticket, None)
            self._cancelled.discard(claim.ticket)

    async def _keep(self, claim: Claim, lost: list[HarnessError]) -> None:
        queue = self._queue
        assert queue is not None
        while True:
            await asyncio.sleep(self.renew_ms / 1000.0)
            lease = self._leases.get(claim.ticket)
            if lease is None:
                return
            try:
                self._leases[claim.ticket] = await queue.renew(lease, self.lease_ms)
            except HarnessError as exc:
                if exc.code != ErrorCode.LEASE_LOST:
                    continue  # the database is away: try again (the lease may still hold)
                lost.append(exc)
                if self._agent is not None:
                    self._agent.cancel(claim.session_id, AbortCause("disposed", "lease lost"))
                return

    async def _drive(self, claim: Claim, lost: list[HarnessError]) -> None:
        queue = self._queue
        assert queue is not None
        while True:
            log, agent = self._log, self._agent
            if log is None or agent is None:
                await self._reopen(log)
                continue
            lease = self._leases.get(claim.ticket, claim.lease)
            try:
                state, reason, output, error = await self._turn(log, agent, claim, lease)
                if lost:
                    raise lost[0]
                await queue.finish(claim, lease, state, reason=reason, output=output, error=error)
            except asyncio.CancelledError:
                # the keeper cancels the turn once its lease is lost, `_cancel_asked` once the
                # queue asked (the agent then cancels this task); any other cancellation (the
                # worker stopping) goes on
                task = asyncio.current_task()
                asked = claim.ticket in self._cancelled
                if not (lost or asked) or task is None or task.uncancel() > 0:
                    raise
                if not lost:
                    await self._end_cancelled(claim, lease)
                    return
                self.stats.lost += 1
                self._say(f"lease lost on {claim.ticket}: {lost[0].message}")
                return
            except HarnessError as exc:
                if exc.code == ErrorCode.LEASE_LOST or lost:
                    self.stats.lost += 1
                    self._say(f"lease lost on {claim.ticket}: {(lost or [exc])[0].message}")
                    return
                if exc.code != ErrorCode.LOG_UNAVAILABLE:
                    await self._fail(claim, lease, exc)
                    return
                if self._stopping.is_set():  # left to the next holder once the lease expires
                    self._say(f"log unavailable on {claim.ticket}: {exc.message}; left unfinished")
                    return
                self._say(f"log unavailable on {claim.ticket}: {exc.message}; reconnecting")
                await self._reopen(log)
                continue
            except Exception as exc:  # the agent or a plugin broke: this ticket fails, not the pool
                await self._fail(claim, lease, exc)
                return
            log.unhold(lease)
            self.stats.finished += 1
            self._say(f"finished {claim.ticket} {state} ({reason})")
            return

    async def _end_cancelled(self, claim: Claim, lease: Lease) -> None:
        """End a ticket whose turn this worker cancelled for `queue cancel` as cancelled."""
        queue = self._queue
        assert queue is not None
        self._cancelled.discard(claim.ticket)
        try:
            await queue.finish(claim, lease, "cancelled", reason="aborted")
        except HarnessError as exc:
            self._say(f"could not end {claim.ticket} cancelled: {exc.message}")
            return
        self.stats.finished += 1
        self._say(f"finished {claim.ticket} cancelled")

    async def _fail(self, claim: Claim, lease: Lease, exc: Exception) -> None:
        """End a ticket whose turn raised (not a lost lease, not an unavailable log) as failed."""
        queue = self._queue
        assert queue is not None
        text = exc.message if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
        try:
            await queue.finish(claim, lease, "failed", reason="error", error=text)
        except HarnessError as finish_error:
            self._say(f"could not fail {claim.ticket}: {finish_error.message}")
            return
        self.stats.finished += 1
        self._say(f"finished {claim.ticket} failed (error: {text})")

    async def _turn(
        self, log: SessionLog, agent: Agent[Any], claim: Claim, lease: Lease
    ) -> tuple[State, str | None, str | None, str | None]:
        """Run or continue the ticket's turn; `(state, reason, output, error)` of its end."""
        sid = claim.session_id
        start = await log.latest(sid, "turn/start")
        ours = start is not None and isinstance(start.data, TurnStart)
        if ours and start is not None and start.data.ticket == claim.ticket:  # type: ignore[attr-defined]
            end = await log.latest(sid, "turn/end")
            if (
                end is not None
                and isinstance(end.data, TurnEnd)
                and end.seq > start.seq
                and not isinstance(end.data.reason, TurnPaused)
            ):  # the turn ended; only the ticket did not
                kind = end.data.reason.kind
                return ("completed" if kind == "completed" else "failed", kind, None, None)
            events = await log.read(sid, start.seq)
            reopened = start.data.resumed_after is not None  # type: ignore[attr-defined]
            paused = end is not None and end.seq > start.seq  # its calls were decided: resume
            if not (reopened or paused or any(isinstance(e.data, UserMessage) for e in events)):
                # its `turn/start` landed but not its first Step: the user's text is only in the
                # ticket (resumed without it, the turn would complete without a Step)
                agent.inject(sid, claim.text)
            try:
                result = await agent.resume_turn(sid, lease=lease)
            except HarnessError as exc:
                if exc.code != ErrorCode.APPROVAL_PENDING:  # decided outside the queue: not yet
                    raise
                return ("paused", "paused", None, None)
            return _ending(result.reason, result.text)
        result = await agent.run_turn(sid, claim.text, lease=lease, ticket=claim.ticket)
        return _ending(result.reason, result.text)


def _ending(reason: Any, text: str) -> tuple[State, str | None, str | None, str | None]:
    # Any: a TurnEndReason (every variant has `kind`)
    kind = str(reason.kind)
    error = reason.failure.message if isinstance(reason, TurnErrored) else None
    state: State = (
        "completed" if kind == "completed" else "paused" if kind == "paused" else "failed"
    )
    return (state, kind, text or None, error)
