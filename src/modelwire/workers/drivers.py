"""The two databases a turn queue runs on, behind one small async interface.

`Driver.transaction()` yields `q(sql, params) -> rows`: every statement of the block runs in one
transaction (SQLite: `BEGIN IMMEDIATE`, the database write lock; PostgreSQL: `BEGIN`), committed
when the block ends, rolled back when it raises. Statements are written with `%s` parameters;
the SQLite driver spells them `?`. Failures of the database become `LOG_UNAVAILABLE` naming the
database without credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias

from ..errors import ErrorCode, HarnessError
from ..session.postgres import LOCK_NAMESPACE, describe_postgres_url
from ..session.sqlite import sqlite_path_from_url
from ..session.urls import url_secrets
from ..wire.status import redact_secrets

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

__all__ = ["Driver", "PostgresDriver", "Query", "SqliteDriver", "open_driver"]

Rows: TypeAlias = list[tuple[Any, ...]]  # Any: the drivers' untyped rows
Query: TypeAlias = Callable[[str, Sequence[object]], Awaitable[Rows]]


class Driver(ABC):
    """One connection to the queue's database (see the module docstring)."""

    where: str
    postgres: bool

    @abstractmethod
    def transaction(self) -> contextlib.AbstractAsyncContextManager[Query]:
        """A transaction; yields the statement runner."""

    @abstractmethod
    async def lock_session(self, q: Query, session_id: str) -> None:
        """Inside a transaction: take `session_id`'s append lock."""

    @abstractmethod
    async def try_lock_session(self, q: Query, session_id: str) -> bool:
        """`lock_session` without waiting: False when another writer holds the session."""

    @abstractmethod
    async def notify(self, q: Query, ticket: str) -> None:
        """Inside a transaction: tell waiters `ticket` ended."""

    @abstractmethod
    async def wait_notice(self, timeout_s: float) -> None:
        """Wait for a notice or `timeout_s`."""

    @abstractmethod
    async def close(self) -> None:
        """Release the connection."""


class SqliteDriver(Driver):
    """The queue in the log's SQLite file: one connection on one thread."""

    postgres = False

    def __init__(self, url: str, busy_timeout_ms: int = 30_000) -> None:
        self.where = url
        self._path = sqlite_path_from_url(url)
        self._busy = busy_timeout_ms
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="modelwire-queue")
        self._conn: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()

    async def _call(self, fn: Callable[..., Any], *args: object) -> Any:  # Any: fn's result
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self._path, isolation_level=None, timeout=self._busy / 1000)
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy)}")
            self._conn = conn
        return self._conn

    def _run(self, sql: str, params: Sequence[object]) -> Rows:
        return self._connect().execute(sql.replace("%s", "?"), tuple(params)).fetchall()

    def _error(self, exc: BaseException) -> HarnessError:
        return HarnessError(f"turn queue {self.where}: {exc}", ErrorCode.LOG_UNAVAILABLE)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Query]:
        async def q(sql: str, params: Sequence[object] = ()) -> Rows:
            try:
                rows: Rows = await self._call(self._run, sql, params)
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            return rows

        async with self._lock:
            try:
                await q("BEGIN IMMEDIATE", ())
                yield q
                await q("COMMIT", ())
            except BaseException:
                # Cancelled or failed anywhere, BEGIN and COMMIT included (the thread finishes a
                # statement its caller stopped waiting for): never leave the write lock held.
                # Shielded: a second cancellation cannot skip it; queued after that statement.
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._call(self._rollback))
                raise

    def _rollback(self) -> None:
        conn = self._conn
        if conn is not None and conn.in_transaction:
            conn.execute("ROLLBACK")

    # `BEGIN IMMEDIATE` already holds the database write lock, every session's append lock;
    # waiters poll (SQLite has no notices)
    async def lock_session(self, q: Query, session_id: str) -> None:
        return

    async def try_lock_session(self, q: Query, session_id: str) -> bool:
        return True

    async def notify(self, q: Query, ticket: str) -> None:
        return

    async def wait_notice(self, timeout_s: float) -> None:
        await asyncio.sleep(timeout_s)

    async def close(self) -> None:
        def shut() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        with contextlib.suppress(Exception):
            await self._call(shut)
        self._executor.shutdown(wait=False)


class PostgresDriver(Driver):
    """The queue in the log's PostgreSQL database: one autocommit connection, reconnected once
    broken; waiters `LISTEN modelwire_turns`."""

    postgres = True

    def __init__(self, url: str) -> None:
        self.where = describe_postgres_url(url)
        self._url = url
        self._secrets = url_secrets(url)
        self._pg: ModuleType | None = None
        self._conn: psycopg.AsyncConnection[TupleRow] | None = None
        self._lock = asyncio.Lock()
        self._listener: psycopg.AsyncConnection[TupleRow] | None = None

    def _error(self, exc: BaseException) -> HarnessError:
        text = redact_secrets(str(exc).strip() or type(exc).__name__, self._secrets)
        return HarnessError(f"turn queue {self.where}: {text}", ErrorCode.LOG_UNAVAILABLE)

    async def _db(self) -> psycopg.AsyncConnection[TupleRow]:
        if self._pg is None:
            from ..session.postgres import _import_psycopg

            self._pg = _import_psycopg()
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            failure: HarnessError | None = None
            try:
                conn = await self._pg.AsyncConnection.connect(
                    self._url, autocommit=True, connect_timeout=10
                )
                # a lock held by a stalled writer fails the statement instead of hanging it
                await conn.execute("SET lock_timeout = 10000")
            except Exception as exc:
                failure = self._error(exc)
            if failure is not None:  # raised outside the handler: the driver's text (the URL,
                raise failure  # password and all) is in no `__cause__` / `__context__`
            assert conn is not None
            self._conn = conn
        return conn

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Query]:
        async with self._lock:
            conn = await self._db()
            pg = self._pg
            assert pg is not None

            async def q(sql: str, params: Sequence[object] = ()) -> Rows:
                failure: HarnessError
                try:
                    cur = await conn.execute(sql, tuple(params))
                    return await cur.fetchall() if cur.description is not None else []
                except pg.Error as exc:
                    failure = self._error(exc)
                raise failure  # outside the handler, as in `_db`

            failure: HarnessError | None = None
            try:
                async with conn.transaction():
                    yield q
            except pg.Error as exc:
                failure = self._error(exc)
            if failure is not None:
                raise failure

    async def lock_session(self, q: Query, session_id: str) -> None:
        await q("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMESPACE, session_id))

    async def try_lock_session(self, q: Query, session_id: str) -> bool:
        rows = await q(
            "SELECT pg_try_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMESPACE, session_id)
        )
        return bool(rows and rows[0][0])

    async def notify(self, q: Query, ticket: str) -> None:
        await q("SELECT pg_notify('modelwire_turns', %s)", (ticket,))

    async def wait_notice(self, timeout_s: float) -> None:
        # a connection of its own: waiting for a notice holds the connection
        try:
            conn = self._listener
            if conn is None or conn.closed or conn.broken:
                self._listener = None
                await self._db()  # imports psycopg, proves the server reachable
                assert self._pg is not None
                conn = await self._pg.AsyncConnection.connect(
                    self._url, autocommit=True, connect_timeout=10
                )
                await conn.execute("LISTEN modelwire_turns")
                self._listener = conn
            async for _ in conn.notifies(timeout=timeout_s, stop_after=1):
                break
        except Exception:  # unreachable: wait the interval, the caller checks again
            self._listener = None
            await asyncio.sleep(timeout_s)

    async def close(self) -> None:
        for conn in (self._conn, self._listener):
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()
        self._conn = self._listener = None


def open_driver(url: str) -> Driver:
    """The driver for a log URL (`sqlite:///…` or `postgresql://…`); others are `LOG_UNAVAILABLE`."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "sqlite":
        return SqliteDriver(url)
    if scheme in ("postgresql", "postgres"):
        return PostgresDriver(url)
    raise HarnessError(
        "a turn queue lives in a shared log database: expected sqlite:///path.db or "
        f"postgresql://…, got a {scheme or 'schemeless'} URL",
        ErrorCode.LOG_UNAVAILABLE,
    )
