"""Shared pieces of the agent-endpoint tests (issue 37): a scripted model that can hold its answer
mid-stream, an agent factory on it, the app on 127.0.0.1, an SSE reader that keeps each event's
`id`, and the real AI SDK (`ai` under node, `web/ui.mjs`) as a client."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from approval_agent import tools
from approval_model import MODEL, ApprovalModel, profile
from providers_fixtures import start_site

from modelwire.agent import Agent, open_runtime
from modelwire.serve import create_app
from modelwire.session import SessionLog

WEB = Path(__file__).parent / "web"
Json = dict[str, Any]


class WebModel(ApprovalModel):
    """`ApprovalModel`, and for a plain-text prompt: reasoning, then the words of `echo <prompt>`
    one delta each; with `hold` set, the answer waits for `release` after its first word. The
    prompt `fail` is answered 400."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = False
        self.release = asyncio.Event()
        self.holding = asyncio.Event()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        messages = body["messages"]
        plan = str(messages[-1].get("content") or "") if messages[-1]["role"] == "user" else ""
        if not plan or plan.startswith("{"):
            return await super()._chat(request)
        self.requests.append(body)
        if plan == "fail":
            error = {"message": "the scripted model refuses", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=400)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        head = {"id": "c-web", "object": "chat.completion.chunk", "created": 1, "model": MODEL}

        def delta(d: Json, finish: str | None = None) -> bytes:
            payload = {**head, "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}
            return b"data: " + json.dumps(payload).encode() + b"\n\n"

        await response.write(delta({"role": "assistant", "reasoning_content": "thinking"}))
        for i, word in enumerate(["echo", *[" " + w for w in plan.split()]]):
            await response.write(delta({"content": word}))
            if i == 0 and self.hold:
                self.holding.set()
                await self.release.wait()
        await response.write(delta({}, "stop"))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def make_factory(url: str) -> Any:
    def factory(log: SessionLog) -> Agent[Any]:
        runtime = open_runtime(config={"providers": {"approval": profile(url)}})
        return Agent(runtime, log, "approval", MODEL, tools=tools(), repair_after_ms=0)

    return factory


class Served(str):
    """The base URL of a served app, with the app."""

    app: web.Application


@asynccontextmanager
async def serving(model: WebModel, log: str | SessionLog = "memory:") -> AsyncIterator[Served]:
    """The app with agent `bot` on `model`; yields its base URL."""
    app = create_app({}, log, agents={"bot": make_factory(model.base_url)})
    runner, url = await start_site(app)
    served = Served(url)
    served.app = app
    try:
        yield served
    finally:
        await runner.cleanup()


@asynccontextmanager
async def serve_process(model: WebModel, log: str, tmp: Path, counter: Path) -> AsyncIterator[str]:
    """A real `modelwire serve --agent bot=approval_agent:make_agent` process on `log`."""
    config = tmp / "empty.toml"
    config.write_text("")
    support = str(Path(__file__).parents[1] / "support")
    env = {
        **os.environ,
        "APPROVAL_MODEL_URL": model.base_url,
        "APPROVAL_COUNTER": str(counter),
        "PYTHONPATH": os.pathsep.join([support, os.environ.get("PYTHONPATH", "")]),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "modelwire",
        "serve",
        "--config",
        str(config),
        "--log",
        log,
        "--port",
        "0",
        "--agent",
        "bot=approval_agent:make_agent",
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    seen = b""
    try:
        while True:
            line = await asyncio.wait_for(proc.stderr.readline(), 60)  # a hang guard
            seen += line
            if not line:
                raise AssertionError(f"modelwire serve exited: {seen.decode()}")
            found = re.search(rb"listening on (http://127\.0\.0\.1:\d+)", line)
            if found:
                break
        yield found.group(1).decode()
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 60)


async def read_sse(response: aiohttp.ClientResponse, stop_after: int | None = None) -> list[Json]:
    """The SSE events of `response` as `{"id": seq | None, "data": text}`; after `stop_after`
    events the reader stops (the caller then cuts the connection)."""
    events: list[Json] = []
    current: Json = {"id": None, "data": ""}
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if not line:
            if current["data"]:
                events.append(current)
                if stop_after is not None and len(events) >= stop_after:
                    return events
            current = {"id": None, "data": ""}
        elif line.startswith("id: "):
            current["id"] = int(line[4:])
        elif line.startswith("data: "):
            current["data"] += line[6:]
    return events


def parts(events: list[Json]) -> list[Json]:
    return [json.loads(e["data"]) for e in events if e["data"] != "[DONE]"]


def user(text: str, mid: str = "u1") -> Json:
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}


def node_ready() -> None:
    if shutil.which("node") is None or not (WEB / "node_modules" / "ai").is_dir():
        pytest.fail("node and tests/serve/web/node_modules (npm ci in tests/serve/web) are needed")


async def sdk(
    mode: str, api: str, session: str, given: object = None, last_event_id: int | None = None
) -> Json:
    """Run the AI SDK client `web/ui.mjs` (see there); its JSON result."""
    node_ready()
    args = ["node", str(WEB / "ui.mjs"), mode, api, session]
    if given is not None or last_event_id is not None:
        args.append(json.dumps(given))
    if last_event_id is not None:
        args.append(str(last_event_id))
    proc = await asyncio.create_subprocess_exec(
        *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=WEB
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    result: Json = json.loads(out.decode().strip().splitlines()[-1])
    return result
