"""`mistral-conversations` end to end: every recorded Mistral stream, served by a real loopback
server to a hand-declared route (whole and re-chunked), assembles to its expected result through
`ProvidersAdapter`; the server saw one Bearer-authenticated POST to ``/v1/chat/completions`` with
the body we build; recorded HTTP errors reach the caller as their category's code."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from compat_fixtures import (
    Loopback,
    check_recording,
    error_cases,
    folder,
    load,
    split,
    stream_cases,
)

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.protocols.mistral_errors import refine_mistral_http_error
from modelwire.assembler import BlockAssembler
from modelwire.errors import LlmError
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

API = "mistral-conversations"
TEXT = folder("mistral") / "vercel-mistral-small-text.sse"
KEY = "k-mistral-123"
CATEGORY_CODES = {
    "quota": "QUOTA",
    "invalid_request": "INVALID_REQUEST",
    "rate_limit": "RATE_LIMIT",
}


def _adapter(url: str, **route: Any) -> ProvidersAdapter:
    profile = {"api": API, "base_url": url, "api_key_env": "MISTRAL_KEY", **route}
    profile.setdefault("models", [{"id": "mistral-small-latest"}])
    return ProvidersAdapter.from_config(
        {"providers": {"mistral-gw": profile}}, env={"MISTRAL_KEY": KEY}
    )


def _options(*messages: Message, model: str = "mistral-small-latest", **kw: Any) -> GenerateOptions:
    return GenerateOptions(
        provider="mistral-gw", model=model, messages=messages or (user_message("hi"),), **kw
    )


async def _stream(adapter: ProvidersAdapter, options: GenerateOptions) -> list[StreamChunk]:
    return [c async for c in adapter.stream(options)]


def _reads(body: bytes, seed: int | None) -> list[bytes]:
    if seed is None:
        return [body]
    rng = random.Random(seed)
    return split(body, rng.sample(range(1, len(body)), min(30, len(body) - 1)))


@pytest.mark.parametrize("seed", [None, 11], ids=["whole", "rechunked"])
@pytest.mark.parametrize("sse", stream_cases("mistral"))
async def test_mistral_recording_over_http_assembles_to_expected(
    sse: Path, seed: int | None
) -> None:
    body, expected = load(sse)
    async with Loopback(reads=_reads(body, seed)) as server:
        chunks = await _stream(_adapter(server.url), _options())
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    check_recording(API, "mistral", asm, expected, chunks)
    (seen,) = server.seen
    assert seen.path_qs == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert seen.headers["accept"] == "text/event-stream"
    assert seen.body["model"] == "mistral-small-latest"
    assert seen.body["stream"] is True
    assert seen.body["messages"] == [{"role": "user", "content": "hi"}]


async def test_mistral_tool_turn_round_trip_sends_back_the_same_nine_character_id() -> None:
    """A Mistral tool call streamed by one request is replayed by the next with its own id,
    and the result answers that id."""
    body, _ = load(folder("mistral") / "vercel-mistral-small-tool-call.sse")
    tool = ToolSchema(
        "weather", "d", {"type": "object", "properties": {"location": {"type": "string"}}}
    )
    async with Loopback(reads=[body]) as server:
        adapter = _adapter(server.url)
        chunks = await _stream(adapter, _options(tools=(tool,)))
        asm = BlockAssembler()
        for chunk in chunks:
            asm.push(chunk)
        source = ModelSource("mistral-gw", "mistral-small-latest", replay_state=asm.replay_state)
        turn = asm.message(source)
        (call,) = [b for b in turn.content if isinstance(b, ToolCallBlock)]
        result = user_message([ToolResultBlock(call.id, (TextBlock("sunny"),))])
        await _stream(adapter, _options(user_message("hi"), turn, result, tools=(tool,)))
    second = server.seen[1].body["messages"]
    assert second[1]["tool_calls"][0]["id"] == call.id == "gSIMJiOkT"
    assert second[2] == {
        "role": "tool",
        "tool_call_id": "gSIMJiOkT",
        "name": call.name,
        "content": [{"type": "text", "text": "sunny"}],
    }


async def test_mistral_reasoning_effort_sends_prompt_mode_for_magistral_routes() -> None:
    body, _ = load(TEXT)
    async with Loopback(reads=[body]) as server:
        adapter = _adapter(
            server.url,
            models=[{"id": "magistral-medium-latest", "reasoning_efforts": {"high": "high"}}],
        )
        await _stream(adapter, _options(model="magistral-medium-latest", reasoning_effort="high"))
    assert server.seen[0].body["prompt_mode"] == "reasoning"


async def test_mistral_session_id_reaches_the_server_as_x_affinity() -> None:
    body, _ = load(TEXT)
    async with Loopback(reads=[body]) as server:
        await _stream(_adapter(server.url), _options(session_id="sess-9"))
    seen = server.seen[0]
    assert seen.headers["x-affinity"] == "sess-9"
    assert seen.body["prompt_cache_key"] == "sess-9"


@pytest.mark.parametrize("path", error_cases("mistral"))
async def test_mistral_recorded_http_error_reaches_the_caller_as_its_category(path: Path) -> None:
    http = json.loads(path.read_text())
    expected = json.loads(path.with_name(path.name.replace(".http", ".expected")).read_text())
    headers = {k: v for k, v in http["headers"].items() if k.lower() != "content-type"}
    async with Loopback(status=http["status"], body=http["body"], headers=headers) as server:
        with pytest.raises(LlmError) as info:
            await _stream(_adapter(server.url), _options())
    assert len(server.seen) == 1  # no library retries
    error = info.value
    assert error.status == http["status"]
    assert KEY not in error.message
    # the protocol's refinement of the shared status mapping (idempotent: the adapter may
    # already have applied it)
    refined = refine_mistral_http_error(error, http["body"], http["headers"], (KEY,))
    assert refined.code == CATEGORY_CODES[expected["category"]]
