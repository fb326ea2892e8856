"""Spec G.5 (dynamic-config.spec, 9): configuration snapshots swapped at run time.

modelwire's equivalent of the settings source is `DeepSeekAdapter.update_config(mapping | None)`
(None detaches, falling back to the construction-time config); the credential source is the
`env` mapping, read on every call.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web
from deepseek_helpers import HELLO, Server, collect, options, sse_bytes, sse_response, start_server

from modelwire import LlmError, LlmRuntime, NormalRetryPolicy
from modelwire.adapters.deepseek import DeepSeekAdapter

ROUTE = "deepseek-official"


@pytest.fixture
async def second() -> Any:
    srv = Server()
    runner = await start_server(srv)
    yield srv
    await runner.cleanup()


async def test_g5_01_new_base_url_and_key_apply_to_next_request(
    server: Server, second: Server
) -> None:
    env = {"DEEPSEEK_API_KEY": "old-key"}
    adapter = DeepSeekAdapter(env=env, base_url=server.url)
    server.queue(sse_response(HELLO))
    await collect(adapter.stream(options()))
    adapter.update_config({"base_url": second.url, "api_key": "new-key"})
    second.queue(sse_response(HELLO))
    await collect(adapter.stream(options()))
    assert server.requests[0].headers["authorization"] == "Bearer old-key"
    assert second.requests[0].headers["authorization"] == "Bearer new-key"


async def test_g5_02_keyless_start_then_key_stored_succeeds(server: Server) -> None:
    env: dict[str, str] = {}
    adapter = DeepSeekAdapter(env=env, base_url=server.url)
    with pytest.raises(LlmError) as info:
        await collect(adapter.stream(options()))
    assert info.value.code == "MISSING_CREDENTIAL" and server.requests == []
    env["DEEPSEEK_API_KEY"] = "late-key"
    server.queue(sse_response(HELLO))
    await collect(adapter.stream(options()))
    assert server.requests[0].headers["authorization"] == "Bearer late-key"


async def test_g5_03_non_ascii_key_is_invalid_and_never_echoed(server: Server) -> None:
    key = "sk-ключ-секрет"
    adapter = DeepSeekAdapter(env={"DEEPSEEK_API_KEY": key}, base_url=server.url)
    with pytest.raises(LlmError) as info:
        await collect(adapter.stream(options()))
    assert info.value.code == "INVALID_CREDENTIAL"
    for part in (key, "ключ", "секрет", "ByteString"):
        assert part not in info.value.message
    assert server.requests == []


async def test_g5_04_catalog_change_visible_without_reregistration() -> None:
    rt = LlmRuntime()
    adapter = DeepSeekAdapter(env={})
    rt.register_adapter([ROUTE], adapter)
    adapter.update_config({"models": [{"id": "fresh"}]})
    assert [m.id for m in await rt.list_models(ROUTE)] == ["fresh"]


async def test_g5_05_lower_idle_timeout_applies_to_next_request(server: Server) -> None:
    async def slow(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await asyncio.sleep(0.15)
        await resp.write(sse_bytes(HELLO))
        await resp.write_eof()
        return resp

    server.default = slow
    adapter = DeepSeekAdapter(env={"DEEPSEEK_API_KEY": "k"}, base_url=server.url)
    await collect(adapter.stream(options()))
    adapter.update_config({"base_url": server.url, "stream_idle_timeout_ms": 50})
    with pytest.raises(LlmError) as info:
        await collect(adapter.stream(options()))
    assert info.value.code == "TIMEOUT"


async def test_g5_06_retry_policy_change_replaces_route_in_place() -> None:
    rt = LlmRuntime()
    adapter = DeepSeekAdapter(env={})
    reg = rt.register_adapter([ROUTE], adapter)
    seen: list[bool] = []
    rt.on_adapter_change(lambda: seen.append(ROUTE in [p.id for p in rt.list_providers()]))
    adapter.update_config({"retry_policy": {"mode": "normal", "max_retries": 7}})
    reg.replace([ROUTE])
    assert rt.provider_retry_policy(ROUTE) == NormalRetryPolicy(max_retries=7)
    assert seen and all(seen)


async def test_g5_07_resolver_invalid_snapshot_keeps_last_good_catalog() -> None:
    adapter = DeepSeekAdapter(env={}, models=[{"id": "good"}])
    with pytest.raises(LlmError) as info:
        adapter.update_config({"models": [{"id": "dup"}, {"id": "dup"}]})
    assert info.value.code == "INVALID_CATALOG"
    assert [m.id for m in await adapter.list_models("r")] == ["good"]
    adapter.update_config({"models": [{"id": "later"}]})
    assert [m.id for m in await adapter.list_models("r")] == ["later"]


async def test_g5_08_rejected_snapshot_contributes_nothing(server: Server, second: Server) -> None:
    adapter = DeepSeekAdapter(env={}, base_url=server.url, api_key="old-key")
    with pytest.raises(LlmError):
        adapter.update_config(
            {"base_url": second.url, "api_key": "new-key", "models": [{"id": ""}]}
        )
    server.queue(sse_response(HELLO))
    await collect(adapter.stream(options()))
    assert server.requests[0].headers["authorization"] == "Bearer old-key"
    assert second.requests == []


async def test_g5_09_detaching_settings_falls_back_to_entry_config(
    server: Server, second: Server
) -> None:
    env = {"DEEPSEEK_API_KEY": "stored-key"}
    adapter = DeepSeekAdapter(env=env, base_url=server.url)
    adapter.update_config({"base_url": second.url})
    adapter.update_config(None)
    server.queue(sse_response(HELLO))
    await collect(adapter.stream(options()))
    assert server.requests[0].headers["authorization"] == "Bearer stored-key"
    assert second.requests == []


async def test_a36_in_flight_stream_keeps_its_snapshot(server: Server, second: Server) -> None:
    adapter = DeepSeekAdapter(env={}, base_url=server.url, api_key="k1")
    server.queue(sse_response(HELLO, pieces=[10] * 40, delay=0.005))
    stream = adapter.stream(options())
    first = await stream.__anext__()
    adapter.update_config({"base_url": second.url, "api_key": "k2"})
    rest = [c async for c in stream]
    assert first.type == "block-start" and rest[-1].type == "finish"
    assert len(server.requests) == 1 and second.requests == []
