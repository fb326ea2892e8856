"""Fixtures of the worker-pool tests: `pg_cluster`, a PostgreSQL server a test may restart;
`pg_schema_url`, the test server on a fresh schema; `queue_url`, a log database of each kind."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from pgcluster import PgCluster, find_pgbin
from pgschema import PG_ENV, PG_URL, create_schema_url, drop_schema, needs_postgres


@pytest.fixture
async def pg_schema_url() -> AsyncIterator[str]:
    """The test server's URL on a fresh schema, dropped afterwards (mark the test
    `needs_postgres`)."""
    assert PG_URL is not None, f"{PG_ENV} is not set"
    name, url = await create_schema_url(PG_URL)
    try:
        yield url
    finally:
        await drop_schema(PG_URL, name)


@pytest.fixture(
    params=["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, needs_postgres])]
)
async def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A log database a queue lives in: a SQLite file, or the test server on a fresh schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'queue.db'}"
        return
    assert PG_URL is not None
    name, url = await create_schema_url(PG_URL)
    try:
        yield url
    finally:
        await drop_schema(PG_URL, name)


@pytest.fixture
def pg_cluster(tmp_path: Path) -> Iterator[PgCluster]:
    """A fresh PostgreSQL cluster owned by this test (`.url`, `.stop()`, `.start()`, ...),
    destroyed afterwards. Fails (never skips) without PostgreSQL: CI installs it."""
    pgbin = find_pgbin()
    if pgbin is None or not (pgbin / "initdb").is_file():
        pytest.fail(
            f"PostgreSQL binaries not found (no initdb in {pgbin or '/usr/lib/postgresql/*/bin'}): "
            "install the Debian package `postgresql` (.ci/run does) to run the worker tests",
            pytrace=False,
        )
    cluster = PgCluster.create(tmp_path, pgbin=pgbin)
    try:
        yield cluster
    finally:
        cluster.destroy()
