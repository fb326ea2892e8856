"""Provider batch jobs (`modelwire.batch.BatchJob`) against loopback upstreams that follow the
OpenAI "Files"/"Batch" and Anthropic "Message Batches" API references (`batch_upstream`):
submitted, polled and read in request order with usage and the batch price; a malformed result
line fails only its request; mixed models refused before anything is sent; cancel; and the log
making a job durable — a process SIGKILLed after submit, or in the middle of the create, is
continued by `BatchJob.open` in another process with exactly one batch created upstream."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from batch_child import requests, runtime
from batch_upstream import BatchUpstream

import modelwire as mw
from modelwire.batch import BatchJob
from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import open_log

CHILD = Path(__file__).with_name("batch_child.py")
SRC = Path(__file__).resolve().parents[2] / "src"
# gpt-4.1 (pi-ai): input 2, output 8 USD per 1M; 10 in + 2 out = 36 µUSD, half at batch price
GPT_COST = Decimal("0.000018")


def _texts(items: list[object]) -> list[str]:
    out = []
    for item in items:
        blocks = item.result.message.content  # type: ignore[attr-defined]
        out.append("".join(b.text for b in blocks if isinstance(b, mw.TextBlock)))
    return out


async def test_openai_batch_submitted_polled_and_read_in_order(tmp_path: Path) -> None:
    async with BatchUpstream() as up:
        up.polls_to_finish = 2
        log = await open_log(f"sqlite:///{tmp_path / 'b.db'}")
        try:
            rt = runtime(up.url, "openai")
            job = await BatchJob.submit(rt, log, "openai", "gpt-4.1", requests("openai", "gpt-4.1"))
            kinds = [e.type for e in await log.read(job.job_id)]
            assert kinds == [
                "batch/planned",
                "batch/uploaded",
                "batch/create-started",
                "batch/created",
            ]
            first = await job.status()
            done = await job.wait(poll_s=0)
            items = await job.results()
        finally:
            await log.close()
    assert first.status == "running" and done.status == "ended"
    assert _texts(items) == ["echo: q0", "echo: q1", "echo: q2"]
    assert all(i.result.usage == mw.TokenUsage(10, 2) for i in items)
    assert all(i.cost == GPT_COST for i in items)
    lines = [json.loads(x) for x in next(iter(up.files.values()))["content"].splitlines()]
    assert [x["custom_id"] for x in lines] == ["r0", "r1", "r2"]
    assert {(x["method"], x["url"]) for x in lines} == {("POST", "/v1/chat/completions")}
    body = lines[0]["body"]
    assert body["model"] == "gpt-4.1" and "stream" not in body and "stream_options" not in body
    assert body["messages"][-1]["content"] == "q0"
    assert up.creates == 1 and up.uploads == 1
    batch = next(iter(up.batches.values()))
    assert batch["metadata"] == {"modelwire_job": job.job_id}
    assert batch["completion_window"] == "24h"


async def test_anthropic_message_batch_gets_the_route_default_max_tokens() -> None:
    async with BatchUpstream() as up:
        log = await open_log("memory:")
        rt = runtime(up.url, "anthropic")
        model = "claude-haiku-4-5"
        job = await BatchJob.submit(rt, log, "anthropic", model, requests("anthropic", model))
        await job.wait(poll_s=0)
        items = await job.results()
    sent = up.inputs[job.batch_id or ""]
    assert [r["custom_id"] for r in sent] == ["r0", "r1", "r2"]
    params = sent[0]["params"]
    assert params["model"] == model and "stream" not in params
    assert isinstance(params["max_tokens"], int) and params["max_tokens"] > 0
    assert _texts(items) == ["echo: q0", "echo: q1", "echo: q2"]
    assert all(i.result.usage == mw.TokenUsage(10, 2) and i.cost is not None for i in items)


async def test_gemini_batch_mode_inlined_requests_in_order() -> None:
    async with BatchUpstream() as up:
        up.polls_to_finish = 2
        up.fail_request = 1
        log = await open_log("memory:")
        model = "gemini-2.5-flash"
        job = await BatchJob.submit(
            runtime(up.url, "google"), log, "google", model, requests("google", model)
        )
        await job.wait(poll_s=0)
        items = await job.results()
    sent = up.inputs[job.batch_id or ""]
    assert [r["metadata"] for r in sent] == [{"key": "r0"}, {"key": "r1"}, {"key": "r2"}]
    assert sent[0]["request"]["contents"][-1]["parts"] == [{"text": "q0"}]
    assert job.batch_id == "batches/gb1"
    assert _texts(items)[0] == "echo: q0" and _texts(items)[2] == "echo: q2"
    failure = items[1].result.failure
    assert failure is not None and failure.code == "INVALID_REQUEST"
    assert items[0].result.usage == mw.TokenUsage(10, 2) and items[0].cost is not None


async def test_a_malformed_line_fails_its_request_and_the_rest_are_read() -> None:
    async with BatchUpstream() as up:
        up.malformed_line = 0  # the first output line (request r2: the output is reversed)
        up.fail_request = 0
        log = await open_log("memory:")
        job = await BatchJob.submit(
            runtime(up.url, "openai"), log, "openai", "gpt-4.1", requests("openai", "gpt-4.1")
        )
        await job.wait(poll_s=0)
        items = await job.results()
    failures = [i.result.failure for i in items]
    assert failures[0] is not None and failures[0].code == "INVALID_REQUEST"
    assert _texts(items)[1] == "echo: q1" and failures[1] is None
    assert failures[2] is not None and failures[2].code == ErrorCode.MALFORMED_RESPONSE


async def test_mixed_models_are_refused_before_the_log_or_the_provider() -> None:
    async with BatchUpstream() as up:
        log = await open_log("memory:")
        mixed = [*requests("openai", "gpt-4.1"), *requests("openai", "gpt-4.1-mini")]
        with pytest.raises(HarnessError) as caught:
            await BatchJob.submit(runtime(up.url, "openai"), log, "openai", "gpt-4.1", mixed)
        with pytest.raises(HarnessError) as empty:
            await BatchJob.submit(runtime(up.url, "openai"), log, "openai", "gpt-4.1", [])
    assert caught.value.code == ErrorCode.INVALID_ARGS and "requests[3]" in str(caught.value)
    assert empty.value.code == ErrorCode.INVALID_ARGS
    assert up.uploads == 0 and up.creates == 0 and await log.sessions() == []


async def test_cancel_asks_the_provider_and_reports_its_state() -> None:
    async with BatchUpstream() as up:
        up.polls_to_finish = 99
        log = await open_log("memory:")
        job = await BatchJob.submit(
            runtime(up.url, "openai"), log, "openai", "gpt-4.1", requests("openai", "gpt-4.1")
        )
        state = await job.cancel()
    assert state.provider_status == "cancelled" and state.status == "ended"


async def _child(
    tmp_path: Path, url: str, job_id: str, route: str = "openai"
) -> asyncio.subprocess.Process:
    model = {"openai": "gpt-4.1", "anthropic": "claude-haiku-4-5"}.get(route, "gemini-2.5-flash")
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        f"sqlite:///{tmp_path / 'crash.db'}",
        url,
        route,
        model,
        job_id,
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )


async def _continue(tmp_path: Path, url: str, job_id: str, route: str = "openai") -> list[str]:
    log = await open_log(f"sqlite:///{tmp_path / 'crash.db'}")
    try:
        job = await BatchJob.open(log, job_id, runtime(url, route))
        await job.wait(poll_s=0)
        return _texts(await job.results())  # type: ignore[arg-type]
    finally:
        await log.close()


async def test_sigkill_after_submit_then_open_elsewhere_submits_nothing_again(
    tmp_path: Path,
) -> None:
    async with BatchUpstream() as up:
        child = await _child(tmp_path, up.url, "batch-after-submit")
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line.decode().strip() == "batch-after-submit"
        child.send_signal(signal.SIGKILL)
        await child.wait()
        texts = await _continue(tmp_path, up.url, "batch-after-submit")
    assert texts == ["echo: q0", "echo: q1", "echo: q2"]
    assert up.creates == 1 and up.uploads == 1


@pytest.mark.parametrize("route", ["openai", "anthropic", "google"])
async def test_sigkill_during_the_create_is_recovered_without_a_duplicate(
    tmp_path: Path, route: str
) -> None:
    async with BatchUpstream() as up:
        up.hold_create = asyncio.Event()  # the create arrives, its answer never leaves
        child = await _child(tmp_path, up.url, "batch-mid-create", route)
        await asyncio.wait_for(up.create_seen.wait(), 60)
        child.send_signal(signal.SIGKILL)
        await child.wait()
        up.hold_create.set()
        log = await open_log(f"sqlite:///{tmp_path / 'crash.db'}")
        kinds = [e.type for e in await log.read("batch-mid-create")]
        await log.close()
        assert "batch/created" not in kinds and "batch/create-started" in kinds
        texts = await _continue(tmp_path, up.url, "batch-mid-create", route)
    assert texts == ["echo: q0", "echo: q1", "echo: q2"]
    assert up.creates == 1
    assert up.uploads == (1 if route == "openai" else 0)


async def test_sigkill_during_the_upload_adopts_the_file_and_creates_once(tmp_path: Path) -> None:
    async with BatchUpstream() as up:
        up.hold_upload = asyncio.Event()  # the file is stored, its answer never leaves
        child = await _child(tmp_path, up.url, "batch-mid-upload")
        await asyncio.wait_for(up.upload_seen.wait(), 60)
        child.send_signal(signal.SIGKILL)
        await child.wait()
        up.hold_upload.set()
        texts = await _continue(tmp_path, up.url, "batch-mid-upload")
    assert texts == ["echo: q0", "echo: q1", "echo: q2"]
    assert up.uploads == 1 and up.creates == 1


@pytest.mark.postgres
@pytest.mark.skipif(
    not os.environ.get("MODELWIRE_TEST_POSTGRES_URL"),
    reason="MODELWIRE_TEST_POSTGRES_URL is not set",
)
async def test_a_job_on_postgresql_is_continued_from_another_connection() -> None:
    url = os.environ["MODELWIRE_TEST_POSTGRES_URL"]
    async with BatchUpstream() as up:
        log = await open_log(url)
        try:
            job = await BatchJob.submit(
                runtime(up.url, "openai"), log, "openai", "gpt-4.1", requests("openai", "gpt-4.1")
            )
        finally:
            await log.close()
        other = await open_log(url)
        try:
            again = await BatchJob.open(other, job.job_id, runtime(up.url, "openai"))
            await again.wait(poll_s=0)
            texts = _texts(await again.results())  # type: ignore[arg-type]
            await other.delete(job.job_id)
        finally:
            await other.close()
    assert again.batch_id == job.batch_id and texts[0] == "echo: q0"
    assert up.creates == 1
