"""`PgCluster`: a throwaway server keeps committed rows across a restart and a crash, and the
same URL reaches it again."""

from __future__ import annotations

import psycopg
import pytest
from pgcluster import PgCluster, PgClusterError


def _rows(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        return [(int(r[0]), str(r[1])) for r in conn.execute("SELECT id, note FROM t ORDER BY id")]


def test_rows_survive_a_restart_and_a_new_connection_works(pg_cluster: PgCluster) -> None:
    assert pg_cluster.url == f"postgresql://postgres@127.0.0.1:{pg_cluster.port}/postgres"
    with psycopg.connect(pg_cluster.url) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, note text NOT NULL)")
        conn.execute("INSERT INTO t VALUES (1, 'before restart')")
    old = psycopg.connect(pg_cluster.url)

    pg_cluster.restart()

    with pytest.raises(psycopg.OperationalError):  # the server closed the old session
        old.execute("SELECT 1")
    old.close()
    assert _rows(pg_cluster.url) == [(1, "before restart")]


def test_an_immediate_stop_keeps_committed_rows(pg_cluster: PgCluster) -> None:
    with psycopg.connect(pg_cluster.url) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, note text NOT NULL)")
        conn.execute("INSERT INTO t VALUES (1, 'committed')")
    pg_cluster.stop("immediate")
    assert not pg_cluster.is_running()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(pg_cluster.url, connect_timeout=5)
    pg_cluster.stop()  # stopping a stopped cluster does nothing

    pg_cluster.start()  # crash recovery replays the WAL

    assert pg_cluster.is_running()
    assert _rows(pg_cluster.url) == [(1, "committed")]


def test_a_failing_command_names_itself_its_stderr_and_the_server_log(
    pg_cluster: PgCluster,
) -> None:
    with pytest.raises(PgClusterError) as info:
        pg_cluster.start()  # it already runs: the second postmaster refuses the data directory
    message = str(info.value)
    assert "pg_ctl start" in message and "exit status 1" in message
    assert "could not start server" in message  # pg_ctl's stderr
    assert 'lock file "postmaster.pid" already exists' in message  # the server log's tail
    with psycopg.connect(pg_cluster.url) as conn:  # the running server is untouched
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_destroy_removes_the_data_directory(pg_cluster: PgCluster) -> None:
    datadir = pg_cluster.datadir
    pg_cluster.destroy()
    assert not datadir.exists()
    pg_cluster.destroy()  # idempotent; the fixture destroys it again
    with pytest.raises(PgClusterError, match="destroyed"):
        pg_cluster.start()
