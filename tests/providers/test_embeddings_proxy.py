"""Embeddings go through the library's transport with the route's settings: a route's `proxy`
sends `POST /v1/embeddings` through a real forward proxy (Debian's tinyproxy, with Basic auth),
in absolute form to an http upstream answering as the OpenAI "Create embeddings" reference
documents (`embed_upstream`); a dead proxy is `PROXY` naming it without its password."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from embed_upstream import Upstream, vector_of
from tinyproxy import TinyProxy, free_port

import modelwire as mw
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.errors import LlmError

PASSWORD = "pr0xy-embed-s3cret"


@pytest.fixture(scope="module")
def proxy() -> Iterator[TinyProxy]:
    with TinyProxy(auth=("alice", PASSWORD)) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def _rt(url: str, proxy_url: str) -> mw.LlmRuntime:
    rt = mw.LlmRuntime()
    route = {"base_url": url.replace("127.0.0.1", "localhost") + "/v1", "proxy": proxy_url}
    ProvidersAdapter.from_config(
        {"providers": {"openai": route}}, env={"OPENAI_API_KEY": "sk-embed-proxy-1"}
    ).register(rt)
    return rt


async def test_embed_requests_go_through_the_routes_proxy(proxy: TinyProxy) -> None:
    async with Upstream() as up:
        result = await _rt(up.url, proxy.url).embed(
            mw.EmbedOptions("openai", "text-embedding-3-small", ["via the proxy"])
        )
    assert result.vectors == (vector_of("via the proxy"),)
    assert "tinyproxy" in up.requests[0][2].get("via", "")
    assert "POST http://localhost:" in proxy.log()


async def test_a_dead_proxy_is_proxy_without_its_password() -> None:
    dead = f"http://alice:{PASSWORD}@127.0.0.1:{free_port()}"
    async with Upstream() as up:
        with pytest.raises(LlmError) as caught:
            await _rt(up.url, dead).embed(
                mw.EmbedOptions("openai", "text-embedding-3-small", ["x"])
            )
    assert caught.value.code == "PROXY" and up.count == 0
    assert PASSWORD not in str(caught.value) and PASSWORD not in repr(caught.value.failure)
