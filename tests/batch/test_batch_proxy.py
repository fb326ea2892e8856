"""Batch calls go through the library's transport with the route's settings: the upload, the
create, the polls and the result download of an OpenAI batch (`batch_upstream`, from the OpenAI
"Files" and "Batch" references) all pass a route's `proxy`, a real tinyproxy."""

from __future__ import annotations

import pytest
from batch_child import requests
from batch_upstream import BatchUpstream
from tinyproxy import TinyProxy

import modelwire as mw
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.batch import BatchJob
from modelwire.session import open_log


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


async def test_every_batch_call_passes_the_routes_proxy() -> None:
    with TinyProxy() as proxy:
        async with BatchUpstream() as up:
            rt = mw.LlmRuntime()
            route = {
                "base_url": up.url.replace("127.0.0.1", "localhost") + "/v1",
                "proxy": proxy.url,
            }
            ProvidersAdapter.from_config(
                {"providers": {"openai": route}}, env={"OPENAI_API_KEY": "sk-batch-proxy-1"}
            ).register(rt)
            log = await open_log("memory:")
            job = await BatchJob.submit(rt, log, "openai", "gpt-4.1", requests("openai", "gpt-4.1"))
            await job.wait(poll_s=0)
            items = await job.results()
        seen = proxy.log()
    assert len(items) == 3 and items[0].result.failure is None
    for line in ("POST http://localhost", "/v1/files", "/v1/batches", "/content"):
        assert line in seen, line
