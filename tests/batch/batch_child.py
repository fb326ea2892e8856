"""A child process for the batch crash tests: submit a 3-request batch on an OpenAI (or
Anthropic) route at a loopback upstream, print the job id, then wait to be killed.

Usage: python batch_child.py LOG_URL BASE_URL ROUTE MODEL JOB_ID
"""

from __future__ import annotations

import asyncio
import sys

import modelwire as mw
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.batch import BatchJob
from modelwire.session import open_log

ENV = {
    "OPENAI_API_KEY": "sk-batch-test-1",
    "ANTHROPIC_API_KEY": "sk-ant-batch-1",
    "GEMINI_API_KEY": "g-batch-1",
}


def runtime(base_url: str, route: str) -> mw.LlmRuntime:
    rt = mw.LlmRuntime()
    url = {"openai": base_url + "/v1", "google": base_url + "/v1beta"}.get(route, base_url)
    ProvidersAdapter.from_config({"providers": {route: {"base_url": url}}}, env=ENV).register(rt)
    return rt


def requests(route: str, model: str) -> list[mw.GenerateOptions]:
    return [mw.GenerateOptions(route, model, (mw.user_message(f"q{i}"),)) for i in range(3)]


async def main(log_url: str, base_url: str, route: str, model: str, job_id: str) -> None:
    log = await open_log(log_url)
    job = await BatchJob.submit(
        runtime(base_url, route), log, route, model, requests(route, model), job_id=job_id
    )
    print(job.job_id, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
