"""Remaining `adapter.spec` cases (catalogue §8.1): knobs, Azure headers, describing, aborts.

Upstream aborts travel on an `AbortSignal`; here cancellation is asyncio task cancellation (the
runtime boundary documents the mapping), so #37-#41 are ported in intent to that design.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from providers_fixtures import TEXT_EVENTS, MockServer, Reply

import modelwire.adapters.providers as providers_pkg
from modelwire import LlmRuntime
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.config import resolve_profiles
from modelwire.assembler import BlockAssembler
from modelwire.errors import HarnessError, LlmError
from modelwire.policy import resolve_retry_policy
from modelwire.vocab import (
    Finish,
    GenerateOptions,
    ImageAttachmentRef,
    ImageBlock,
    ModelSource,
    StreamChunk,
    TextBlock,
    user_message,
)

RESPONSES_TEXT = [
    b'data: {"type":"response.created","response":{"id":"resp_1"}}\n\n',
    b'data: {"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}\n\n',
    b'data: {"type":"response.output_text.delta","output_index":0,"delta":"hello"}\n\n',
    b'data: {"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"hello"}]}}\n\n',
    b'data: {"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":3,"output_tokens":1}}}\n\n',
]
"""An OpenAI Responses stream producing "hello" with usage 3/1."""


def _acme(url: str, **fields: Any) -> dict[str, Any]:
    profile = {
        "api": "openai-completions",
        "base_url": url + "/v1",
        "api_key_env": "ACME_KEY",
        "models": [{"id": "m"}],
    }
    return {"providers": {"acme": {**profile, **fields}}}


def _opts(provider: str = "acme", model: str = "m", **kw: Any) -> GenerateOptions:
    kw.setdefault("messages", (user_message("hi"),))
    return GenerateOptions(provider=provider, model=model, **kw)


async def _run(adapter: ProvidersAdapter, options: GenerateOptions) -> BlockAssembler:
    asm = BlockAssembler()
    async for chunk in adapter.stream(options):
        asm.push(chunk)
    return asm


async def _fails(adapter: ProvidersAdapter, options: GenerateOptions) -> LlmError:
    with pytest.raises(LlmError) as info:
        await _run(adapter, options)
    return info.value


def _image(name: str = "img") -> ImageBlock:
    return ImageBlock(ImageAttachmentRef(name, "image/png", 3, 1, 1))


async def test_adapter_05_direct_construction_minimal_profile_forwards_no_absent_knob() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter(resolve_profiles(_acme(server.url)), env={"ACME_KEY": "k"})
        asm = await _run(adapter, _opts())
    assert asm.blocks() == [TextBlock("hello")] and asm.finish.kind == "stop"
    body = server.bodies[0]
    # nothing sizes acme's model: no output cap either (issue 30 over spec §4.2's "always
    # sent", docs/decisions.md); a sized model's cap is sent (test_providers_detect.py)
    for absent in ("temperature", "reasoning_effort", "max_tokens", "max_completion_tokens"):
        assert absent not in body
    assert "thinking" not in body and "prompt_cache_key" not in body


async def test_adapter_10_attachment_service_plugged_in_after_the_adapter() -> None:
    """Ported in intent: the image loader is looked up per request, so one set after
    construction (the attachment service mounted after the adapter) is used."""
    reads: list[str] = []

    async def store(ref: ImageAttachmentRef) -> bytes:
        reads.append(ref.attachment_id)
        return b"png"

    async with MockServer([Reply(reads=RESPONSES_TEXT)]) as server:
        adapter = ProvidersAdapter.from_config(
            {"providers": {"openai": {"base_url": server.url + "/v1"}}},
            env={"OPENAI_API_KEY": "k"},
        )
        options = _opts("openai", "gpt-4.1", messages=(user_message([TextBlock("see"), _image()]),))
        assert (await _fails(adapter, options)).code == "UNSUPPORTED_CONTENT"
        adapter.read_image = store
        asm = await _run(adapter, options)
    assert asm.finish.kind == "stop"
    assert reads == ["img"] and server.paths == ["/v1/responses"]
    image = server.bodies[0]["input"][0]["content"][1]
    assert image["type"] == "input_image" and image["image_url"].startswith(
        "data:image/png;base64,"
    )


async def test_adapter_12_azure_api_key_header() -> None:
    async with MockServer([Reply(reads=RESPONSES_TEXT)]) as server:
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "openai": {
                        "base_url": server.url + "/api/projects/openai/openai/v1",
                        "headers": {"api-key": "azure-key", "Authorization": ""},
                    }
                }
            },
            env={"OPENAI_API_KEY": "ambient-openai-key"},
        )
        asm = await _run(adapter, _opts("openai", "gpt-4.1"))
    assert asm.finish.kind == "stop"
    assert server.paths == ["/api/projects/openai/openai/v1/responses"]
    assert server.headers[0]["api-key"] == "azure-key"
    assert server.headers[0].get("authorization", "") == ""


@pytest.mark.parametrize(
    "name",
    [
        "resolve_profiles",
        "to_context",
        "restore_assistant",
        "finish_chunks",
        "map_stop_reason",
        "translate_sse",
    ],
)
def test_adapter_16_package_root_hides_internal_helpers(name: str) -> None:
    assert not hasattr(providers_pkg, name)
    assert name not in providers_pkg.__all__


async def test_adapter_17_routes_register_in_config_order_default_policy_and_dispose() -> None:
    runtime = LlmRuntime()
    adapter = ProvidersAdapter.from_config({"providers": {"openai": {}, "anthropic": {}}})
    adapter.register(runtime)
    assert [(p.id, p.name) for p in runtime.list_providers()] == [
        ("openai", "openai"),
        ("anthropic", "anthropic"),
    ]
    # seeds overrule spec §1.2.1 (5): the omitted policy is the harness default normal policy
    assert runtime.provider_retry_policy("openai") == resolve_retry_policy(None)
    assert runtime.provider_retry_policy("openai").mode == "normal"
    adapter.unregister()
    assert runtime.list_providers() == []


async def test_adapter_18_list_models_stamped_and_numeric_context_window() -> None:
    runtime = LlmRuntime()
    adapter = ProvidersAdapter.from_config({"providers": {"openai": {}}})
    adapter.register(runtime)
    listed = await runtime.list_models("openai")
    assert listed and all(m.provider == "openai" for m in listed)
    info = await runtime.resolve_model_info("openai", "gpt-4.1")
    assert info.context is not None and isinstance(info.context.context_window, int)
    assert info.context.context_window > 0


async def test_adapter_19_thinking_levels_verbatim_from_catalog() -> None:
    adapter = ProvidersAdapter.from_config({"providers": {"openai": {}, "deepseek": {}}})
    sol = await adapter.resolve_model("openai", "gpt-5.6-sol")
    assert sol.reasoning is not None
    assert [e.id for e in sol.reasoning.efforts] == ["off", "low", "medium", "high", "xhigh", "max"]
    flash = await adapter.resolve_model("deepseek", "deepseek-v4-flash")
    assert flash.reasoning is not None
    assert [e.name for e in flash.reasoning.efforts] == ["Off", "High", "Max"]
    assert (await adapter.resolve_model("openai", "gpt-4.1")).reasoning is None


async def test_adapter_20_unsupported_profile_default_described_as_none_and_refused() -> None:
    def deepseek(level: str) -> ProvidersAdapter:
        return ProvidersAdapter.from_config(
            {"providers": {"deepseek": {"base_url": "http://127.0.0.1:9", "reasoning": level}}},
            env={"DEEPSEEK_API_KEY": "k"},
        )

    medium = await deepseek("medium").resolve_model("deepseek", "deepseek-v4-flash")
    assert medium.reasoning is not None and medium.reasoning.default_effort is None
    assert [e.id for e in medium.reasoning.efforts] == ["off", "high", "max"]
    error = await _fails(deepseek("medium"), _opts("deepseek", "deepseek-v4-flash"))
    assert error.code == "UNSUPPORTED_REASONING_EFFORT"
    off = await deepseek("off").resolve_model("deepseek", "deepseek-v4-flash")
    assert off.reasoning is not None and off.reasoning.default_effort == "off"


async def test_adapter_23_route_thinking_format_deepseek_on_declared_route() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            _acme(
                server.url,
                compat={"thinking_format": "deepseek"},
                models=[{"id": "m", "reasoning_efforts": {"off": None, "high": "high"}}],
            ),
            env={"ACME_KEY": "k"},
        )
        await _run(adapter, _opts(reasoning_effort="high"))
        await _run(adapter, _opts(reasoning_effort="off"))
    high, off = server.bodies
    assert high["thinking"] == {"type": "enabled"} and high["reasoning_effort"] == "high"
    assert off["thinking"] == {"type": "disabled"} and "reasoning_effort" not in off


async def test_adapter_33_bad_retry_policy_leaves_no_provider_registered() -> None:
    runtime = LlmRuntime()
    bad = {"providers": {"openai": {"retry_policy": {"mode": "normal", "max_retries": -1}}}}
    with pytest.raises(HarnessError, match="max_retries"):
        ProvidersAdapter.from_config(bad).register(runtime)
    adapter = ProvidersAdapter.from_config(None)
    adapter.register(runtime)
    with pytest.raises(HarnessError, match="max_retries"):
        adapter.update_config(bad)
    assert runtime.list_providers() == []
    assert adapter.routes == []


async def test_adapter_34_direct_adapter_refuses_foreign_routes_and_unknown_models() -> None:
    adapter = ProvidersAdapter.from_config(_acme("http://127.0.0.1:9"), env={"ACME_KEY": "k"})
    for call in (adapter.list_models("other"), adapter.resolve_model("other", "m")):
        with pytest.raises(LlmError) as info:
            await call
        assert info.value.code == "NO_ADAPTER"
    assert (await _fails(adapter, _opts(provider="other"))).code == "NO_ADAPTER"
    with pytest.raises(LlmError) as unknown:
        await adapter.resolve_model("acme", "nope")
    assert unknown.value.code == "UNKNOWN_MODEL"


class ConversionBug(Exception):
    """An error no layer knows, raised while the request is being converted."""


async def test_adapter_37_unknown_conversion_error_propagates_as_same_object() -> None:
    bug = ConversionBug("boom")

    async def broken_store(ref: ImageAttachmentRef) -> bytes:
        raise bug

    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            _acme(server.url, models=[{"id": "m", "input": ["text", "image"]}]),
            env={"ACME_KEY": "k"},
            read_image=broken_store,
        )
        with pytest.raises(ConversionBug) as info:
            await _run(adapter, _opts(messages=(user_message([_image()]),)))
    assert info.value is bug
    assert server.paths == []


async def test_adapter_38_cancelled_conversion_becomes_aborted_with_cause() -> None:
    """Ported in intent: an adapter-side cancellation (the upstream aborted signal) while the
    consumer itself is not cancelled ends, through the runtime, in an `aborted` finish."""

    async def cancelled_store(ref: ImageAttachmentRef) -> bytes:
        raise asyncio.CancelledError("attachment read cancelled")

    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        runtime = LlmRuntime()
        adapter = ProvidersAdapter.from_config(
            _acme(server.url, models=[{"id": "m", "input": ["text", "image"]}]),
            env={"ACME_KEY": "k"},
            read_image=cancelled_store,
        )
        adapter.register(runtime)
        chunks = [c async for c in runtime.stream(_opts(messages=(user_message([_image()]),)))]
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "aborted"
    assert finish.reason.failure.code == "ABORTED"  # type: ignore[union-attr]
    assert server.paths == []


async def _cancel_while_converting(stream: Any, started: asyncio.Event) -> None:
    async def consume() -> list[StreamChunk]:
        return [c async for c in stream]

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_adapter_39_catalog_route_without_base_url_resolves_then_cancels() -> None:
    """Ported in intent: a catalog route with no base URL override resolves its catalog model
    (the request gets as far as reading the image) and a cancelled caller ends the call with no
    request sent; asyncio cancellation re-raises instead of yielding an `aborted` chunk."""
    started = asyncio.Event()

    async def slow_store(ref: ImageAttachmentRef) -> bytes:
        started.set()
        await asyncio.sleep(30)
        return b"x"

    adapter = ProvidersAdapter.from_config(
        {"providers": {"anthropic": {}}}, env={"ANTHROPIC_API_KEY": "k"}, read_image=slow_store
    )
    options = _opts("anthropic", "claude-sonnet-4-5", messages=(user_message([_image()]),))
    await _cancel_while_converting(adapter.stream(options), started)
    assert started.is_set()


async def test_adapter_40_cancelled_caller_through_runtime_sends_nothing() -> None:
    """Ported in intent: the runtime re-raises the caller's cancellation (never a chunk)."""
    started = asyncio.Event()

    async def slow_store(ref: ImageAttachmentRef) -> bytes:
        started.set()
        await asyncio.sleep(30)
        return b"x"

    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        runtime = LlmRuntime()
        adapter = ProvidersAdapter.from_config(
            _acme(server.url, models=[{"id": "m", "input": ["text", "image"]}]),
            env={"ACME_KEY": "k"},
            read_image=slow_store,
        )
        adapter.register(runtime)
        stream = runtime.stream(_opts(messages=(user_message([_image()]),)))
        await _cancel_while_converting(stream, started)
    assert server.paths == []


async def test_adapter_41_cancel_mid_stream_closes_the_response() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS, delay=0.1)]) as server:
        runtime = LlmRuntime()
        adapter = ProvidersAdapter.from_config(_acme(server.url), env={"ACME_KEY": "k"})
        adapter.register(runtime)
        first = asyncio.Event()
        seen: list[StreamChunk] = []

        async def consume() -> None:
            async for chunk in runtime.stream(_opts()):
                seen.append(chunk)
                first.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(50):
            if server.closed:
                break
            await asyncio.sleep(0.02)
    assert len(server.paths) == 1 and server.closed == 1
    assert not any(isinstance(c, Finish) for c in seen)


def _azure_reasoning_stream(done_item: dict[str, Any], final_item: dict[str, Any]) -> list[bytes]:
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "hello"}],
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**done_item}},
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "delta": "Think about hello.",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {"type": "response.output_item.added", "output_index": 1, "item": message},
        {"type": "response.output_text.delta", "output_index": 1, "delta": "hello"},
        {"type": "response.output_item.done", "output_index": 1, "item": message},
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "status": "completed",
                "usage": {"input_tokens": 10, "output_tokens": 20},
                "output": [final_item, message],
            },
        },
    ]
    return [f"data: {json.dumps(e)}\n\n".encode() for e in events]


@pytest.mark.parametrize(
    "where",
    ["in-output-item-done", "backfilled-from-response-completed"],
)
async def test_responses_encrypted_content_replayed_and_azure_backfill(where: str) -> None:
    """Spec §4.4: a reasoning item's `encrypted_content` missing on `output_item.done` is
    backfilled from the terminal response's `output` (Azure), so the next turn can replay it."""
    final = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Think about hello."}],
        "encrypted_content": "ENCRYPTED",
    }
    done = dict(final)
    if where != "in-output-item-done":
        del done["encrypted_content"]
    async with MockServer(
        [Reply(reads=_azure_reasoning_stream(done, final)), Reply(reads=RESPONSES_TEXT)]
    ) as server:
        adapter = ProvidersAdapter.from_config(
            {"providers": {"openai": {"base_url": server.url + "/openai/v1"}}},
            env={"OPENAI_API_KEY": "k"},
        )
        asm = await _run(adapter, _opts("openai", "gpt-5", reasoning_effort="medium"))
        assert asm.finish.kind == "stop"
        state = asm.replay_state
        assert state is not None and state.blocks is not None
        assert json.loads(state.blocks[0]["thinking_signature"])["encrypted_content"] == "ENCRYPTED"
        history = (user_message("hi"), asm.message(ModelSource("openai", "gpt-5", state)))
        await _run(adapter, _opts("openai", "gpt-5", messages=(*history, user_message("bye"))))
    replayed = [i for i in server.bodies[1]["input"] if i.get("type") == "reasoning"]
    assert [(i["id"], i["encrypted_content"]) for i in replayed] == [("rs_1", "ENCRYPTED")]
