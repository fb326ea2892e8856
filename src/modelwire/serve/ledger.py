"""Group commit of the keys' admissions and settlements: one transaction for every request that
asked meanwhile, not two per request.

`Ledger.admit` and `Ledger.settle` queue their work; one flusher task at a time takes the whole
queue and runs it in one transaction of the keys' database (`limits.py` does the statements),
then answers each caller. While a batch commits the next one gathers, so under load N requests
cost one `BEGIN … COMMIT` and no request waits for another's row lock in this process. Within a
batch each admission is still its own conditional `UPDATE` / `INSERT … ON CONFLICT`, in arrival
order, and a refused one undoes what it booked (`limits.admit_in`), so the guarantees of
`limits.py` hold unchanged across processes: a budget is overspent by at most what the requests
in flight cost beyond their estimates, a window never admits more than its limit. Settlements of
one key (and of one window) in a batch are summed into one `UPDATE`; a settlement is durable when
`settle` returns; a window's rows older than two minutes are deleted once a minute per
process. On SQLite a batch runs in one call on the connection's thread (`KeyDatabase.run`). A
batch that fails (the database went away) fails each of its callers. A caller cancelled while
its admission is in a batch gets it given back (settled at no cost) once the batch commits.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ..workers.drivers import Query
from .database import KeyDatabase
from .keystore import KeyRecord
from .limits import Admission, RouteLimit, admit_in, settle_in
from .problems import GatewayError

__all__ = ["Ledger"]


@dataclass(slots=True)
class _Ask:
    """One admission waiting for its batch."""

    key: KeyRecord | None
    now_ms: int
    cost_nusd: int
    tokens: int
    route: str | None
    route_limit: RouteLimit | None
    done: asyncio.Future[Admission] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def _batch(
    admissions: list[_Ask], settlements: list[tuple[Admission, int, int]], swept: dict[str, int]
) -> Callable[[Query], Awaitable[list[Admission | GatewayError]]]:
    async def work(q: Query) -> list[Admission | GatewayError]:
        results: list[Admission | GatewayError] = []
        for a in admissions:
            try:
                booked = await admit_in(
                    q, a.key, a.now_ms, a.cost_nusd, a.tokens, a.route, a.route_limit
                )
            except GatewayError as refused:
                results.append(refused)
            else:
                results.append(booked)
        if settlements:
            await settle_in(q, settlements, swept)
        return results

    return work


def _retrieve(done: asyncio.Future[None]) -> None:
    if not done.cancelled():
        done.exception()


class Ledger:
    """Admissions and settlements of one process, group-committed (module docstring)."""

    def __init__(self, driver: KeyDatabase) -> None:
        self.driver = driver
        self._admissions: list[_Ask] = []
        self._settlements: list[tuple[Admission, int, int]] = []
        self._settled: list[asyncio.Future[None]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._swept: dict[str, int] = {}  # window -> the minute its old rows were deleted

    async def admit(
        self,
        key: KeyRecord | None,
        now_ms: int,
        cost_nusd: int,
        tokens: int,
        *,
        route: str | None = None,
        route_limit: RouteLimit | None = None,
    ) -> Admission:
        """`limits.admit`, in the next batch."""
        ask = _Ask(key, now_ms, cost_nusd, tokens, route, route_limit)
        self._admissions.append(ask)
        self._kick()
        try:
            return await asyncio.shield(ask.done)
        except asyncio.CancelledError:  # the caller left: give back what its batch books
            ask.done.add_done_callback(self._abandoned)
            raise

    def _abandoned(self, done: asyncio.Future[Admission]) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        booked = done.result()
        released: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._settlements.append((booked, 0, booked.reserved_tokens))
        self._settled.append(released)
        self._kick()

    async def settle(self, admission: Admission, cost_nusd: int, tokens: int) -> None:
        """`limits.settle`, in the next batch (durable when this returns)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._settlements.append((admission, cost_nusd, tokens))
        self._settled.append(done)
        self._kick()
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:  # the settlement still commits; its outcome is not awaited
            done.add_done_callback(_retrieve)
            raise

    def _kick(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        while self._admissions or self._settlements:
            admissions, self._admissions = self._admissions, []
            settlements, self._settlements = self._settlements, []
            settled, self._settled = self._settled, []
            try:
                results = await self.driver.run(_batch(admissions, settlements, self._swept))
            except BaseException as exc:
                for ask in admissions:
                    if not ask.done.done():
                        ask.done.set_exception(exc)
                for done in settled:
                    if not done.done():
                        done.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for ask, result in zip(admissions, results, strict=True):
                if ask.done.done():
                    continue
                if isinstance(result, GatewayError):
                    ask.done.set_exception(result)
                else:
                    ask.done.set_result(result)
            for done in settled:
                if not done.done():
                    done.set_result(None)

    async def close(self) -> None:
        """Wait until no batch runs or waits (its failure was its callers')."""
        while self._flusher is not None and not self._flusher.done():
            with contextlib.suppress(Exception):
                await self._flusher
