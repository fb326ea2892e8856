"""`rt.embed` on OpenAI and OpenAI-compatible routes against a scripted loopback server that
answers as the OpenAI API reference's "Create embeddings" documents (``POST /v1/embeddings``;
see `embed_upstream`): vectors and usage exact, cost from modelwire's embedding table or the
config entry, base64 on the wire, splitting above 2,048 inputs, retries, client-side limits and
bad input refused before any I/O."""

from __future__ import annotations

import array
from decimal import Decimal

import pytest
from embed_upstream import DIMS, Upstream, b64, tokens_of, vector_of

import modelwire as mw
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.errors import ErrorCode, LlmError

KEY = "sk-test-embed-0123456789"


def _runtime(url: str, **profile: object) -> tuple[mw.LlmRuntime, ProvidersAdapter]:
    rt = mw.LlmRuntime()
    adapter = ProvidersAdapter.from_config(
        {"providers": {"openai": {"base_url": url + "/v1", **profile}}},
        env={"OPENAI_API_KEY": KEY},
    )
    adapter.register(rt)
    return rt, adapter


def _options(inputs: list[str], **extra: object) -> mw.EmbedOptions:
    return mw.EmbedOptions("openai", "text-embedding-3-small", inputs=inputs, **extra)  # type: ignore[arg-type]


async def test_vectors_usage_and_cost_exact_with_base64_on_the_wire() -> None:
    texts = ["alpha", "beta gamma", "δέλτα"]
    async with Upstream() as up:
        rt, _ = _runtime(up.url)
        result = await rt.embed(_options(texts))
    assert result.vectors == tuple(vector_of(t) for t in texts)
    assert all(type(v) is list for v in result.vectors)
    used = sum(tokens_of(t) for t in texts)
    assert result.usage == mw.TokenUsage(used, 0)
    assert result.cost == Decimal("0.02") * used / 1_000_000
    assert (result.dimensions, result.provider, result.model) == (
        DIMS,
        "openai",
        "text-embedding-3-small",
    )
    path, _, headers, body = up.requests[0]
    assert path == "/v1/embeddings"
    assert headers["authorization"] == f"Bearer {KEY}"
    assert body == {"model": "text-embedding-3-small", "input": texts, "encoding_format": "base64"}


async def test_encoding_formats_array_and_base64_hand_back_the_wire_bytes() -> None:
    texts = ["one", "two"]
    async with Upstream() as up:
        rt, _ = _runtime(up.url)
        packed = await rt.embed(_options(texts, encoding_format="array"))
        encoded = await rt.embed(_options(texts, encoding_format="base64"))
    assert [v.typecode for v in packed.vectors if isinstance(v, array.array)] == ["f", "f"]
    assert [list(v) for v in packed.vectors] == [vector_of(t) for t in texts]
    assert encoded.vectors == tuple(b64(vector_of(t)) for t in texts)


async def test_dimensions_reach_the_wire_and_size_the_vectors() -> None:
    async with Upstream() as up:
        rt, _ = _runtime(up.url)
        result = await rt.embed(_options(["short"], dimensions=4))
    assert result.dimensions == 4 and result.vectors[0] == vector_of("short", 4)
    assert up.requests[0][3]["dimensions"] == 4


async def test_inputs_above_the_request_limit_are_split_and_rejoined_in_order() -> None:
    texts = [f"text number {i}" for i in range(5000)]
    async with Upstream() as up:
        up.shuffle = True  # each answer lists its vectors in reverse: the index places them
        rt, _ = _runtime(up.url)
        result = await rt.embed(_options(texts))
    assert sorted(len(r[3]["input"]) for r in up.requests) == [904, 2048, 2048]
    assert result.vectors == tuple(vector_of(t) for t in texts)
    assert result.usage == mw.TokenUsage(sum(tokens_of(t) for t in texts), 0)


async def test_a_429_then_success_is_retried_after_the_providers_retry_after() -> None:
    async with Upstream() as up:
        up.fail = [
            (429, '{"error": {"message": "slow down", "type": "requests"}}', {"Retry-After": "0"})
        ]
        rt, _ = _runtime(up.url)
        result = await rt.embed(_options(["again"]))
    assert up.count == 2 and result.vectors == (vector_of("again"),)


async def test_server_errors_past_the_retry_budget_raise_the_category() -> None:
    async with Upstream() as up:
        up.fail = [(500, '{"error": {"message": "boom"}}', {"Retry-After": "0"})] * 3
        rt, _ = _runtime(up.url)
        with pytest.raises(mw.ServerError) as caught:
            await rt.embed(_options(["x"]))
    assert up.count == 3  # the first try and the normal policy's 2 retries
    assert caught.value.code == ErrorCode.SERVER


async def test_an_auth_failure_is_not_retried_and_names_no_key() -> None:
    async with Upstream() as up:
        up.fail = [(401, f'{{"error": {{"message": "bad key {KEY}"}}}}', {})]
        rt, _ = _runtime(up.url)
        with pytest.raises(mw.AuthError) as caught:
            await rt.embed(_options(["x"]))
    assert up.count == 1
    assert KEY not in str(caught.value) and KEY not in repr(caught.value.failure)


async def test_client_side_concurrency_limit_holds_across_split_requests() -> None:
    texts = [f"t{i}" for i in range(5000)]
    async with Upstream() as up:
        rt, adapter = _runtime(up.url, max_concurrency=1)
        result = await rt.embed(_options(texts))
    assert up.count == 3 and up.most_in_flight == 1
    assert len(result.vectors) == 5000
    assert adapter.rate_limiter.state("openai").in_flight == 0


async def test_an_openai_compatible_server_answering_floats_with_a_config_price() -> None:
    """An Ollama / vLLM / llama.cpp style route: keyless, its model listed in the config with a
    price, answering floats whatever `encoding_format` asked."""
    async with Upstream() as up:
        up.float_only = True
        rt = mw.LlmRuntime()
        profile = {
            "api": "openai-completions",
            "base_url": up.url + "/v1",
            "auth": "none",
            "models": [{"id": "nomic-embed-text", "cost": {"input": 0.5, "output": 0}}],
        }
        ProvidersAdapter.from_config({"providers": {"local": profile}}, env={}).register(rt)
        options = mw.EmbedOptions("local", "nomic-embed-text", inputs=["a b c d e"])
        result = await rt.embed(options)
        packed = await rt.embed(
            mw.EmbedOptions("local", "nomic-embed-text", ["zz"], encoding_format="base64")
        )
    assert result.vectors == (vector_of("a b c d e"),)
    assert result.cost == Decimal("0.5") * tokens_of("a b c d e") / 1_000_000
    assert "authorization" not in up.requests[0][2]
    assert packed.vectors == (b64(vector_of("zz")),)


@pytest.mark.parametrize(
    ("options", "where"),
    [
        (mw.EmbedOptions("openai", "text-embedding-3-small", inputs=[]), "inputs is empty"),
        (mw.EmbedOptions("openai", "text-embedding-3-small", ["a", 3]), "inputs[1] is a int"),  # type: ignore[list-item]
        (mw.EmbedOptions("openai", "text-embedding-3-small", "one"), "not one string"),  # type: ignore[arg-type]
        (mw.EmbedOptions("openai", "text-embedding-3-small", ["a", ""]), "inputs[1] is an empty"),
        (mw.EmbedOptions("openai", "text-embedding-3-small", ["a"], dimensions=0), "dimensions"),
        (
            mw.EmbedOptions("openai", "text-embedding-3-small", ["a"], encoding_format="hex"),  # type: ignore[arg-type]
            "encoding_format",
        ),
    ],
)
async def test_bad_input_is_refused_before_any_request(
    options: mw.EmbedOptions, where: str
) -> None:
    async with Upstream() as up:
        rt, _ = _runtime(up.url)
        with pytest.raises(LlmError) as caught:
            await rt.embed(options)
    assert caught.value.code == ErrorCode.INVALID_OPTION and where in str(caught.value)
    assert up.count == 0


async def test_a_dimensions_value_the_model_does_not_take_names_its_sizes() -> None:
    async with Upstream() as up:
        rt, _ = _runtime(up.url)
        with pytest.raises(LlmError) as caught:
            await rt.embed(_options(["a"], dimensions=4096))
        with pytest.raises(LlmError) as fixed:
            await rt.embed(
                mw.EmbedOptions("openai", "text-embedding-ada-002", ["a"], dimensions=256)
            )
    assert caught.value.code == ErrorCode.UNSUPPORTED_OPTION
    assert "dimensions=4096" in str(caught.value) and "1 to 1536" in str(caught.value)
    assert "only 1536" in str(fixed.value)
    assert up.count == 0


async def test_unknown_models_and_routes_without_embeddings_are_refused_by_name() -> None:
    rt = mw.LlmRuntime()
    ProvidersAdapter.from_config(
        {"providers": {"openai": {}, "anthropic": {}}}, env={"OPENAI_API_KEY": KEY}
    ).register(rt)
    with pytest.raises(LlmError) as unknown:
        await rt.embed(mw.EmbedOptions("openai", "mistral-embed", ["a"]))
    with pytest.raises(LlmError) as none:
        await rt.embed(mw.EmbedOptions("anthropic", "voyage-3", ["a"]))
    with pytest.raises(LlmError) as route:
        await rt.embed(mw.EmbedOptions("nowhere", "m", ["a"]))
    assert unknown.value.code == ErrorCode.UNKNOWN_MODEL and "providers.openai.models" in str(
        unknown.value
    )
    assert none.value.code == ErrorCode.UNSUPPORTED_OPTION and "anthropic" in str(none.value)
    assert route.value.code == ErrorCode.NO_ADAPTER
