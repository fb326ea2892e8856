"""POST /v1/embeddings through the real `openai` SDK against a scripted OpenAI-shaped upstream:
float and base64 answers, `dimensions`, usage, a key's budget settled with the measured cost,
each request a turn of its session, bad input named."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from embed_upstream import Upstream, tokens_of, vector_of
from serve_helpers import ADMIN, gateway

from modelwire.serve.handlers import GATEWAY
from modelwire.serve.keystore import create_key, list_keys, open_keys

NOW = 1_800_000_000_000
PRICE = 100  # USD per 1M input tokens of route `emb`'s model


def _config(url: str) -> dict[str, Any]:
    return {
        "providers": {
            "emb": {
                "api": "openai-completions",
                "base_url": url + "/v1",
                "api_key_env": "OA_KEY",
                "models": [{"id": "vec-1", "cost": {"input": PRICE, "output": 0}}],
            },
        }
    }


def _client(url: str, key: str = ADMIN) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key=key, max_retries=0)


async def test_embeddings_float_and_base64_through_the_openai_sdk() -> None:
    texts = ["alpha", "beta gamma", "δέλτα"]
    async with Upstream() as up, gateway(_config(up.url)) as (app, url):
        client = _client(url)
        floats = await client.embeddings.create(
            model="emb:vec-1", input=texts, encoding_format="float"
        )
        packed = await client.embeddings.create(model="emb:vec-1", input=texts)  # SDK: base64
        short = await client.embeddings.create(model="emb:vec-1", input="one", dimensions=4)
        sessions = await app[GATEWAY].log.sessions()
        events = [await app[GATEWAY].log.read(s.session_id) for s in sessions]
    for reply in (floats, packed):
        assert reply.object == "list" and reply.model == "emb:vec-1"
        assert [d.index for d in reply.data] == [0, 1, 2]
        assert [d.embedding for d in reply.data] == [vector_of(t) for t in texts]
        used = sum(tokens_of(t) for t in texts)
        assert reply.usage.prompt_tokens == used and reply.usage.total_tokens == used
    assert short.data[0].embedding == vector_of("one", 4)
    wire = [body for _, _, _, body in up.requests]
    assert [b["model"] for b in wire] == ["vec-1"] * 3
    assert wire[2]["dimensions"] == 4 and wire[2]["input"] == ["one"]
    assert len(sessions) == 3
    types = [e.type for e in events[0]]
    assert types == [
        "turn/start",
        "gateway/request",
        "step/start",
        "request/context",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    records = [next(e.data for e in es if e.type == "gateway/request") for es in events]
    assert {r.endpoint for r in records} == {"/v1/embeddings"}  # type: ignore[attr-defined]
    assert sorted(r.inputs for r in records) == [1, 3, 3]  # type: ignore[attr-defined]
    assert "alpha" not in json.dumps([str(e.data) for es in events for e in es])


async def test_a_budgeted_key_is_charged_the_measured_cost(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    driver = await open_keys(log)
    try:
        key = await create_key(driver, "vec", NOW, budget_usd=Decimal(1), rpm=10)
    finally:
        await driver.close()
    async with Upstream() as up, gateway(_config(up.url), log, clock=lambda: NOW) as (app, url):
        reply = await _client(url, key).embeddings.create(model="emb:vec-1", input=["x" * 400])
        assert reply.usage.prompt_tokens == 100
        record = next(r for r in await list_keys(app[GATEWAY].driver) if r.name == "vec")  # type: ignore[arg-type]
        async with aiohttp.ClientSession() as http:
            metrics = await (await http.get(url + "/metrics")).text()
    assert record.spent_usd == Decimal(100 * PRICE) / 1_000_000
    assert record.reserved_usd == 0
    assert 'endpoint="/v1/embeddings"' in metrics


async def test_a_key_over_its_rate_limit_is_refused_before_the_upstream(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    driver = await open_keys(log)
    try:
        key = await create_key(driver, "slow", NOW, rpm=1)
    finally:
        await driver.close()
    async with Upstream() as up, gateway(_config(up.url), log, clock=lambda: NOW) as (_, url):
        client = _client(url, key)
        await client.embeddings.create(model="emb:vec-1", input="a")
        with pytest.raises(openai.RateLimitError) as refused:
            await client.embeddings.create(model="emb:vec-1", input="b")
    assert refused.value.code == "RATE_LIMIT" and up.count == 1


@pytest.mark.parametrize(
    ("body", "status", "code", "needle"),
    [
        ({"model": "emb:vec-1"}, 400, "INVALID_REQUEST", "input: is required"),
        ({"model": "emb:vec-1", "input": [1, 2]}, 400, "UNSUPPORTED_CONTENT", "token ids"),
        ({"model": "emb:vec-1", "input": ["a", 5]}, 400, "INVALID_REQUEST", "input[1]"),
        ({"model": "emb:vec-1", "input": []}, 400, "INVALID_REQUEST", "input:"),
        (
            {"model": "emb:vec-1", "input": "a", "dimensions": 0},
            400,
            "INVALID_REQUEST",
            "dimensions",
        ),
        (
            {"model": "emb:vec-1", "input": "a", "encoding_format": "int8"},
            400,
            "INVALID_REQUEST",
            "encoding_format",
        ),
        ({"model": "ghost:vec-1", "input": "a"}, 404, "NO_ADAPTER", "no route 'ghost'"),
    ],
)
async def test_bad_embeddings_input_is_named(
    body: dict[str, Any], status: int, code: str, needle: str
) -> None:
    async with Upstream() as up, gateway(_config(up.url)) as (_, url):
        headers = {"Authorization": f"Bearer {ADMIN}"}
        async with (
            aiohttp.ClientSession() as http,
            http.post(url + "/v1/embeddings", json=body, headers=headers) as resp,
        ):
            payload: Any = await resp.json()
    assert resp.status == status
    assert payload["error"]["code"] == code and needle in payload["error"]["message"]
    assert up.count == 0


async def test_an_upstream_failure_is_the_clients_error_and_the_turn_errored() -> None:
    async with Upstream() as up, gateway(_config(up.url)) as (app, url):
        up.fail = [(400, '{"error": {"message": "bad model", "type": "invalid"}}', {})]
        with pytest.raises(openai.BadRequestError):
            await _client(url).embeddings.create(model="emb:vec-1", input="a")
        log = app[GATEWAY].log
        events = await log.read((await log.sessions())[0].session_id)
    end = events[-1]
    assert end.type == "turn/end" and "errored" in str(end.data).lower()
    assert "sk-upstream" not in str(end.data)


async def test_a_named_session_gets_its_embeddings_as_next_turns() -> None:
    async with Upstream() as up, gateway(_config(up.url)) as (app, url):
        client = _client(url)
        headers = {"x-modelwire-session": "vec-session-1"}
        await asyncio.gather(
            *(
                client.embeddings.create(model="emb:vec-1", input="t", extra_headers=headers)
                for _ in range(3)
            )
        )
        events = await app[GATEWAY].log.read("vec-session-1")
    turns = [e.data.turn for e in events if e.type == "turn/start"]  # type: ignore[attr-defined]
    assert turns == [1, 2, 3]
