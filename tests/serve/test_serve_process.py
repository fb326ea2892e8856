"""The real `modelwire serve` process: streams to the openai SDK and to curl, finishes a stream
on SIGTERM, and shares a key's rate limit with a second process on one PostgreSQL database."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import openai
import pytest
from pgschema import PG_URL, create_schema_url, drop_schema, needs_postgres
from serve_helpers import ADMIN, MockServer, Reply, anthropic_text, chat_text, config
from serve_process import ServeProcess

from modelwire.serve.keystore import create_key, open_keys
from modelwire.session import open_log

pytestmark = pytest.mark.slow


def _slow_text(*words: str, delay: float) -> Reply:
    reply = chat_text(*words)
    reply.delay = delay
    return reply


async def test_sigterm_mid_stream_lets_the_stream_finish_then_exits_0(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    words = [f"w{i} " for i in range(8)]
    async with (
        MockServer([_slow_text(*words, delay=0.15)]) as up,
        MockServer([anthropic_text("x")]) as an,
    ):
        async with ServeProcess(config(up.url, an.url), log, tmp_path) as serve:
            client = openai.AsyncOpenAI(base_url=serve.url + "/v1", api_key=ADMIN, max_retries=0)
            stream = await client.chat.completions.create(
                model="oa:m", messages=[{"role": "user", "content": "count"}], stream=True
            )
            text = ""
            async for chunk in stream:
                piece = chunk.choices[0].delta.content if chunk.choices else None
                if piece and not text:
                    serve.terminate()  # mid-stream: the first word arrived
                text += piece or ""
            assert text == "".join(words)
            assert await serve.wait() == 0
            assert b"stopping" in serve.stderr and b"stopped" in serve.stderr
            with pytest.raises(openai.APIConnectionError):
                await client.chat.completions.create(
                    model="oa:m", messages=[{"role": "user", "content": "again"}]
                )
    session_log = await open_log(log)
    try:
        (info,) = await session_log.sessions()
        end = await session_log.latest(info.session_id, "turn/end")
        assert end is not None and end.data.reason.kind == "completed"  # type: ignore[attr-defined]
    finally:
        await session_log.close()
    assert ADMIN.encode() not in serve.stderr


async def test_curl_streams_a_chat_completion(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    async with (
        MockServer([chat_text("from ", "curl")]) as up,
        MockServer([anthropic_text("x")]) as an,
    ):
        async with ServeProcess(config(up.url, an.url), log, tmp_path) as serve:
            body = json.dumps(
                {"model": "oa:m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
            )
            assert shutil.which("curl"), "curl is missing: .ci/run installs it"
            proc = await asyncio.create_subprocess_exec(
                "curl",
                "-sN",
                "--fail-with-body",
                serve.url + "/v1/chat/completions",
                "-H",
                f"Authorization: Bearer {ADMIN}",
                "-H",
                "Content-Type: application/json",
                "-d",
                body,
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode == 0, out
            events = [line[6:] for line in out.decode().splitlines() if line.startswith("data: ")]
            assert events[-1] == "[DONE]"
            text = "".join(
                json.loads(e)["choices"][0]["delta"].get("content") or ""
                for e in events[:-1]
                if json.loads(e)["choices"]
            )
            assert text == "from curl"


@needs_postgres
async def test_rpm_holds_across_two_serve_processes_on_one_postgresql(tmp_path: Path) -> None:
    assert PG_URL is not None
    schema, url = await create_schema_url(PG_URL)
    try:
        driver = await open_keys(url)
        key = await create_key(driver, "shared", time.time_ns() // 1_000_000, rpm=3)
        await driver.close()
        async with MockServer([chat_text("ok")]) as up, MockServer([anthropic_text("x")]) as an:
            settings = config(up.url, an.url)
            async with (
                ServeProcess(settings, url, tmp_path, "one") as one,
                ServeProcess(settings, url, tmp_path, "two") as two,
            ):
                clients = [
                    openai.AsyncOpenAI(base_url=s.url + "/v1", api_key=key, max_retries=0)
                    for s in (one, two)
                ]

                async def call(i: int) -> str:
                    try:
                        await clients[i % 2].chat.completions.create(
                            model="oa:m", messages=[{"role": "user", "content": "hi"}]
                        )
                    except openai.RateLimitError as exc:
                        assert (
                            exc.code == "RATE_LIMIT"
                            and int(exc.response.headers["Retry-After"]) >= 1
                        )
                        return "limited"
                    return "ok"

                minute = time.time() // 60
                outcomes = await asyncio.gather(*(call(i) for i in range(8)))
                same_minute = time.time() // 60 == minute
        # one window: exactly the limit got through; a test that straddled a minute gets two
        assert outcomes.count("ok") == 3 if same_minute else outcomes.count("ok") <= 6
        assert len(up.bodies) == outcomes.count("ok")
    finally:
        await drop_schema(PG_URL, schema)
