"""A scripted OpenAI-compatible model on 127.0.0.1 for the human-approval tests (issue 35).

`ApprovalModel` answers `POST /v1/chat/completions` (`"stream": true`) as OpenAI's Chat
Completions stream does. What it answers depends only on the request: the *plan* is the text of
the last user message, a JSON list of `[tool, arguments]` pairs; the *step* is the number of
assistant messages after that user message. Step 0 makes the plan's calls in parallel, call ids
`call_<i>` (`i` the index in the plan, suffixed `_<turn key>` when the plan text says so: see
`plan_text`), finish `tool_calls`; every later step answers the text `results: r1 | r2 | ...`,
the tool-result contents the request carries after the plan, in the order the request gives
them (so a test sees what the model was told and in which order). A plan that is not JSON is
answered with the text `echo <plan>`. `requests` keeps every request body.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import cast

from aiohttp import web

__all__ = ["ApprovalModel", "plan_text"]

Json = dict[str, object]
MODEL = "approval-1"


def plan_text(calls: Sequence[tuple[str, Mapping[str, object]]], tag: str = "") -> str:
    """The user text that makes the model call `calls` (ids `call_<i>`, or `call_<i>_<tag>`)."""
    return json.dumps({"tag": tag, "calls": [[name, dict(args)] for name, args in calls]})


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def _frame(payload: Mapping[str, object]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class ApprovalModel:
    """The scripted server (see the module docstring); `start()` → base URL ending in `/v1`."""

    def __init__(self) -> None:
        self.requests: list[Json] = []
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    def _frames(self, messages: list[Json]) -> list[bytes]:
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        plan = _text(messages[last_user].get("content"))
        after = messages[last_user + 1 :]
        step = sum(1 for m in after if m.get("role") == "assistant")
        head: Json = {"id": "chatcmpl-approval", "object": "chat.completion.chunk"}
        head |= {"created": int(time.time()), "model": MODEL}

        def chunk(delta: Json, finish: str | None = None) -> bytes:
            return _frame(
                {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            )

        try:
            parsed = json.loads(plan)
        except ValueError:
            parsed = None
        if step == 0 and isinstance(parsed, dict):
            tag = f"_{parsed['tag']}" if parsed.get("tag") else ""
            calls = cast("list[list[object]]", parsed["calls"])
            opening = [
                {
                    "index": i,
                    "id": f"call_{i}{tag}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for i, (name, args) in enumerate(calls)
            ]
            frames = [chunk({"role": "assistant", "content": None, "tool_calls": opening})]
            frames.append(chunk({}, "tool_calls"))
        else:
            if parsed is None:
                answer = f"echo {plan}"
            else:
                seen = [_text(m.get("content")) for m in after if m.get("role") == "tool"]
                answer = "results: " + " | ".join(seen)
            frames = [chunk({"role": "assistant", "content": answer}), chunk({}, "stop")]
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        frames.append(_frame({**head, "choices": [], "usage": usage}))
        frames.append(b"data: [DONE]\n\n")
        return frames

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.requests.append(body)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for frame in self._frames(cast("list[Json]", body["messages"])):
            await response.write(frame)
        await response.write_eof()
        return response

    async def start(self) -> str:
        """Listen on an ephemeral port of 127.0.0.1; return the base URL (ends in `/v1`)."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = cast("tuple[str, int]", runner.addresses[0])[1]
        self._runner = runner
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()


def profile(base_url: str) -> Json:
    """The `[providers.approval]` profile of a runtime that reaches the server."""
    return {
        "api": "openai-completions",
        "base_url": base_url,
        "auth": "none",
        "models": [{"id": MODEL}],
    }
