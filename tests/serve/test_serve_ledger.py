"""The keys' group commit (`serve/ledger.py`) on a real SQLite file and a real PostgreSQL:
concurrent admissions of one key share transactions, never admit past a limit, a refused one
undoes what it booked, and settlements summed per key are exact."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path

import pytest
from pgschema import PG_URL, create_schema_url, drop_schema, needs_postgres

from modelwire.serve.database import KeyDatabase
from modelwire.serve.keystore import KeyRecord, create_key, find_key, list_keys, open_keys
from modelwire.serve.ledger import Ledger
from modelwire.serve.limits import Admission, RouteLimit
from modelwire.serve.problems import GatewayError

NOW = 1_800_000_000_000
COST = 1_000_000  # nano-USD reserved per request


class _Counting(KeyDatabase):
    """The real database, counting its transactions."""

    def __init__(self, inner: KeyDatabase) -> None:
        super().__init__(inner._drivers)
        self.transactions = 0

    async def run(self, work):  # type: ignore[no-untyped-def, override]
        self.transactions += 1
        return await super().run(work)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=needs_postgres)])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/gw.db"
        return
    assert PG_URL is not None
    name, scoped = await create_schema_url(PG_URL)
    try:
        yield scoped
    finally:
        await drop_schema(PG_URL, name)


async def _record(driver: KeyDatabase, name: str, **limits: object) -> KeyRecord:
    key = await create_key(driver, name, NOW, **limits)  # type: ignore[arg-type]
    found = await find_key(driver, key)
    assert found is not None
    return found


async def test_concurrent_admissions_share_transactions_and_stop_at_the_limit(url: str) -> None:
    driver = await open_keys(url)
    try:
        record = await _record(driver, "busy", budget_usd=Decimal(1), rpm=5)
        counting = _Counting(driver)
        ledger = Ledger(counting)
        outcomes = await asyncio.gather(
            *(ledger.admit(record, NOW, COST, 10) for _ in range(12)), return_exceptions=True
        )
        admitted = [o for o in outcomes if isinstance(o, Admission)]
        refused = [o for o in outcomes if isinstance(o, GatewayError)]
        assert len(admitted) == 5 and len(refused) == 7
        assert {r.code for r in refused} == {"RATE_LIMIT"}
        assert 1 <= counting.transactions < 12  # batched: not one per request
        (state,) = await list_keys(driver)
        assert state.reserved_usd == Decimal(5 * COST) / 1_000_000_000  # refusals undone
        before = counting.transactions
        await asyncio.gather(*(ledger.settle(a, COST // 2, 7) for a in admitted))
        assert 1 <= counting.transactions - before < 5
        (state,) = await list_keys(driver)
        assert state.reserved_usd == 0
        assert state.spent_usd == Decimal(5 * (COST // 2)) / 1_000_000_000
        await ledger.close()
    finally:
        await driver.close()


async def test_a_route_refusal_undoes_the_keys_budget_and_window(url: str) -> None:
    driver = await open_keys(url)
    try:
        record = await _record(driver, "r", budget_usd=Decimal(1), rpm=10)
        ledger = Ledger(driver)
        limit = RouteLimit(rpm=1)
        await ledger.admit(record, NOW, COST, 10, route="up", route_limit=limit)
        with pytest.raises(GatewayError) as refused:
            await ledger.admit(record, NOW, COST, 10, route="up", route_limit=limit)
        assert refused.value.code == "RATE_LIMIT" and "route 'up'" in str(refused.value)
        (state,) = await list_keys(driver)
        assert state.reserved_usd == Decimal(COST) / 1_000_000_000
        async with driver.transaction() as q:
            rows = await q(
                "SELECT requests FROM modelwire_gateway_windows WHERE key_name = %s", ("r",)
            )
        assert [int(str(r[0])) for r in rows] == [1]
    finally:
        await driver.close()


async def test_a_spent_budget_and_a_revoked_key_are_refused_in_a_batch(url: str) -> None:
    driver = await open_keys(url)
    try:
        spent = await _record(driver, "spent", budget_usd=Decimal("0.001"))
        gone = await _record(driver, "gone")
        ledger = Ledger(driver)
        first = await ledger.admit(spent, NOW, 2_000_000, 1)
        async with driver.transaction() as q:
            await q(
                "UPDATE modelwire_gateway_keys SET revoked_ms = %s WHERE name = %s", (NOW, "gone")
            )
        outcomes = await asyncio.gather(
            ledger.admit(spent, NOW, 1, 1), ledger.admit(gone, NOW, 0, 1), return_exceptions=True
        )
        codes = [o.code if isinstance(o, GatewayError) else "ok" for o in outcomes]
        assert codes == ["BUDGET_EXCEEDED", "AUTH"]
        await ledger.settle(first, 2_000_000, 1)
    finally:
        await driver.close()


async def test_a_caller_cancelled_in_a_batch_gets_its_reservation_back(url: str) -> None:
    driver = await open_keys(url)
    try:
        record = await _record(driver, "left", budget_usd=Decimal(1), rpm=10)
        ledger = Ledger(driver)
        waiting = asyncio.ensure_future(ledger.admit(record, NOW, COST, 10))
        await asyncio.sleep(0)  # queued, its batch started
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await ledger.close()
        (state,) = await list_keys(driver)
        assert state.reserved_usd == 0 and state.spent_usd == 0
    finally:
        await driver.close()
