"""Virtual keys through the real SDKs: created, used, revoked; route limits; budgets and rate
limits in the log database (reserve, then settle), each refusal in the shape the SDK parses."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import anthropic
import openai
import pytest
from pgschema import PG_URL, create_schema_url, drop_schema, needs_postgres
from serve_helpers import MockServer, anthropic_text, chat_text, config, gateway

from modelwire.serve.handlers import GATEWAY
from modelwire.serve.keystore import create_key, list_keys, open_keys, revoke_key

NOW = 1_800_000_000_000  # an injected clock: a minute starts here


def _client(url: str, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key=key, max_retries=0)


async def _key(log: str, name: str, **limits: object) -> str:
    driver = await open_keys(log)
    try:
        return await create_key(driver, name, NOW, **limits)  # type: ignore[arg-type]
    finally:
        await driver.close()


async def test_a_key_is_used_logged_by_name_and_stored_only_hashed(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    key = await _key(log, "team-a")
    assert key.startswith("mwk_") and len(key) > 40
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url), log, clock=lambda: NOW) as (app, url):
            reply = await _client(url, key).chat.completions.create(
                model="oa:m", messages=[{"role": "user", "content": "hi"}]
            )
            assert reply.choices[0].message.content == "ok"
            events = await app[GATEWAY].log.read((await app[GATEWAY].log.sessions())[0].session_id)
            request = next(e.data for e in events if e.type == "gateway/request")
            assert request.key == "team-a"  # type: ignore[attr-defined]
    raw = (tmp_path / "gw.db").read_bytes()
    for name in ("gw.db-wal", "gw.db-keys", "gw.db-keys-wal"):
        if (tmp_path / name).exists():
            raw += (tmp_path / name).read_bytes()
    assert key.encode() not in raw and key[4:].encode() not in raw  # only its hash is stored


async def test_missing_wrong_and_revoked_keys_are_401_in_each_sdks_shape(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    key = await _key(log, "gone")
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url), log, clock=lambda: NOW) as (_, url):
            with pytest.raises(openai.AuthenticationError) as wrong:
                await _client(url, "mwk_not-a-key").chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}]
                )
            assert wrong.value.status_code == 401
            assert wrong.value.code == "AUTH" and "not valid" in wrong.value.message
            assert "mwk_not-a-key" not in wrong.value.message
            messages = anthropic.AsyncAnthropic(base_url=url, api_key="mwk_wrong", max_retries=0)
            with pytest.raises(anthropic.AuthenticationError) as anth:
                await messages.messages.create(
                    model="an:claude-x", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
                )
            assert anth.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
            import aiohttp

            async with aiohttp.ClientSession() as http:
                async with http.post(url + "/v1/chat/completions", json={}) as resp:
                    assert resp.status == 401
                    assert (await resp.json())["error"]["code"] == "AUTH"
            await _client(url, key).chat.completions.create(  # known (and cached) before
                model="oa:m", messages=[{"role": "user", "content": "hi"}]
            )
            driver = await open_keys(log)
            assert await revoke_key(driver, "gone", NOW)
            await driver.close()
            with pytest.raises(openai.AuthenticationError) as revoked:
                await _client(url, key).chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}]
                )
            assert "revoked" in revoked.value.message


async def test_a_route_the_key_may_not_use_is_403(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    key = await _key(log, "only-an", routes=("an",))
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("fine")]) as an:
        async with gateway(config(up.url, an.url), log, clock=lambda: NOW) as (_, url):
            with pytest.raises(openai.PermissionDeniedError) as denied:
                await _client(url, key).chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}]
                )
            assert "may not use route 'oa'" in denied.value.message
            assert up.bodies == []  # nothing went upstream
            reply = await _client(url, key).chat.completions.create(
                model="an:claude-x", messages=[{"role": "user", "content": "hi"}]
            )
            assert reply.choices[0].message.content == "fine"


async def test_a_spent_budget_is_429_budget_exceeded_and_spend_is_settled(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    # oa:m costs $1000/M input and $2000/M output: 7 + 3 tokens cost $0.013
    key = await _key(log, "small", budget_usd=Decimal("0.02"))
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url), log, clock=lambda: NOW) as (_, url):
            client = _client(url, key)
            for _ in range(2):  # the second is admitted: $0.013 spent is under $0.02
                await client.chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}], max_tokens=3
                )
            with pytest.raises(openai.RateLimitError) as over:
                await client.chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}], max_tokens=3
                )
            assert over.value.code == "BUDGET_EXCEEDED"
            assert over.value.response.headers["x-should-retry"] == "false"
            assert len(up.bodies) == 2
            with pytest.raises(openai.PermissionDeniedError) as unpriced:
                await client.chat.completions.create(
                    model="an:claude-x", messages=[{"role": "user", "content": "hi"}]
                )
            assert "no known price" in unpriced.value.message
    driver = await open_keys(log)
    (record,) = await list_keys(driver)
    await driver.close()
    assert record.spent_usd == Decimal("0.026") and record.reserved_usd == 0


async def test_rpm_is_429_rate_limit_with_retry_after_until_the_next_minute(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    key = await _key(log, "slow", rpm=2)
    now = [NOW + 45_000]
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url), log, clock=lambda: now[0]) as (_, url):
            client = _client(url, key)
            for _ in range(2):
                await client.chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}]
                )
            with pytest.raises(openai.RateLimitError) as limited:
                await client.chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}]
                )
            assert limited.value.code == "RATE_LIMIT"
            assert limited.value.response.headers["Retry-After"] == "15"
            now[0] = NOW + 60_000  # the next minute
            await client.chat.completions.create(
                model="oa:m", messages=[{"role": "user", "content": "hi"}]
            )
            assert len(up.bodies) == 3


async def test_tpm_counts_measured_tokens(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    key = await _key(log, "tokens", tpm=15)
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url), log, clock=lambda: NOW) as (_, url):
            client = _client(url, key)
            await client.chat.completions.create(
                model="oa:m", messages=[{"role": "user", "content": "hi"}], max_tokens=1
            )
            await client.chat.completions.create(
                model="oa:m", messages=[{"role": "user", "content": "hi"}], max_tokens=1
            )
            with pytest.raises(openai.RateLimitError):  # 2 x 10 measured tokens: over 15
                await client.chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}], max_tokens=1
                )


async def test_an_expired_key_is_401_from_its_expiry_on(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    key = await _key(log, "brief", expires_ms=NOW + 1000)
    now = [NOW]
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url), log, clock=lambda: now[0]) as (_, url):
            await _client(url, key).chat.completions.create(
                model="oa:m", messages=[{"role": "user", "content": "hi"}]
            )
            now[0] = NOW + 1000
            with pytest.raises(openai.AuthenticationError) as expired:
                await _client(url, key).chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}]
                )
            assert "expired" in expired.value.message


@needs_postgres
async def test_a_budget_shared_by_two_gateways_on_postgresql_is_not_overspent() -> None:
    """Two gateways (two connection sets) on one database, twelve concurrent requests: every
    admission books its reservation atomically, so spend stops within one request of the budget
    beyond what the requests in flight cost over their estimates."""
    assert PG_URL is not None
    schema, url = await create_schema_url(PG_URL)
    try:
        key = await _key(url, "shared-budget", budget_usd=Decimal("0.05"))
        async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
            settings = config(up.url, an.url)
            async with (
                gateway(settings, url, clock=lambda: NOW) as (_, one),
                gateway(settings, url, clock=lambda: NOW) as (_, two),
            ):
                clients = [_client(u, key) for u in (one, two)]

                async def call(i: int) -> bool:
                    try:
                        await clients[i % 2].chat.completions.create(
                            model="oa:m", messages=[{"role": "user", "content": "hi"}], max_tokens=3
                        )
                    except openai.RateLimitError as exc:
                        assert exc.code == "BUDGET_EXCEEDED"
                        return False
                    return True

                admitted = sum(await asyncio.gather(*(call(i) for i in range(12))))
        driver = await open_keys(url)
        (record,) = await list_keys(driver)
        await driver.close()
        per_call = Decimal("0.013")
        assert record.reserved_usd == 0 and record.spent_usd == per_call * admitted
        assert admitted >= 4 and record.spent_usd <= Decimal("0.05") + 2 * per_call
    finally:
        await drop_schema(PG_URL, schema)


async def test_the_admin_key_manages_keys_over_http(tmp_path: Path) -> None:
    import aiohttp
    from serve_helpers import ADMIN

    log = f"sqlite:///{tmp_path}/gw.db"
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url), log, clock=lambda: NOW) as (_, url):
            admin = {"Authorization": f"Bearer {ADMIN}"}
            async with aiohttp.ClientSession() as http:
                body = {"name": "svc", "budget_usd": "1.5", "rpm": 10, "routes": ["oa"]}
                async with http.post(url + "/v1/keys", json=body, headers=admin) as resp:
                    assert resp.status == 201
                    made = await resp.json()
                key = made["key"]
                assert key.startswith("mwk_") and made["budget_usd"] == "1.5"
                reply = await _client(url, key).chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}]
                )
                assert reply.choices[0].message.content == "ok"
                user = {"Authorization": f"Bearer {key}"}
                async with http.get(url + "/v1/keys", headers=user) as resp:
                    assert resp.status == 403
                async with http.get(url + "/v1/keys", headers=admin) as resp:
                    listed = await resp.json()
                assert [k["name"] for k in listed["data"]] == ["svc"] and key not in str(listed)
                async with http.post(
                    url + "/v1/keys", json={"name": "admin"}, headers=admin
                ) as resp:
                    assert resp.status == 400
                async with http.delete(url + "/v1/keys/svc", headers=admin) as resp:
                    assert resp.status == 200
                async with http.delete(url + "/v1/keys/svc", headers=admin) as resp:
                    assert resp.status == 404
            with pytest.raises(openai.AuthenticationError):
                await _client(url, key).chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}]
                )


async def test_a_routes_own_rate_limit_holds_for_every_key(tmp_path: Path) -> None:
    from serve_helpers import ADMIN

    log = f"sqlite:///{tmp_path}/gw.db"
    key = await _key(log, "any")
    async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("fine")]) as an:
        settings = config(up.url, an.url, limits={"oa": {"rpm": 2}})
        async with gateway(settings, log, clock=lambda: NOW) as (_, url):
            for who in (ADMIN, key):
                await _client(url, who).chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "hi"}]
                )
            for who in (ADMIN, key):
                with pytest.raises(openai.RateLimitError) as limited:
                    await _client(url, who).chat.completions.create(
                        model="oa:m", messages=[{"role": "user", "content": "hi"}]
                    )
                assert "route 'oa'" in limited.value.message and limited.value.code == "RATE_LIMIT"
            reply = await _client(url, key).chat.completions.create(  # another route: its own
                model="an:claude-x", messages=[{"role": "user", "content": "hi"}]
            )
            assert reply.choices[0].message.content == "fine"
