"""Every recorded stream, served over loopback HTTP to a hand-declared route of its protocol
(whole and randomly re-chunked), assembles to its expected result through the runtime path."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from providers_fixtures import MockServer, Reply, check_assembled, fixture_cases, load_case

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.assembler import BlockAssembler
from modelwire.vocab import GenerateOptions, StreamChunk, user_message

APIS = ("openai-completions", "openai-responses", "anthropic-messages")
CASES = [
    pytest.param(api, *case.values, id=f"{api}-{case.id}", marks=case.marks)
    for api in APIS
    for case in fixture_cases(api)
]


def _reads(body: bytes, seed: int | None) -> list[bytes]:
    if seed is None:
        return [body]
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(body)), min(30, len(body) - 1)))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


@pytest.mark.parametrize("seed", [None, 7], ids=["whole", "rechunked"])
@pytest.mark.parametrize(("api", "sse"), CASES)
async def test_fixture_stream_over_http_assembles_to_expected(
    api: str, sse: Path, seed: int | None
) -> None:
    body, expected = load_case(sse)
    async with MockServer([Reply(reads=_reads(body, seed))]) as server:
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "fixture-gw": {
                        "api": api,
                        "base_url": server.url + "/v1",
                        "api_key_env": "FIXTURE_KEY",
                        "models": [{"id": "fixture-model"}],
                    }
                }
            },
            env={"FIXTURE_KEY": "sk-fixture"},
        )
        options = GenerateOptions(
            provider="fixture-gw", model="fixture-model", messages=(user_message("hi"),)
        )
        chunks: list[StreamChunk] = [c async for c in adapter.stream(options)]
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    check_assembled(api, asm, expected, chunks)
    suffix = {"openai-completions": "/v1/chat/completions", "openai-responses": "/v1/responses"}
    assert server.paths == [suffix.get(api, "/v1/v1/messages")]
    if api == "anthropic-messages":
        assert server.headers[0]["x-api-key"] == "sk-fixture"
    else:
        assert server.headers[0]["authorization"] == "Bearer sk-fixture"
