"""The PostgreSQL test server (`MODELWIRE_TEST_POSTGRES_URL`) of the worker and CLI tests, and
fresh schemas on it, selected through libpq `options=-csearch_path=...` (as `tests/session` does)."""

from __future__ import annotations

import os
import uuid

import pytest

__all__ = ["PG_ENV", "PG_URL", "create_schema_url", "drop_schema", "needs_postgres"]

PG_ENV = "MODELWIRE_TEST_POSTGRES_URL"
PG_URL = os.environ.get(PG_ENV) or None
needs_postgres = pytest.mark.skipif(PG_URL is None, reason=f"{PG_ENV} is not set")
"""Like the other PostgreSQL tests: skipped without a server (CI sets the variable)."""


async def create_schema_url(url: str) -> tuple[str, str]:
    """A fresh schema on the server at `url`: (its name, `url` selecting it as search path)."""
    import psycopg

    name = f"mwtest_{uuid.uuid4().hex[:16]}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {name}")
    joiner = "&" if "?" in url else "?"
    return name, f"{url}{joiner}options=-csearch_path%3D{name}"


async def drop_schema(url: str, name: str) -> None:
    """Drop a schema made by `create_schema_url`, with everything in it."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
