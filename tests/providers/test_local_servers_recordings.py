"""Local OpenAI-compatible servers (Ollama ``/v1``, llama.cpp, vLLM): every recording assembles
to its expected result through the existing `CompletionsTranslator` (whole, re-chunked, and
over a real loopback server to a keyless ``auth = "none"`` route that sends no Authorization
header); the per-server compat sends what each server was recorded receiving; a llama.cpp
reasoning tool turn is replayed with its ``reasoning_content``."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from compat_fixtures import (
    Loopback,
    check_recording,
    folder,
    load,
    request_body,
    split,
    stream_cases,
    translate,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.protocols.registry import protocol
from modelwire.assembler import BlockAssembler
from modelwire.vocab import (
    GenerateOptions,
    Message,
    ModelSource,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    user_message,
)

API = "openai-completions"
STREAMS = stream_cases("ollama-local")
LOCAL = folder("ollama-local")
COMPAT: dict[str, dict[str, Any]] = {
    # what each server was recorded receiving (MANIFEST notes and the .request.json bodies):
    # Ollama and vLLM read `max_tokens`; none of them knows `store` or the `developer` role.
    # Reasoning comes back as `delta.reasoning` (Ollama) or `delta.reasoning_content`
    # (llama.cpp, vLLM); the translator reads either without a switch.
    "ollama": {
        "max_tokens_field": "max_tokens",
        "supports_store": False,
        "supports_developer_role": False,
    },
    "llamacpp": {"supports_store": False, "supports_developer_role": False},
    "vllm": {
        "max_tokens_field": "max_tokens",
        "supports_store": False,
        "supports_developer_role": False,
    },
}


def _server(sse: Path) -> str:
    return next(name for name in COMPAT if name in sse.name)


def _check(reads: list[bytes], expected: dict[str, Any]) -> BlockAssembler:
    asm, chunks = translate(protocol(API), reads)
    check_recording(API, "chat", asm, expected, chunks)
    return asm


def test_local_folder_holds_every_server_recording() -> None:
    assert len(STREAMS) == 7
    assert {_server(p.values[0]) for p in STREAMS} == set(COMPAT)


@pytest.mark.parametrize("sse", STREAMS)
def test_local_recording_assembles_to_expected_whole(sse: Path) -> None:
    body, expected = load(sse)
    asm = _check([body], expected)
    fields = expected["extras"].get("reasoning_field") or []
    if expected["reasoning"]:  # the field it streamed in is the replay signature
        state = asm.replay_state
        assert state is not None
        entries = [e for e in state.blocks or () if e["type"] == "reasoning"]
        assert [e["thinking_signature"] for e in entries] == fields


@pytest.mark.parametrize("sse", STREAMS)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_local_recording_assembles_to_expected_rechunked(sse: Path, data: st.DataObject) -> None:
    body, expected = load(sse)
    cuts = data.draw(st.sets(st.integers(1, len(body) - 1), max_size=40))
    _check(split(body, cuts), expected)


def test_local_complete_but_empty_ollama_answer_is_empty_response_at_every_cut() -> None:
    body, expected = load(LOCAL / "pinned-ollama-qwen25-3b-complete-empty.sse")
    for cut in range(1, len(body)):
        asm = _check([body[:cut], body[cut:]], expected)
        assert asm.finish.failure.code == "EMPTY_RESPONSE"  # type: ignore[union-attr]


def _keyless(url: str, model: str, server: str, **entry: Any) -> ProvidersAdapter:
    profile = {
        "api": API,
        "base_url": url + "/v1",
        "auth": "none",
        "compat": COMPAT[server],
        "models": [{"id": model, **entry}],
    }
    return ProvidersAdapter.from_config({"providers": {"local": profile}}, env={})


async def _stream(adapter: ProvidersAdapter, options: GenerateOptions) -> list[StreamChunk]:
    return [c async for c in adapter.stream(options)]


def _assemble(chunks: list[StreamChunk]) -> BlockAssembler:
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    return asm


async def test_local_keyless_route_streams_an_ollama_recording_without_authorization() -> None:
    body, expected = load(LOCAL / "course-ollama-nemotron3-nano-reasoning.sse")
    async with Loopback(reads=[body]) as server:
        adapter = _keyless(server.url, "qwen2.5", "ollama")
        options = GenerateOptions(provider="local", model="qwen2.5", messages=(user_message("hi"),))
        chunks = await _stream(adapter, options)
    check_recording(API, "chat", _assemble(chunks), expected, chunks)
    (seen,) = server.seen
    assert seen.path_qs == "/v1/chat/completions"
    assert "authorization" not in seen.headers
    assert not any("key" in name for name in seen.headers)


@pytest.mark.parametrize("seed", [None, 3], ids=["whole", "rechunked"])
@pytest.mark.parametrize("sse", STREAMS)
async def test_local_recording_over_http_sends_what_the_server_was_recorded_receiving(
    sse: Path, seed: int | None
) -> None:
    body, expected = load(sse)
    recorded = request_body(sse) or {
        "model": "qwen2.5:3b",
        "messages": [{"role": "user", "content": "hi"}],
    }
    system = next((m["content"] for m in recorded["messages"] if m["role"] == "system"), None)
    user = next(m["content"] for m in recorded["messages"] if m["role"] == "user")
    cap = recorded.get("max_tokens") or recorded.get("max_completion_tokens")
    reads = (
        [body] if seed is None else split(body, random.Random(seed).sample(range(1, len(body)), 30))
    )
    async with Loopback(reads=reads) as server:
        adapter = _keyless(server.url, recorded["model"], _server(sse))
        options = GenerateOptions(
            provider="local",
            model=recorded["model"],
            messages=(user_message(user),),
            system=system,
            max_tokens=cap,
            temperature=recorded.get("temperature"),
        )
        chunks = await _stream(adapter, options)
    check_recording(API, "chat", _assemble(chunks), expected, chunks)
    sent = server.seen[0].body
    assert "authorization" not in server.seen[0].headers
    for key in ("model", "stream", "max_tokens", "max_completion_tokens", "temperature"):
        if key in recorded:
            assert sent[key] == recorded[key], key
    if "tools" not in recorded:  # the tool turns' recorded history is checked below
        assert sent["messages"] == recorded["messages"]
    assert "store" not in sent


async def test_local_llamacpp_reasoning_tool_turn_is_replayed_with_reasoning_content() -> None:
    """Stream the llama.cpp tool call, then send its result: the next request replays the
    reasoning in `reasoning_content` beside the call, as the recorded follow-up request did."""
    first, _ = load(LOCAL / "fantasy-llamacpp-gptoss-thinking-tool.sse")
    second, expected = load(LOCAL / "fantasy-llamacpp-gptoss-thinking-after-tool.sse")
    recorded = request_body(LOCAL / "fantasy-llamacpp-gptoss-thinking-after-tool.sse")
    assert recorded is not None
    spec = recorded["tools"][0]["function"]
    tool = ToolSchema(spec["name"], spec["description"], spec["parameters"])
    model = recorded["model"]
    async with Loopback(script=[[first], [second]]) as server:
        adapter = _keyless(server.url, model, "llamacpp", reasoning_efforts={"high": "high"})

        def options(*messages: Message) -> GenerateOptions:
            return GenerateOptions(
                provider="local",
                model=model,
                messages=messages,
                system="You are a helpful assistant",
                tools=(tool,),
                reasoning_effort="high",
                tool_choice="auto",
            )

        question = user_message(recorded["messages"][1]["content"])
        asm = _assemble(await _stream(adapter, options(question)))
        turn = asm.message(ModelSource("local", model, replay_state=asm.replay_state))
        (call,) = [b for b in turn.content if isinstance(b, ToolCallBlock)]
        result = user_message([ToolResultBlock(call.id, (TextBlock("40 C"),))])
        chunks = await _stream(adapter, options(question, turn, result))
    check_recording(API, "chat", _assemble(chunks), expected, chunks)
    sent = server.seen[1].body
    want_assistant, want_tool = recorded["messages"][2], recorded["messages"][3]
    assistant, tool_message = sent["messages"][2], sent["messages"][3]
    assert assistant["reasoning_content"] == want_assistant["reasoning_content"]
    assert assistant["tool_calls"] == want_assistant["tool_calls"]
    assert tool_message["tool_call_id"] == want_tool["tool_call_id"]
    assert tool_message["content"] == want_tool["content"]
    for key in ("reasoning_effort", "tool_choice", "stream_options"):
        assert sent[key] == recorded[key]
