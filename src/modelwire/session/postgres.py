"""The shared session log: PostgreSQL through psycopg 3 (async), for many workers and machines.

Install with the `[postgres]` extra (psycopg is imported when a `postgresql://` log opens).
Appends to one session are serialised across processes by a transaction-scoped advisory lock
keyed by the session id (`pg_advisory_xact_lock`), under which the next seq is read from the last
row, so seqs never collide or skip (`PRIMARY KEY (session_id, seq)` is the last defence). A lock
for a second session is only tried without waiting (else the open batch commits first): no
deadlock. Appends are group-committed (`groupcommit.py`): batches commit with `synchronous_commit
= off`; `flush()` with `SET LOCAL synchronous_commit = on`, making every earlier batch durable.
A batch is one statement. Error messages name host, port and database, never the password.

Schema version 2 (`modelwire_meta.schema_version`) adds `event_count`: a row may hold a run of
chunk events (`chunkrun.py`). Version-1 tables are migrated on open (one `ALTER TABLE ... ADD
COLUMN` with a default, under the schema lock); older code refuses version 2 (`LOG_CORRUPT`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Final, Self
from urllib.parse import unquote, urlsplit

from ..errors import ErrorCode, HarnessError
from .groupcommit import GroupCommitLog
from .lease import Decision, LeaseRow
from .lease_sql import SELECT_ALL, SELECT_ONE, UPSERT, lease_row, upsert_args
from .log import SessionInfo, StoredRow
from .pending import PendingRow, session_updates
from .postgres_sql import COLUMNS, SCHEMA_VERSION, WRITE, delete_session, ensure_schema, stored_row
from .urls import redact_url, url_secrets

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

__all__ = ["LOCK_NAMESPACE", "SCHEMA_VERSION", "PostgresLog", "describe_postgres_url"]

LOCK_NAMESPACE: Final = 0x4D574C47
"""First key of every advisory lock this module takes (the second is `hashtext(session_id)`)."""


def _import_psycopg() -> ModuleType:
    try:
        import psycopg
    except ImportError as exc:
        raise HarnessError(
            "PostgreSQL session logs need psycopg 3: install it with "
            "`pip install 'psycopg[binary]>=3.1'` (from a clone: `pip install '.[postgres]'`)",
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
        self._seen_leases: dict[str, LeaseRow | None] = {}

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
        # the driver quotes the URL, password and all: no __cause__/__context__ may hold its error
        failure: HarnessError | None = None
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=max(1, int(self._connect_timeout_s))
            )
        except psycopg.Error as exc:
            failure = self._storage_error(exc, "connect")
        except ValueError as exc:  # a malformed URL
            failure = self._storage_error(exc, "parse the URL")
        if failure is not None:
            raise failure
        self._conn = conn
        # batch commits are relaxed; a durable commit says `SET LOCAL synchronous_commit = on`
        await conn.execute("SET synchronous_commit = off")
        await conn.execute(f"SET lock_timeout = {int(self._lock_timeout_ms)}")
        await conn.execute(f"SET statement_timeout = {int(self._statement_timeout_ms)}")

    def _abandon(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.pgconn.finish()  # close the socket now: a stalled server is not waited for
            self._cache.clear()  # as after a lost connection (`_db`)

    async def _db(self) -> psycopg.AsyncConnection[TupleRow]:
        """The connection, reconnecting once if it broke while no transaction was open."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if self._txn_open:
                raise HarnessError(
                    f"PostgreSQL session log {self._where}: connection lost",
                    ErrorCode.LOG_UNAVAILABLE,
                )
            if conn is not None:  # a crashed server may have lost relaxed commits: no cache
                self._cache.clear()
                await self._release()
            await self._connect()
            conn = self._conn
            assert conn is not None
        return conn

    async def _ensure_schema(self) -> None:
        conn = await self._db()
        try:
            version = await ensure_schema(conn, LOCK_NAMESPACE)
        except self._pg.Error as exc:
            raise self._storage_error(exc, "create or check the schema") from None
        if version != SCHEMA_VERSION:
            found = "none" if version is None else repr(version)
            raise HarnessError(
                f"PostgreSQL session log {self._where}: modelwire_meta records schema version "
                f"{found}, expected {SCHEMA_VERSION!r}; the tables were left untouched",
                ErrorCode.LOG_CORRUPT,
            )

    # ---- transaction hooks -------------------------------------------------------------------

    async def _tx_open(self, session_ids: Sequence[str]) -> dict[str, int]:
        self._seen_leases = {}  # lease rows read in this transaction, under its locks
        conn = await self._db()
        first, others = session_ids[0], list(session_ids[1:])
        # one round trip (simple protocol, the id quoted by psycopg as a literal)
        begin = "BEGIN; SELECT pg_advisory_xact_lock({}, hashtext({}))"
        await conn.execute(self._pg.sql.SQL(begin).format(LOCK_NAMESPACE, first))
        locked = [first]
        if others:  # only tried once the first is held: never waiting while holding others
            cur = await conn.execute(
                "SELECT s FROM unnest(%s::text[]) AS u(s) "
                "WHERE pg_try_advisory_xact_lock(%s, hashtext(s))",
                (others, LOCK_NAMESPACE),
            )
            locked += [str(row[0]) for row in await cur.fetchall()]
        return await self._next_seqs(conn, locked)

    async def _tx_extend(self, session_id: str) -> int | None:
        conn = await self._db()
        cur = await conn.execute(
            "SELECT pg_try_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMESPACE, session_id)
        )
        row = await cur.fetchone()
        if not (row and row[0]):
            return None
        return (await self._next_seqs(conn, [session_id]))[session_id]

    async def _next_seqs(
        self, conn: psycopg.AsyncConnection[TupleRow], session_ids: list[str]
    ) -> dict[str, int]:
        """The next seq of each (locked) session, read in one statement after the locks, with
        its lease row (kept for `_tx_fences`: read under the same locks, in the same round trip)."""
        cur = await conn.execute(
            "SELECT s, (SELECT seq + event_count FROM modelwire_events e WHERE e.session_id = s "
            "ORDER BY seq DESC LIMIT 1), "
            "(SELECT events FROM modelwire_sessions m WHERE m.session_id = s), "
            "l.owner, l.token, l.expires_ms "
            "FROM unnest(%s::text[]) AS u(s) LEFT JOIN modelwire_leases l ON l.session_id = s",
            (session_ids,),
        )
        out: dict[str, int] = {}
        for sid, top, recorded, owner, token, expires in await cur.fetchall():
            self._seen_leases[str(sid)] = (
                None if token is None else LeaseRow(str(sid), str(owner), int(token), int(expires))
            )
            following = 0 if top is None else int(top)
            if (recorded or 0) != following:
                raise HarnessError(
                    f"PostgreSQL session log {self._where}: session {sid!r} ends at seq "
                    f"{following - 1} but its sessions row records {recorded or 0} event(s)",
                    ErrorCode.LOG_CORRUPT,
                )
            out[str(sid)] = following
        return out

    async def _tx_write(self, rows: Sequence[PendingRow]) -> None:
        conn = await self._db()
        async with conn.cursor() as cur:
            updates = session_updates(rows)
            await cur.execute(
                WRITE,
                [*map(list, zip(*rows, strict=True)), *map(list, zip(*updates, strict=True))],
            )

    async def _tx_finish(self, rows: Sequence[PendingRow], *, durable: bool) -> None:
        if rows:
            await self._tx_write(rows)
        conn = await self._db()
        await conn.execute("SET LOCAL synchronous_commit = on; COMMIT" if durable else "COMMIT")

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
        # a commit record flushed under synchronous_commit = on (one round trip)
        await conn.execute(
            "BEGIN; SET LOCAL synchronous_commit = on; SELECT txid_current(); COMMIT"
        )

    async def _tx_lease(
        self, session_id: str, decide: Decision, now_ms: int
    ) -> tuple[LeaseRow | None, LeaseRow | None]:
        conn = await self._db()
        sql = self._pg.sql
        # two round trips: lock (the appends' lock) and read; then write and commit
        read = "BEGIN; SELECT pg_advisory_xact_lock({}, hashtext({})); " + SELECT_ONE.format(p="{}")
        try:
            cur = await conn.execute(sql.SQL(read).format(LOCK_NAMESPACE, session_id, session_id))
            while cur.nextset():  # to the last statement's result: the lease row
                pass
            found = await cur.fetchone()
            before = None if found is None else lease_row(found)
            after = decide(before, now_ms)
            if after is None:
                await conn.execute("COMMIT")
            else:
                write = UPSERT.format(p="{}") + "; COMMIT"
                await conn.execute(sql.SQL(write).format(*upsert_args(after)))
        except BaseException:
            await self._tx_rollback()
            raise
        return before, after

    async def _tx_fences(self, session_ids: Sequence[str]) -> dict[str, LeaseRow]:
        seen = self._seen_leases
        if all(sid in seen for sid in session_ids):  # read with the seqs, under these locks
            return {sid: row for sid in session_ids if (row := seen[sid]) is not None}
        conn = await self._db()
        cur = await conn.execute(SELECT_ALL + " WHERE session_id = ANY(%s)", (list(session_ids),))
        return {row.session_id: row for row in map(lease_row, await cur.fetchall())}

    async def _tx_delete(self, session_id: str, now_ms: int) -> int:
        return await delete_session(await self._db(), LOCK_NAMESPACE, session_id, now_ms)

    async def _q_leases(self) -> list[LeaseRow]:
        conn = await self._db()
        cur = await conn.execute(SELECT_ALL)
        return [lease_row(row) for row in await cur.fetchall()]

    # ---- queries -----------------------------------------------------------------------------

    async def _q_load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        conn = await self._db()
        # from the row holding `from_seq` (a run may start before it)
        sql = (
            f"{COLUMNS} WHERE session_id = %(s)s AND seq >= coalesce((SELECT max(seq) FROM "
            "modelwire_events WHERE session_id = %(s)s AND seq <= %(f)s), %(f)s)"
        )
        args: dict[str, object] = {"s": session_id, "f": from_seq}
        if to_seq is not None:
            sql += " AND seq < %(t)s"
            args["t"] = to_seq
        cur = await conn.execute(sql + " ORDER BY seq", args)
        return [stored_row(r) for r in await cur.fetchall()]

    async def _q_latest(self, session_id: str, type: str) -> StoredRow | None:
        conn = await self._db()
        cur = await conn.execute(
            f"{COLUMNS} WHERE session_id = %s AND type = %s ORDER BY seq DESC LIMIT 1",
            (session_id, type),
        )
        row = await cur.fetchone()
        return None if row is None else stored_row(row)

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
