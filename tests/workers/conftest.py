"""Fixtures of the worker-pool tests: `pg_cluster`, a PostgreSQL server a test may restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pgcluster import PgCluster, find_pgbin


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
