"""Remaining `discovery.spec`, `dynamic-config.spec`, `loader-composition.spec` and
`sdk-options.spec` cases (catalogue §8.6-§8.9)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from providers_fixtures import TEXT_EVENTS, MockServer, Reply, sse

from modelwire import LlmRuntime
from modelwire.adapters.providers import ProvidersAdapter, load_config_file
from modelwire.adapters.providers.config import resolve_profiles
from modelwire.assembler import BlockAssembler
from modelwire.errors import LlmError
from modelwire.runtime.adapter import LlmAdapter
from modelwire.vocab import (
    Finish,
    GenerateOptions,
    Message,
    ModelDiscoveryRequest,
    ModelInfo,
    ModelSource,
    ProviderInfo,
    ReplayEnvelope,
    ResolvedModelInfo,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    user_message,
)


def _declared(route: str, url: str = "http://h", **fields: Any) -> dict[str, Any]:
    profile = {"api": "openai-completions", "base_url": url, "models": [{"id": "m"}]}
    return {route: {**profile, **fields}}


def _opts(provider: str, model: str = "m", *history: Message) -> GenerateOptions:
    return GenerateOptions(
        provider=provider, model=model, messages=history or (user_message("hi"),)
    )


async def _collect(stream: Any) -> list[StreamChunk]:
    return [c async for c in stream]


# ---- §8.6 discovery.spec ----------------------------------------------------------------------


async def test_discovery_172_duplicate_ids_listed_once() -> None:
    body = {"data": [{"id": "a", "display_name": "First"}, {"id": "a"}, {"id": "b"}]}
    async with MockServer([Reply(body=json.dumps(body))]) as server:
        rows = await ProvidersAdapter.from_config(None, env={}).discover_models(
            ModelDiscoveryRequest(base_url=server.url)
        )
    assert [(r.id, r.name) for r in rows] == [("a", "First"), ("b", None)]


async def test_discovery_178_cancellation_during_the_body_read() -> None:
    """Ported in intent: cancelling the caller's task (upstream: aborting its signal) while the
    listing body is still arriving ends the call with `CancelledError` and closes the response."""
    reads = [b'{"data":[', b'{"id":"a"}', b"]}"]
    async with MockServer([Reply(reads=reads, delay=0.3)]) as server:
        adapter = ProvidersAdapter.from_config(None, env={})
        task = asyncio.create_task(
            adapter.discover_models(ModelDiscoveryRequest(base_url=server.url))
        )
        for _ in range(100):
            if server.paths:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(50):
            if server.closed:
                break
            await asyncio.sleep(0.02)
    assert server.paths == ["/models"] and server.closed == 1


async def test_discovery_179_cancelled_before_the_request_sends_nothing() -> None:
    """Ported in intent: a caller cancelled before discovery starts makes no request."""
    async with MockServer([Reply(body='{"data":[]}')]) as server:
        adapter = ProvidersAdapter.from_config(None, env={})
        task = asyncio.create_task(
            adapter.discover_models(ModelDiscoveryRequest(base_url=server.url))
        )
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert server.paths == []


async def test_discovery_180_empty_base_url_without_provider_is_invalid() -> None:
    runtime = LlmRuntime()
    ProvidersAdapter.from_config(None, env={}).register(runtime)
    with pytest.raises(LlmError) as info:
        await runtime.discover_models("providers", ModelDiscoveryRequest(base_url=""))
    assert info.value.code == "INVALID_DISCOVERY"


async def test_discovery_181_unregistering_withdraws_discovery() -> None:
    runtime = LlmRuntime()
    adapter = ProvidersAdapter.from_config(None, env={})
    adapter.register(runtime)
    assert await runtime.discover_models("providers", ModelDiscoveryRequest(provider="deepseek"))
    adapter.unregister()
    with pytest.raises(LlmError) as info:
        await runtime.discover_models("providers", ModelDiscoveryRequest(provider="deepseek"))
    assert info.value.code == "NO_DISCOVERY"


# ---- §8.7 dynamic-config.spec -----------------------------------------------------------------


async def test_dynamic_185_dormant_mount_settings_write_then_back_to_dormant() -> None:
    """The credentials store is the adapter's `env` mapping, read per request."""
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        runtime = LlmRuntime()
        adapter = ProvidersAdapter.from_config(None, env={"DEEPSEEK_API_KEY": "stored-key"})
        assert adapter.register(runtime) is None
        directory = {e.provider: e for e in runtime.list_configurable_providers()}
        assert directory["openai"].declared is False and len(directory) > 20
        adapter.update_config({"providers": {"deepseek": {"base_url": server.url}}})
        chunks = await _collect(runtime.stream(_opts("deepseek", "deepseek-v4-flash")))
        assert chunks[-1].reason.kind == "stop"  # type: ignore[union-attr]
        adapter.update_config({"providers": {}})
    assert server.headers[0]["authorization"] == "Bearer stored-key"
    assert runtime.list_providers() == []
    assert len(runtime.list_configurable_providers()) == len(directory)


class _Composition(LlmAdapter):
    """A route composed in code by another adapter family; answers "composed"."""

    async def stream(self, options: GenerateOptions) -> Any:
        from modelwire.vocab import BlockEnd, BlockStart, Stop, TextDelta

        for chunk in (
            BlockStart(0, "text"),
            TextDelta(0, "composed"),
            BlockEnd(0, TextBlock("composed")),
            Finish(Stop()),
        ):
            yield chunk

    def provider_info(self, provider: str) -> ProviderInfo:
        return ProviderInfo(provider, provider)

    async def list_models(self, provider: str) -> list[ModelInfo]:
        return [ModelInfo(provider=provider, id="m", name="m")]

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        return ResolvedModelInfo(provider=provider, id=model, name=model)


async def test_dynamic_186_settings_route_beside_composition_route_dropped_on_reset() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        runtime = LlmRuntime()
        runtime.register_adapter(["composed"], _Composition())
        adapter = ProvidersAdapter.from_config(None, env={"K": "k"})
        adapter.register(runtime)
        adapter.update_config({"providers": _declared("gw", server.url, api_key_env="K")})
        assert [p.id for p in runtime.list_providers()] == ["composed", "gw"]
        assert (await _collect(runtime.stream(_opts("gw"))))[-1].reason.kind == "stop"  # type: ignore[union-attr]
        adapter.update_config(None)
        dropped = (await _collect(runtime.stream(_opts("gw"))))[-1]
    assert isinstance(dropped, Finish) and dropped.reason.failure.code == "NO_ADAPTER"  # type: ignore[union-attr]
    assert [p.id for p in runtime.list_providers()] == ["composed"]
    composed = await _collect(runtime.stream(_opts("composed")))
    assert composed[-1].reason.kind == "stop"  # type: ignore[union-attr]


async def test_dynamic_187_rotated_credential_used_on_the_next_request() -> None:
    store = {"GW_KEY": "first-key"}
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            {"providers": _declared("gw", server.url, api_key_env="GW_KEY")}, env=store
        )
        await _collect(adapter.stream(_opts("gw")))
        store["GW_KEY"] = "second-key"
        await _collect(adapter.stream(_opts("gw")))
    assert [h["authorization"] for h in server.headers] == ["Bearer first-key", "Bearer second-key"]


async def test_dynamic_190_route_collision_refuses_the_swap_whole_then_revert_applies() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        runtime = LlmRuntime()
        other = _Composition()
        runtime.register_adapter(["composed"], other)
        adapter = ProvidersAdapter.from_config(
            {"providers": _declared("gw", server.url, api_key_env="K")}, env={"K": "k"}
        )
        adapter.register(runtime)
        directory = runtime.list_configurable_providers()
        colliding = {**_declared("gw", server.url, api_key_env="K"), **_declared("composed")}
        with pytest.raises(LlmError) as info:
            adapter.update_config({"providers": colliding})
        assert info.value.code == "DUPLICATE_ADAPTER"
        assert [p.id for p in runtime.list_providers()] == ["composed", "gw"]
        assert runtime.list_configurable_providers() == directory
        assert adapter.routes == ["gw"]
        assert (await _collect(runtime.stream(_opts("gw"))))[-1].reason.kind == "stop"  # type: ignore[union-attr]
        composed = await _collect(runtime.stream(_opts("composed")))
        assert composed[-1].reason.kind == "stop"  # type: ignore[union-attr]
        assert adapter.update_config({"providers": _declared("gw2", server.url)}) is True
        assert [p.id for p in runtime.list_providers()] == ["composed", "gw2"]


# ---- §8.8 loader-composition.spec -------------------------------------------------------------


async def test_loader_192_file_config_boots_dormant_then_a_written_file_registers(
    tmp_path: Path,
) -> None:
    """Ported in intent: there is no cordis loader or file watcher; the host re-reads the
    settings file and hands it to `update_config`, which registers the new route."""
    settings = tmp_path / "settings.yaml"
    settings.write_text("providers: {}\n")
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        runtime = LlmRuntime()
        adapter = ProvidersAdapter.from_file(settings, env={"DEEPSEEK_API_KEY": "file-key"})
        adapter.register(runtime)
        assert runtime.list_providers() == []
        settings.write_text(f"providers:\n  deepseek:\n    base_url: {server.url}\n")
        assert adapter.update_config(load_config_file(settings)) is True
        chunks = await _collect(runtime.stream(_opts("deepseek", "deepseek-v4-flash")))
    assert chunks[-1].reason.kind == "stop"  # type: ignore[union-attr]
    assert server.headers[0]["authorization"] == "Bearer file-key"


TRUNCATED = sse(
    {"id": "c1", "choices": [{"index": 0, "delta": {"content": "Let me look"}}]},
    {
        "id": "c1",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "function": {"name": "lookup", "arguments": '{"q":"oc'},
                        }
                    ]
                },
                "finish_reason": "length",
            }
        ],
    },
    {"id": "c1", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 9}},
    "[DONE]",
)


async def test_loader_193_max_tokens_truncation_prunes_the_tool_call_and_replays_text() -> None:
    async with MockServer([Reply(reads=TRUNCATED), Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            {"providers": _declared("gw", server.url, api_key_env="K")}, env={"K": "k"}
        )
        asm = BlockAssembler()
        async for chunk in adapter.stream(_opts("gw")):
            asm.push(chunk)
        assert asm.finish.kind == "max-tokens"
        assert asm.blocks() == [TextBlock("Let me look")]
        state = asm.replay_state
        assert state is not None and state.response["stop_reason"] == "length"
        assert [dict(b) for b in state.blocks or ()] == [{"type": "text"}]
        assistant = asm.message(ModelSource("gw", "m", state))
        follow = await _collect(
            adapter.stream(_opts("gw", "m", user_message("hi"), assistant, user_message("go on")))
        )
    assert follow[-1].reason.kind == "stop"  # type: ignore[union-attr]
    replayed = server.bodies[1]["messages"][1]
    assert replayed["role"] == "assistant" and replayed["content"] == "Let me look"
    assert "tool_calls" not in replayed


async def test_loader_194_legacy_v1_state_degrades_silently_and_follow_up_succeeds() -> None:
    legacy = ReplayEnvelope(
        {"kind": "pi-ai", "version": 1, "api": "openai-completions", "blocks": [{"type": "text"}]}
    )
    assistant = Message(
        "a1",
        "assistant",
        (TextBlock("earlier answer"), ToolCallBlock("call_9", "f", "{}")),
        ModelSource("gw", "m", legacy),
    )
    degraded: list[tuple[str, str, str]] = []
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            {"providers": _declared("gw", server.url, api_key_env="K")},
            env={"K": "k"},
            on_replay_degrade=lambda *a: degraded.append(a),
        )
        history = (user_message("hi"), assistant, user_message("again"))
        chunks = await _collect(adapter.stream(_opts("gw", "m", *history)))
    assert chunks[-1].reason.kind == "stop"  # type: ignore[union-attr]
    assert [d[:2] for d in degraded] == [("gw", "m")]
    sent = server.bodies[0]["messages"][1]
    assert sent["role"] == "assistant" and sent["content"] == "earlier answer"


# ---- §8.9 sdk-options.spec --------------------------------------------------------------------


async def test_sdk_195_one_request_with_the_resolved_key_and_failure_message() -> None:
    """Ported in intent: no SDK, so "maxRetries 0" is one HTTP request per call; a failing call
    surfaces, through the runtime, as an error finish carrying the provider's message."""
    failing = Reply(status=503, body='{"error":{"message":"upstream exploded"}}')
    async with MockServer([failing]) as server:
        runtime = LlmRuntime()
        adapter = ProvidersAdapter.from_config(
            {"providers": _declared("gw", server.url, api_key_env="K")}, env={"K": "resolved"}
        )
        adapter.register(runtime)
        chunks = await _collect(runtime.stream(_opts("gw")))
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    assert "upstream exploded" in finish.reason.failure.message  # type: ignore[union-attr]
    assert len(server.paths) == 1
    assert server.headers[0]["authorization"] == "Bearer resolved"


def test_sdk_196_declared_route_descriptor_carries_configured_facts() -> None:
    profile = {
        "api": "openai-responses",
        "base_url": "http://gateway.internal/v1",
        "models": [{"id": "big", "context_window": 123456, "max_tokens": 7890}],
    }
    model = resolve_profiles({"providers": {"gw": profile}})["gw"].models["big"]
    assert (model.id, model.provider, model.api, model.base_url) == (
        "big",
        "gw",
        "openai-responses",
        "http://gateway.internal/v1",
    )
    assert (model.context_window, model.max_tokens, model.configured_max_tokens) == (
        123456,
        7890,
        7890,
    )
