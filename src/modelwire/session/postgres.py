"""The shared session log: PostgreSQL through psycopg 3 (async), for many workers and machines.

Install with the `[postgres]` extra; psycopg is imported only when a `postgresql://` log is
opened. Many processes may append to different sessions at once; appends to one session are
serialised across processes by a transaction-scoped advisory lock keyed by the session id
(`pg_advisory_xact_lock`), under which the next seq is read as `max(seq) + 1`, so seqs never
collide or skip; `PRIMARY KEY (session_id, seq)` is the last line of defence. A lock for a second
session is only ever tried without waiting (otherwise the open batch commits first), so two
processes can never deadlock. Appends are group-committed (`groupcommit.py`): batch commits use
`synchronous_commit = off`; `flush()` commits with `synchronous_commit = on`, which also makes
every earlier batch durable. Error messages name host, port and database, never the password.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Final, Self
from urllib.parse import unquote, urlsplit

from ..errors import ErrorCode, HarnessError
from .groupcommit import GroupCommitLog, PendingRow, session_updates
from .log import SessionInfo, StoredRow
from .urls import redact_url, url_secrets

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

__all__ = ["LOCK_NAMESPACE", "PostgresLog", "describe_postgres_url"]

LOCK_NAMESPACE: Final = 0x4D574C47
"""First key of every advisory lock this module takes (the second is `hashtext(session_id)`)."""

SCHEMA_VERSION: Final = "1"
"""The `schema_version` row of `modelwire_meta` this module writes and reads."""
_TABLES: Final = ("modelwire_meta", "modelwire_sessions", "modelwire_events")
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS modelwire_meta (key text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE IF NOT EXISTS modelwire_sessions (
        session_id text PRIMARY KEY,
        events bigint NOT NULL,
        first_time bigint NOT NULL,
        last_time bigint NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS modelwire_events (
        session_id text NOT NULL,
        seq bigint NOT NULL CHECK (seq >= 0),
        type text NOT NULL,
        time bigint NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    "CREATE INDEX IF NOT EXISTS modelwire_events_by_type ON modelwire_events (session_id, type, seq)",
    "INSERT INTO modelwire_meta (key, value) VALUES ('schema_version', '1') ON CONFLICT DO NOTHING",
)
_COPY: Final = "COPY modelwire_events (session_id, seq, type, time, data) FROM STDIN"
_UPSERT_SESSION: Final = (
    "INSERT INTO modelwire_sessions (session_id, events, first_time, last_time) "
    "VALUES (%s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET "
    "events = EXCLUDED.events, last_time = EXCLUDED.last_time"
)


def _import_psycopg() -> ModuleType:
    try:
        import psycopg
    except ImportError as exc:
        raise HarnessError(
            "PostgreSQL session logs need psycopg 3: install it with "
            "`pip install 'modelwire[postgres]'`",
            ErrorCode.LOG_UNAVAILABLE,
            cause=exc,
        ) from exc
    return psycopg


def describe_postgres_url(url: str) -> str:
    """`postgresql://user@host:port/db` for messages: no password, no query string."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
        user = f"{unquote(parts.username)}@" if parts.username else ""
    except ValueError:  # still name what can be named, without the password
        return redact_url(url)
    return f"postgresql://{user}{host}{port}{parts.path or '/'}"


class PostgresLog(GroupCommitLog):
    """A `SessionLog` in PostgreSQL tables; open it with `await PostgresLog.open(url)`.

    Tables (`modelwire_events`, `modelwire_sessions`, `modelwire_meta`) are created on first use
    in the connection's current schema (select another with `?options=-csearch_path%3Dname`).
    """

    def __init__(
        self,
        url: str,
        *,
        commit_rows: int,
        commit_interval_ms: float,
        connect_timeout_s: float,
        lock_timeout_ms: int,
        statement_timeout_ms: int = 30_000,
        io_timeout_s: float = 45.0,
        clock: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(
            commit_rows=commit_rows,
            commit_interval_ms=commit_interval_ms,
            clock=clock,
            io_timeout_s=io_timeout_s,
        )
        self._statement_timeout_ms = statement_timeout_ms
        self._url = url
        self._where = describe_postgres_url(url)
        self._secrets = url_secrets(url)  # parsed or not: a driver message may quote the URL
        self._connect_timeout_s = connect_timeout_s
        self._lock_timeout_ms = lock_timeout_ms
        self._psycopg: ModuleType | None = None
        self._conn: psycopg.AsyncConnection[TupleRow] | None = None

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        commit_rows: int = 1024,
        commit_interval_ms: float = 10.0,
        connect_timeout_s: float = 10.0,
        lock_timeout_ms: int = 30_000,
        statement_timeout_ms: int = 30_000,
        io_timeout_s: float = 45.0,
        clock: Callable[[], int] | None = None,
    ) -> Self:
        """Connect, create or check the schema, and return the log.

        Missing psycopg or an unreachable server raises `LOG_UNAVAILABLE` naming host and
        database; tables of another schema version raise `LOG_CORRUPT`. Every operation is
        bounded twice: on the server (`lock_timeout_ms`, `statement_timeout_ms`) and on the
        client (`io_timeout_s`, which covers a frozen server or network the server-side limits
        cannot see; keep it above the other two). Past it the operation fails with
        `LOG_UNAVAILABLE` naming the stall, and the connection is dropped.
        """
        log = cls(
            url,
            commit_rows=commit_rows,
            commit_interval_ms=commit_interval_ms,
            connect_timeout_s=connect_timeout_s,
            lock_timeout_ms=lock_timeout_ms,
            statement_timeout_ms=statement_timeout_ms,
            io_timeout_s=io_timeout_s,
            clock=clock,
        )
        log._psycopg = _import_psycopg()
        try:
            await log._bounded(log._connect(), "connect")
            await log._bounded(log._ensure_schema(), "create or check the schema")
        except BaseException:
            await log._release()
            raise
        return log

    def describe(self) -> str:
        """`postgresql://user@host:port/db` without the password."""
        return self._where

    # ---- connection --------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _storage_error(self, exc: BaseException, action: str) -> HarnessError:
        errors = self._psycopg.errors if self._psycopg is not None else None
        if errors is not None and isinstance(exc, errors.UniqueViolation):
            code = ErrorCode.SEQ_CONFLICT
        else:
            code = ErrorCode.LOG_UNAVAILABLE
        text = self._scrub(str(exc).strip()) or type(exc).__name__
        return HarnessError(f"PostgreSQL session log {self._where}: cannot {action}: {text}", code)

    @property
    def _pg(self) -> ModuleType:
        assert self._psycopg is not None, "open() imports psycopg before any query"
        return self._psycopg

    async def _connect(self) -> None:
        psycopg = self._pg
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=max(1, int(self._connect_timeout_s))
            )
        except psycopg.Error as exc:
            raise self._storage_error(exc, "connect") from None
        except ValueError as exc:  # a malformed URL
            raise self._storage_error(exc, "parse the URL") from None
        self._conn = conn
        await conn.execute("SET synchronous_commit = on")
        await conn.execute(f"SET lock_timeout = {int(self._lock_timeout_ms)}")
        await conn.execute(f"SET statement_timeout = {int(self._statement_timeout_ms)}")

    def _abandon(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.pgconn.finish()  # close the socket now: a stalled server is not waited for

    async def _db(self) -> psycopg.AsyncConnection[TupleRow]:
        """The connection, reconnecting once if it broke while no transaction was open."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if self._txn_open:
                raise HarnessError(
                    f"PostgreSQL session log {self._where}: connection lost",
                    ErrorCode.LOG_UNAVAILABLE,
                )
            await self._connect()
            conn = self._conn
            assert conn is not None
        return conn

    async def _ensure_schema(self) -> None:
        conn = await self._db()
        try:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_NAMESPACE,))
                cur = await conn.execute(
                    "SELECT " + ", ".join(f"to_regclass('{name}') IS NOT NULL" for name in _TABLES)
                )
                present = await cur.fetchone()
                if not (present and all(present)):
                    for statement in _SCHEMA:
                        await conn.execute(statement)
                cur = await conn.execute(
                    "SELECT value FROM modelwire_meta WHERE key = 'schema_version'"
                )
                row = await cur.fetchone()
        except self._pg.Error as exc:
            raise self._storage_error(exc, "create or check the schema") from None
        if row is None or row[0] != SCHEMA_VERSION:
            found = "none" if row is None else repr(row[0])
            raise HarnessError(
                f"PostgreSQL session log {self._where}: modelwire_meta records schema version "
                f"{found}, expected {SCHEMA_VERSION!r}; the tables were left untouched",
                ErrorCode.LOG_CORRUPT,
            )

    # ---- transaction hooks -------------------------------------------------------------------

    async def _tx_begin(self) -> None:
        await (await self._db()).execute("BEGIN")

    async def _tx_lock(self, session_id: str, *, wait: bool) -> bool:
        conn = await self._db()
        if wait:
            await conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMESPACE, session_id)
            )
            return True
        cur = await conn.execute(
            "SELECT pg_try_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMESPACE, session_id)
        )
        row = await cur.fetchone()
        return bool(row and row[0])

    async def _tx_next_seq(self, session_id: str) -> int:
        conn = await self._db()
        cur = await conn.execute(
            "SELECT (SELECT max(seq) FROM modelwire_events WHERE session_id = %s), "
            "(SELECT events FROM modelwire_sessions WHERE session_id = %s)",
            (session_id, session_id),
        )
        row = await cur.fetchone()
        top, recorded = row if row else (None, None)
        following = 0 if top is None else int(top) + 1
        if (recorded or 0) != following:
            raise HarnessError(
                f"PostgreSQL session log {self._where}: session {session_id!r} ends at seq "
                f"{following - 1} but its sessions row records {recorded or 0} event(s)",
                ErrorCode.LOG_CORRUPT,
            )
        return following

    async def _tx_write(self, rows: Sequence[PendingRow]) -> None:
        conn = await self._db()
        async with conn.cursor() as cur:
            async with cur.copy(_COPY) as copy:
                for row in rows:
                    await copy.write_row(row)
            await cur.executemany(_UPSERT_SESSION, session_updates(rows))

    async def _tx_commit(self, *, durable: bool) -> None:
        conn = await self._db()
        if not durable:
            await conn.execute("SET LOCAL synchronous_commit = off")
        await conn.execute("COMMIT")

    async def _tx_rollback(self) -> None:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return
        try:
            await conn.execute("ROLLBACK")
        except Exception:
            await self._release()

    async def _tx_sync(self) -> None:
        conn = await self._db()
        async with conn.transaction():  # a commit record flushed under synchronous_commit = on
            await conn.execute("SELECT txid_current()")

    # ---- queries -----------------------------------------------------------------------------

    async def _q_load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        conn = await self._db()
        sql = (
            "SELECT seq, type, time, data FROM modelwire_events WHERE session_id = %s AND seq >= %s"
        )
        args: tuple[object, ...] = (session_id, from_seq)
        if to_seq is not None:
            sql += " AND seq < %s"
            args = (*args, to_seq)
        cur = await conn.execute(sql + " ORDER BY seq", args)
        return [(int(s), str(t), int(at), bytes(d)) for s, t, at, d in await cur.fetchall()]

    async def _q_latest(self, session_id: str, type: str) -> StoredRow | None:
        conn = await self._db()
        cur = await conn.execute(
            "SELECT seq, type, time, data FROM modelwire_events WHERE session_id = %s AND "
            "type = %s ORDER BY seq DESC LIMIT 1",
            (session_id, type),
        )
        row = await cur.fetchone()
        if row is None:
            return None
        seq, name, at, data = row
        return (int(seq), str(name), int(at), bytes(data))

    async def _q_exists(self, session_id: str) -> bool:
        conn = await self._db()
        cur = await conn.execute(
            "SELECT 1 FROM modelwire_sessions WHERE session_id = %s", (session_id,)
        )
        return await cur.fetchone() is not None

    async def _q_sessions(self) -> list[SessionInfo]:
        conn = await self._db()
        cur = await conn.execute(
            "SELECT session_id, events, first_time, last_time FROM modelwire_sessions"
        )
        return [SessionInfo(str(s), int(n), int(a), int(b)) for s, n, a, b in await cur.fetchall()]

    async def _release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close()
            except Exception:
                return
