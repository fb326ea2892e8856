"""`rt.embed` on Azure OpenAI, Mistral, Gemini and Bedrock (Titan and Cohere Embed) routes,
against a scripted loopback server in each provider's documented shape (`embed_upstream`
names the references: Azure OpenAI "Embeddings - Create", Mistral "Embeddings", Gemini API
``models.batchEmbedContents``, Bedrock "Amazon Titan Text Embeddings" and "Cohere Embed" over
InvokeModel)."""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import unquote

from bedrock_fixtures import SECRET, signature_valid
from embed_upstream import DIMS, Upstream, tokens_of, vector_of

import modelwire as mw
from modelwire.adapters.providers import ProvidersAdapter


def _rt(routes: dict[str, object], env: dict[str, str]) -> mw.LlmRuntime:
    rt = mw.LlmRuntime()
    ProvidersAdapter.from_config({"providers": routes}, env=env).register(rt)
    return rt


async def test_azure_v1_sends_the_deployment_in_the_body_with_an_api_key_header() -> None:
    async with Upstream() as up:
        route = {
            "api": "azure-openai-responses",
            "base_url": up.url + "/openai/v1",
            "api_key_env": "AZ",
            "models": [{"id": "my-embedder", "cost": {"input": 0.02, "output": 0}}],
        }
        rt = _rt({"az": route}, {"AZ": "azure-key-1"})
        result = await rt.embed(mw.EmbedOptions("az", "my-embedder", ["hello", "world"]))
    path, query, headers, body = up.requests[0]
    assert (path, query) == ("/openai/v1/embeddings", "")
    assert headers["api-key"] == "azure-key-1" and "authorization" not in headers
    assert body == {
        "model": "my-embedder",
        "input": ["hello", "world"],
        "encoding_format": "base64",
    }
    assert result.vectors == (vector_of("hello"), vector_of("world"))
    assert result.cost == Decimal("0.02") * result.usage.input_tokens / 1_000_000  # type: ignore[union-attr]


async def test_azure_dated_api_version_addresses_the_deployment() -> None:
    async with Upstream() as up:
        route = {
            "api": "azure-openai-completions",
            "base_url": up.url,
            "api_key_env": "AZ",
            "api_version": "2024-10-21",
            "models": [{"id": "emb-deploy"}],
        }
        rt = _rt({"az": route}, {"AZ": "azure-key-1"})
        result = await rt.embed(mw.EmbedOptions("az", "emb-deploy", ["x"]))
    path, query, _, _ = up.requests[0]
    assert path == "/openai/deployments/emb-deploy/embeddings"
    assert query == "api-version=2024-10-21"
    assert result.cost is None  # no price: the deployment is not a model modelwire knows


async def test_mistral_sends_output_dimension_and_floats_and_prices_from_the_table() -> None:
    async with Upstream() as up:
        rt = _rt({"mistral": {"base_url": up.url}}, {"MISTRAL_API_KEY": "mk-1"})
        plain = await rt.embed(mw.EmbedOptions("mistral", "mistral-embed", ["bonjour"]))
        sized = await rt.embed(
            mw.EmbedOptions("mistral", "codestral-embed", ["def f(): pass"], dimensions=4)
        )
    (path, _, headers, body), (_, _, _, sized_body) = up.requests
    assert path == "/v1/embeddings" and headers["authorization"] == "Bearer mk-1"
    assert body == {"model": "mistral-embed", "input": ["bonjour"]}
    assert sized_body["output_dimension"] == 4 and sized.dimensions == 4
    assert plain.vectors == (vector_of("bonjour"),)
    assert plain.cost == Decimal("0.10") * tokens_of("bonjour") / 1_000_000


async def test_gemini_batch_embed_contents_in_request_order_without_usage() -> None:
    texts = [f"gemini {i}" for i in range(250)]
    async with Upstream() as up:
        rt = _rt({"google": {"base_url": up.url + "/v1beta"}}, {"GEMINI_API_KEY": "g-key-1"})
        options = mw.EmbedOptions(
            "google",
            "gemini-embedding-001",
            texts,
            dimensions=768,
            provider_options={"taskType": "RETRIEVAL_DOCUMENT"},
        )
        result = await rt.embed(options)
    assert sorted(len(r[3]["requests"]) for r in up.requests) == [50, 100, 100]
    path, _, headers, body = up.requests[0]
    assert path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert headers["x-goog-api-key"] == "g-key-1"
    assert body["requests"][0] == {
        "model": "models/gemini-embedding-001",
        "content": {"parts": [{"text": body["requests"][0]["content"]["parts"][0]["text"]}]},
        "outputDimensionality": 768,
        "taskType": "RETRIEVAL_DOCUMENT",
    }
    assert result.vectors == tuple(vector_of(t, 768) for t in texts)
    assert result.usage is None and result.cost is None and result.dimensions == 768


async def test_gemini_one_input_uses_embed_content() -> None:
    async with Upstream() as up:
        rt = _rt({"google": {"base_url": up.url + "/v1beta"}}, {"GEMINI_API_KEY": "g-key-1"})
        result = await rt.embed(mw.EmbedOptions("google", "gemini-embedding-001", ["solo"]))
    path, _, _, body = up.requests[0]
    assert path == "/v1beta/models/gemini-embedding-001:embedContent"
    assert body == {"content": {"parts": [{"text": "solo"}]}}
    assert result.vectors == (vector_of("solo"),)


async def test_bedrock_titan_one_input_per_signed_invoke_with_its_token_count() -> None:
    env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET}
    texts = ["first", "second", "third"]
    async with Upstream() as up:
        route = {"base_url": up.url, "region": "us-east-1"}
        rt = _rt({"amazon-bedrock": route}, env)
        options = mw.EmbedOptions(
            "amazon-bedrock", "amazon.titan-embed-text-v2:0", texts, dimensions=256
        )
        result = await rt.embed(options)
    assert up.count == 3
    assert sorted(r[3]["inputText"] for r in up.requests) == sorted(texts)
    assert all(r[3]["dimensions"] == 256 for r in up.requests)
    for (raw_path, raw), (_, _, headers, _) in zip(up.raw, up.requests, strict=True):
        assert unquote(raw_path) == "/model/amazon.titan-embed-text-v2:0/invoke"
        assert signature_valid(raw_path, headers, raw)
    assert result.vectors == tuple(vector_of(t, 256) for t in texts)
    used = sum(tokens_of(t) for t in texts)
    assert result.usage == mw.TokenUsage(used, 0)
    assert result.cost == Decimal("0.02") * used / 1_000_000


async def test_bedrock_cohere_embed_reads_the_token_count_header() -> None:
    texts = [f"doc {i}" for i in range(100)]
    async with Upstream() as up:
        rt = _rt(
            {"amazon-bedrock": {"base_url": up.url, "region": "us-east-1"}},
            {"AWS_BEARER_TOKEN_BEDROCK": "br-token"},
        )
        options = mw.EmbedOptions(
            "amazon-bedrock",
            "cohere.embed-english-v3",
            texts,
            provider_options={"input_type": "search_query"},
        )
        result = await rt.embed(options)
    assert sorted(len(r[3]["texts"]) for r in up.requests) == [4, 96]
    _, _, headers, body = up.requests[0]
    assert headers["authorization"] == "Bearer br-token"
    assert body["input_type"] == "search_query" and body["embedding_types"] == ["float"]
    assert result.vectors == tuple(vector_of(t) for t in texts) and result.dimensions == DIMS
    assert result.usage == mw.TokenUsage(sum(tokens_of(t) for t in texts), 0)
