"""A local server that speaks the DeepSeek streaming wire format, byte for byte, from a script.

`DemoServer` listens on 127.0.0.1 (in-process, `aiohttp.web`) and answers
`POST <base_url>/chat/completions` with `data: {...}\\n\\n` `chat.completion.chunk` frames:
`reasoning_content` deltas, text deltas, a tool call split over many deltas, a finish frame, a
trailing usage-only frame carrying `prompt_cache_hit_tokens`, then `data: [DONE]`. Which scripted
step a request gets is derived from the request itself (the number of assistant messages it
replays), so retries of a step are answered by the same step; a step's injected failures are
served to its first attempts.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from typing import cast

from aiohttp import web

from .demo_script import InjectedFailure, ScriptedReply, ScriptedStep

__all__ = ["DemoServer", "render_failure_body", "render_reply_frames"]

_DONE = b"data: [DONE]\n\n"
_KEEPALIVE = b": keep-alive\n\n"
JsonObject = dict[str, object]


def _frame(payload: Mapping[str, object]) -> bytes:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return b"".join((b"data: ", text.encode("utf-8"), b"\n\n"))


def render_reply_frames(
    reply: ScriptedReply, *, response_id: str, created: int, model: str
) -> list[bytes]:
    """Render one scripted reply as the exact SSE frames DeepSeek sends (ending in `[DONE]`)."""
    head: JsonObject = {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": "fp_modelwire_demo",
    }

    def chunk(delta: JsonObject, finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _frame({**head, "choices": [choice], "usage": None})

    frames = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    frames.extend(chunk({"content": None, "reasoning_content": part}) for part in reply.reasoning)
    frames.extend(chunk({"content": part, "reasoning_content": None}) for part in reply.content)
    call = reply.tool_call
    if call is not None:
        for n, fragment in enumerate(call.argument_fragments):
            entry: JsonObject = {"index": 0, "function": {"arguments": fragment}}
            if n == 0:
                entry = {
                    "index": 0,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": fragment},
                }
            frames.append(chunk({"tool_calls": [entry]}))
    frames.append(chunk({"content": "", "reasoning_content": None}, reply.finish_reason))
    u = reply.usage
    usage: JsonObject = {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.prompt_cache_hit_tokens},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "prompt_cache_hit_tokens": u.prompt_cache_hit_tokens,
        "prompt_cache_miss_tokens": u.prompt_tokens - u.prompt_cache_hit_tokens,
    }
    frames.append(_frame({**head, "choices": [], "usage": usage}))
    frames.append(_DONE)
    return frames


def render_failure_body(failure: InjectedFailure) -> bytes:
    """The JSON error body DeepSeek returns with a non-2xx status."""
    error = {"message": failure.message, "type": failure.error_type, "param": None, "code": None}
    return json.dumps({"error": error}, separators=(",", ":")).encode("utf-8")


class DemoServer:
    """A scripted DeepSeek-compatible endpoint on 127.0.0.1 (start it, use `base_url`, close it).

    `frame_delay_s` paces the frames so a live display can be watched; `requests` keeps every
    decoded request body and `statuses` the HTTP status each request was answered with.
    """

    def __init__(
        self,
        script: Sequence[ScriptedStep],
        *,
        api_key: str = "demo-key",
        frame_delay_s: float = 0.0,
    ) -> None:
        self._script = tuple(script)
        self._api_key = api_key
        self._frame_delay_s = frame_delay_s
        self._attempts: dict[int, int] = {}
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None
        self.requests: list[JsonObject] = []
        self.statuses: list[int] = []

    @property
    def base_url(self) -> str:
        """The DeepSeek-style base URL (`POST <base_url>/chat/completions`); set by `start()`."""
        if self._base_url is None:
            raise RuntimeError("DemoServer.base_url is available after start()")
        return self._base_url

    async def start(self) -> str:
        """Listen on an ephemeral port of 127.0.0.1 and return the base URL."""
        app = web.Application()
        app.router.add_post("/chat/completions", self._handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = cast("tuple[str, int]", runner.addresses[0])[1]
        self._runner = runner
        self._base_url = f"http://127.0.0.1:{port}"
        return self._base_url

    async def close(self) -> None:
        """Stop listening and drop open connections."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> DemoServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _error(self, status: int, message: str, error_type: str) -> web.Response:
        failure = InjectedFailure(status=status, message=message, error_type=error_type)
        self.statuses.append(status)
        return web.Response(
            status=status, body=render_failure_body(failure), content_type="application/json"
        )

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self._api_key}":
            return self._error(
                401, "Authentication Fails (unknown API key)", "authentication_error"
            )
        try:
            body = json.loads(await request.read())
        except ValueError:
            return self._error(400, "request body is not JSON", "invalid_request_error")
        if not isinstance(body, dict) or body.get("stream") is not True:
            return self._error(400, "this server only streams", "invalid_request_error")
        self.requests.append(body)
        messages = body.get("messages")
        replayed = messages if isinstance(messages, list) else []
        step = sum(1 for m in replayed if isinstance(m, dict) and m.get("role") == "assistant")
        if step >= len(self._script):
            return self._error(400, f"the script has no step {step + 1}", "invalid_request_error")
        scripted = self._script[step]
        attempt = self._attempts.get(step, 0)
        self._attempts[step] = attempt + 1
        if attempt < len(scripted.failures):
            failure = scripted.failures[attempt]
            headers = {"x-request-id": f"demo-{step + 1}-{attempt + 1}"}
            if failure.retry_after is not None:
                headers["Retry-After"] = failure.retry_after
            self.statuses.append(failure.status)
            return web.Response(
                status=failure.status,
                body=render_failure_body(failure),
                content_type="application/json",
                headers=headers,
            )
        model = body.get("model")
        frames = render_reply_frames(
            scripted.reply,
            response_id=f"demo-{step + 1}-{attempt + 1}",
            created=int(time.time()),
            model=model if isinstance(model, str) else "deepseek-v4-flash",
        )
        self.statuses.append(200)
        response = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            },
        )
        await response.prepare(request)
        try:
            await response.write(_KEEPALIVE)
            for frame in frames:
                if self._frame_delay_s > 0:
                    await asyncio.sleep(self._frame_delay_s)
                await response.write(frame)
            await response.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass  # the client went away mid-stream (cancelled by the user): nothing to finish
        return response
