"""The keys' database: beside the log's SQLite file, or in its PostgreSQL database.

On SQLite the keys live in a file of their own next to the log's (`keys_url`: `gw.db` →
`gw.db-keys`, in WAL mode): SQLite has one writer per file and the log keeps a group-commit write
transaction open while it writes, so keys sharing its file waited for it (and for the busy
handler's back-off) on every admission. PostgreSQL has row locks: the same database serves both.

`KeyDatabase` runs each `transaction()` on one of its connections (`workers.drivers`: SQLite's
`BEGIN IMMEDIATE`, PostgreSQL's `BEGIN`). A connection runs one transaction at a time, so on
PostgreSQL the database holds `connections` of them (4 by default) and a request waits only for
a free one; SQLite has one writer anyway, so one connection serves it.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

from ..workers.drivers import Driver, Query, Rows, SqliteDriver, open_driver

T = TypeVar("T")

__all__ = ["KeyDatabase", "keys_url", "open_database"]


class KeyDatabase:
    """Transactions on the log database (module docstring)."""

    def __init__(self, drivers: list[Driver]) -> None:
        self._drivers = drivers
        self._turn = itertools.cycle(range(len(drivers)))
        self.where = drivers[0].where
        self.postgres = drivers[0].postgres

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Query]:
        """One transaction on the next connection."""
        async with self._drivers[next(self._turn)].transaction() as q:
            yield q

    async def run(self, work: Callable[[Query], Awaitable[T]]) -> T:
        """`work` in one transaction. On SQLite the whole transaction runs in one call on the
        connection's thread (`work` awaits nothing but its queries, so it is driven there
        without an event loop): one thread hop a batch instead of one a statement."""
        driver = self._drivers[next(self._turn)]
        if isinstance(driver, _KeysSqlite):
            return await driver.run(work)
        async with driver.transaction() as q:
            return await work(q)

    async def close(self) -> None:
        """Close every connection."""
        for driver in self._drivers:
            await driver.close()


class _KeysSqlite(SqliteDriver):
    """The keys' SQLite file: WAL with `synchronous = NORMAL`, as the log's own file (a commit
    survives the process dying; an OS crash may lose the last commits, reservations and
    settlements together)."""

    def _connect(self) -> sqlite3.Connection:
        fresh = self._conn is None
        conn = super()._connect()
        if fresh:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    async def run(self, work: Callable[[Query], Awaitable[T]]) -> T:
        """`work` in one `BEGIN IMMEDIATE … COMMIT` on the connection's thread."""
        async with self._lock:
            try:
                result: T = await self._call(self._run_all, work)
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            return result

    def _run_all(self, work: Callable[[Query], Awaitable[T]]) -> T:
        conn = self._connect()

        async def q(sql: str, params: Sequence[object] = ()) -> Rows:
            return conn.execute(sql.replace("%s", "?"), tuple(params)).fetchall()

        conn.execute("BEGIN IMMEDIATE")
        try:
            result = _drive(work(q))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result


def _drive(awaitable: Awaitable[T]) -> T:
    """The result of a coroutine that never suspends (its awaits all complete at once)."""
    coro = awaitable.__await__()
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise RuntimeError("a keys' transaction awaited something other than its queries")


def keys_url(url: str) -> str:
    """The URL of the keys' database of the log at `url` (module docstring)."""
    return url + "-keys" if url.lower().startswith("sqlite:") else url


def open_database(url: str, connections: int = 4) -> KeyDatabase:
    """The keys' database of the log URL `url` (`LOG_UNAVAILABLE` for another scheme)."""
    url = keys_url(url)
    if url.lower().startswith("sqlite:"):
        return KeyDatabase([_KeysSqlite(url)])
    first = open_driver(url)
    count = connections
    return KeyDatabase([first, *(open_driver(url) for _ in range(count - 1))])
