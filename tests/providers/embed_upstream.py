"""Scripted loopback upstreams for the embeddings tests, answering in the providers' documented
shapes (the recorded fixtures hold no embeddings traffic):

- OpenAI API reference, "Embeddings / Create embeddings" (``POST /v1/embeddings``: body
  ``model``, ``input`` array, ``dimensions``, ``encoding_format`` ``float``|``base64``; answer
  ``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
  "usage": {"prompt_tokens", "total_tokens"}}``), which Azure OpenAI ("Embeddings - Create",
  ``/openai/deployments/{id}/embeddings?api-version=``), Mistral ("Embeddings", ``POST
  /v1/embeddings`` with ``output_dimension``) and the OpenAI-compatible servers share;
- Gemini API reference, ``models.embedContent`` (``{"content", "outputDimensionality"}`` →
  ``{"embedding": {"values"}}``) and ``models.batchEmbedContents`` (``{"requests":
  [EmbedContentRequest]}`` → ``{"embeddings": [{"values"}]}``);
- Amazon Bedrock user guide, "Amazon Titan Text Embeddings" (``{"inputText", "dimensions"}`` →
  ``{"embedding", "inputTextTokenCount"}``) and "Cohere Embed" (``{"texts", "input_type",
  "embedding_types"}`` → ``{"embeddings": {"float": [...]}, "response_type":
  "embeddings_by_type"}``) over ``InvokeModel`` (``POST /model/{modelId}/invoke``, token count
  in ``X-Amzn-Bedrock-Input-Token-Count``).

Each vector is a function of its text (`vector_of`), so a test knows every expected value.
"""

from __future__ import annotations

import array
import asyncio
import base64
import json
import zlib
from collections.abc import Callable
from typing import Any

from aiohttp import web
from providers_fixtures import start_site

DIMS = 8


def vector_of(text: str, dims: int = DIMS) -> list[float]:
    """The vector the upstream answers for `text`: float32-exact values derived from it."""
    seed = zlib.crc32(text.encode())
    return [float(array.array("f", [((seed >> (i % 24)) % 1000) / 64.0])[0]) for i in range(dims)]


def tokens_of(text: str) -> int:
    """The token count the upstream reports for `text` (one per 4 bytes, at least one)."""
    return max(1, len(text.encode()) // 4)


def b64(values: list[float]) -> str:
    return base64.b64encode(array.array("f", values).tobytes()).decode()


class Upstream:
    """A real 127.0.0.1 server; `fail` scripts failures of the first requests (status, body,
    headers); `requests` records (path, query, headers, body) of every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], dict[str, Any]]] = []
        self.raw: list[tuple[str, bytes]] = []  # (raw path, body bytes) as received
        self.fail: list[tuple[int, str, dict[str, str]]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.float_only = False  # an OpenAI-compatible server that ignores encoding_format
        self.shuffle = False  # answer `data` in reverse order (the index says where each goes)
        self.hold: asyncio.Event | None = None
        self.url = ""
        self._runner: Any = None

    async def __aenter__(self) -> Upstream:
        app = web.Application(client_max_size=1 << 28)
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner, self.url = await start_site(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()

    @property
    def count(self) -> int:
        return len(self.requests)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.raw.append((request.raw_path, raw))
        body = json.loads(raw)
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append((request.path, request.query_string, headers, body))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)  # let concurrent requests overlap when they can
            if self.hold is not None:
                await self.hold.wait()
            if self.fail:
                status, text, extra = self.fail.pop(0)
                return web.Response(
                    status=status, text=text, headers=extra, content_type="application/json"
                )
            return self._answer(request.path, body)
        finally:
            self.in_flight -= 1

    def _answer(self, path: str, body: dict[str, Any]) -> web.Response:
        handler: Callable[[dict[str, Any]], web.Response]
        if path.endswith(":batchEmbedContents"):
            handler = self._gemini
        elif path.endswith(":embedContent"):
            handler = self._gemini_one
        elif path.endswith("/invoke"):
            handler = self._cohere if "texts" in body else self._titan
        else:
            handler = self._openai
        return handler(body)

    def _openai(self, body: dict[str, Any]) -> web.Response:
        dims = body.get("dimensions") or body.get("output_dimension") or DIMS
        base64_wanted = body.get("encoding_format") == "base64" and not self.float_only
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": b64(vector_of(t, dims)) if base64_wanted else vector_of(t, dims),
            }
            for i, t in enumerate(body["input"])
        ]
        if self.shuffle:
            data.reverse()
        used = sum(tokens_of(t) for t in body["input"])
        answer = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": used, "total_tokens": used},
        }
        return web.json_response(answer)

    def _gemini(self, body: dict[str, Any]) -> web.Response:
        out = []
        for item in body["requests"]:
            text = item["content"]["parts"][0]["text"]
            out.append({"values": vector_of(text, item.get("outputDimensionality") or DIMS)})
        return web.json_response({"embeddings": out})

    def _gemini_one(self, body: dict[str, Any]) -> web.Response:
        assert "model" not in body  # embedContent names the model in its path
        text = body["content"]["parts"][0]["text"]
        values = vector_of(text, body.get("outputDimensionality") or DIMS)
        return web.json_response({"embedding": {"values": values}})

    def _titan(self, body: dict[str, Any]) -> web.Response:
        text = body["inputText"]
        vector = vector_of(text, body.get("dimensions") or DIMS)
        answer = {
            "embedding": vector,
            "embeddingsByType": {"float": vector},
            "inputTextTokenCount": tokens_of(text),
        }
        return web.json_response(answer)

    def _cohere(self, body: dict[str, Any]) -> web.Response:
        texts = body["texts"]
        answer = {
            "id": "emb-1",
            "texts": texts,
            "embeddings": {"float": [vector_of(t) for t in texts]},
            "response_type": "embeddings_by_type",
        }
        used = str(sum(tokens_of(t) for t in texts))
        return web.json_response(answer, headers={"X-Amzn-Bedrock-Input-Token-Count": used})
