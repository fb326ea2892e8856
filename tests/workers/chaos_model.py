"""A scripted OpenAI-compatible model server on 127.0.0.1 that injects faults deterministically.

`ChaosModel` (an `aiohttp.web` app) answers `POST /v1/chat/completions` with `"stream": true`
the way OpenAI's Chat Completions stream does (`text/event-stream`, `data: {chunk}\\n\\n` frames
shaped like the recordings under `shared/fixtures/openai-chat`, a finish frame, a usage-only
frame, `data: [DONE]`). What it answers depends only on the request:

- the conversation *key* is the text of the first user message (a string, or the joined
  `{"type": "text"}` parts of a list); the *step* is the number of assistant messages; with
  `per_turn=True` the key is the text of the *last* user message and the step the number of
  assistant messages after it (`turn_key`), so every turn of a multi-turn session plays the
  script afresh under its own key (a turn queue's tickets, one text each);
- step 0 answers one call of the tool `bump` with arguments `{"key": KEY}` (call id
  `call_<8 hex of sha256(KEY)>_0`, the arguments streamed in three fragments), finish
  `tool_calls`; every later step answers the text `done KEY` in a few deltas, finish `stop`.

Faults: `planned_fault(key, step)` draws a number in [0, 1) from `sha256(f"{key}|{step}")`
(`salt|` in front when a salt is given); below `fail_rate` the step's FIRST attempt is answered
HTTP 503 with `{"error": {"message": "overloaded", "type": "server_error"}}`, else below
`fail_rate + stall_rate` the first attempt *stalls*: 200 headers and one chunk, then nothing
until the client disconnects or the server stops (the stream is then cut, never finished). At
most one fault per (key, step); every later attempt succeeds. `chunk_delay_s` paces the frames.

Counters per (key, step) — `attempts`, `faults`, `completed` (streams sent through `[DONE]`) —
come from `stats()` in-process and from `GET /stats` as JSON (`parse_stats` reads that back);
`in_flight` counts the handlers still running. Every wait in a handler is on the shutdown event,
so `stop()` returns promptly even during a stall. `ChaosModel.run_in_thread(...)` (or
`start_in_thread()` on an instance) runs the server on its own event loop in a daemon thread
for synchronous and multi-process tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Literal, TypeAlias, cast

from aiohttp import web

__all__ = [
    "TOOL_NAME",
    "ChaosModel",
    "Fault",
    "StepStats",
    "answer_text",
    "call_id",
    "conversation_key",
    "parse_stats",
    "turn_key",
]

Fault: TypeAlias = Literal["fail", "stall"]
Json: TypeAlias = dict[str, object]

TOOL_NAME = "bump"
_DONE = b"data: [DONE]\n\n"
_POLL_S = 0.02  # how often a stalled handler looks whether its client went away


@dataclass(frozen=True, slots=True)
class StepStats:
    """The counters of one (key, step): requests seen, faults injected, streams finished."""

    attempts: int = 0
    faults: int = 0
    completed: int = 0


def call_id(key: str, step: int) -> str:
    """The tool-call id the server gives step `step` of conversation `key`."""
    return f"call_{hashlib.sha256(key.encode()).hexdigest()[:8]}_{step}"


def answer_text(key: str) -> str:
    """The final answer of conversation `key`."""
    return f"done {key}"


def _text_of(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ]
        return "".join(parts) if parts else None
    return None


def conversation_key(messages: object) -> str | None:
    """The text of the first user message of a request's `messages`, or None if it has none."""
    if not isinstance(messages, list):
        return None
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get("content"))
    return None


def turn_key(messages: object) -> tuple[str, int] | None:
    """The text of the last user message of a request's `messages` and the number of assistant
    messages after it, or None if it has no user message."""
    if not isinstance(messages, list):
        return None
    for back, message in enumerate(reversed(messages)):
        if isinstance(message, dict) and message.get("role") == "user":
            text = _text_of(message.get("content"))
            if text is None:
                return None
            later = messages[len(messages) - back :]
            return text, sum(
                1 for m in later if isinstance(m, dict) and m.get("role") == "assistant"
            )
    return None


def parse_stats(payload: Mapping[str, object]) -> dict[tuple[str, int], StepStats]:
    """The `GET /stats` JSON read back into `stats()`'s shape."""
    steps = payload.get("steps")
    result: dict[tuple[str, int], StepStats] = {}
    for row in steps if isinstance(steps, list) else []:
        entry = cast("dict[str, object]", row)
        counters = {
            name: int(cast("int", entry[name])) for name in ("attempts", "faults", "completed")
        }
        result[(str(entry["key"]), int(cast("int", entry["step"])))] = StepStats(**counters)
    return result


def _frame(payload: Mapping[str, object]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class _Gone(Exception):
    """The client went away or the server is stopping: end the handler without finishing."""


class ChaosModel:
    """The scripted server (see the module docstring). Rates are in [0, 1]; `model` is the
    model name put in chunks when the request names none."""

    def __init__(
        self,
        *,
        fail_rate: float = 0.0,
        stall_rate: float = 0.0,
        chunk_delay_s: float = 0.02,
        salt: str = "",
        model: str = "chaos-1",
        per_turn: bool = False,
    ) -> None:
        for name, rate in (("fail_rate", fail_rate), ("stall_rate", stall_rate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {rate!r}")
        if chunk_delay_s < 0:
            raise ValueError(f"chunk_delay_s must be >= 0, got {chunk_delay_s!r}")
        self.fail_rate = fail_rate
        self.stall_rate = stall_rate
        self.chunk_delay_s = chunk_delay_s
        self.salt = salt
        self.model = model
        self.per_turn = per_turn
        self._lock = threading.Lock()  # stats() may be called from another thread
        self._stats: dict[tuple[str, int], StepStats] = {}
        self._in_flight = 0
        self._shutdown: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None

    # ---- the script ------------------------------------------------------------------------

    def planned_fault(self, key: str, step: int) -> Fault | None:
        """The fault the first attempt of (key, step) gets, if any (a pure function of the
        arguments, the rates and the salt)."""
        seed = f"{key}|{step}" if not self.salt else f"{self.salt}|{key}|{step}"
        digest = hashlib.sha256(seed.encode()).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        if draw < self.fail_rate:
            return "fail"
        if draw < self.fail_rate + self.stall_rate:
            return "stall"
        return None

    def _frames(self, key: str, step: int, model: str, attempt: int) -> list[bytes]:
        head: Json = {
            "id": f"chatcmpl-{call_id(key, step)[5:]}-{attempt}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": None,
        }

        def chunk(delta: Json, finish_reason: str | None = None) -> bytes:
            choice: Json = {"index": 0, "delta": delta, "finish_reason": finish_reason}
            return _frame({**head, "choices": [choice], "usage": None})

        frames: list[bytes]
        if step == 0:
            value = json.dumps(key)
            fragments = ['{"key":', value, "}"]
            opening: Json = {
                "index": 0,
                "id": call_id(key, step),
                "type": "function",
                "function": {"name": TOOL_NAME, "arguments": ""},
            }
            frames = [
                chunk(
                    {"role": "assistant", "content": None, "tool_calls": [opening], "refusal": None}
                )
            ]
            frames += [
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
                for part in fragments
            ]
            frames.append(chunk({}, "tool_calls"))
            completion_tokens = len(fragments) + 1
        else:
            middle = len(key) // 2
            parts = [part for part in ("done", " " + key[:middle], key[middle:]) if part]
            frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
            frames += [chunk({"content": part}) for part in parts]
            frames.append(chunk({}, "stop"))
            completion_tokens = len(parts)
        prompt_tokens = 10 + 3 * step + len(key) // 4
        usage: Json = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        frames.append(_frame({**head, "choices": [], "usage": usage}))
        frames.append(_DONE)
        return frames

    # ---- counters --------------------------------------------------------------------------

    def stats(self) -> dict[tuple[str, int], StepStats]:
        """A snapshot of the counters per (key, step) (thread-safe)."""
        with self._lock:
            return dict(self._stats)

    def stats_json(self) -> Json:
        """The counters as `GET /stats` returns them: `{"steps": [{key, step, attempts, faults,
        completed}, ...]}` sorted by (key, step)."""
        rows = [
            {"key": key, "step": step, **asdict(counters)}
            for (key, step), counters in sorted(self.stats().items())
        ]
        return {"steps": rows}

    @property
    def in_flight(self) -> int:
        """How many chat-completions handlers are running now (stalls included)."""
        with self._lock:
            return self._in_flight

    def _count(self, key: str, step: int, **add: int) -> StepStats:
        with self._lock:
            old = self._stats.get((key, step), StepStats())
            new = StepStats(
                attempts=old.attempts + add.get("attempts", 0),
                faults=old.faults + add.get("faults", 0),
                completed=old.completed + add.get("completed", 0),
            )
            self._stats[(key, step)] = new
            return new

    # ---- HTTP ------------------------------------------------------------------------------

    @staticmethod
    def _error(status: int, message: str, error_type: str) -> web.Response:
        body = {"error": {"message": message, "type": error_type}}
        return web.json_response(body, status=status)

    async def _handle_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats_json())

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self._in_flight += 1
        try:
            return await self._chat(request)
        finally:
            with self._lock:
                self._in_flight -= 1

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.read())
        except ValueError:
            return self._error(400, "request body is not JSON", "invalid_request_error")
        if not isinstance(body, dict) or body.get("stream") is not True:
            return self._error(400, "this server only streams", "invalid_request_error")
        messages = body.get("messages")
        found = turn_key(messages) if self.per_turn else None
        key = found[0] if found is not None else conversation_key(messages)
        if key is None:
            return self._error(400, "the request has no user message", "invalid_request_error")
        listed = cast("list[object]", messages)
        step = (
            found[1]
            if found is not None
            else sum(1 for m in listed if isinstance(m, dict) and m.get("role") == "assistant")
        )
        attempt = self._count(key, step, attempts=1).attempts
        fault = self.planned_fault(key, step) if attempt == 1 else None
        if fault is not None:
            self._count(key, step, faults=1)
        if fault == "fail":
            return self._error(503, "overloaded", "server_error")
        model = body.get("model")
        frames = self._frames(key, step, model if isinstance(model, str) else self.model, attempt)
        response = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            },
        )
        await response.prepare(request)
        try:
            if fault == "stall":
                await response.write(frames[0])
                await self._stall(request)
            for n, frame in enumerate(frames):
                if n:
                    await self._pause()
                await response.write(frame)
            await response.write_eof()
        except (_Gone, ConnectionError):
            self._cut(request)
            return response
        self._count(key, step, completed=1)
        return response

    def _stopping(self) -> asyncio.Event:
        assert self._shutdown is not None, "the server is not running"
        return self._shutdown

    async def _pause(self) -> None:
        """Sleep `chunk_delay_s`, ending early with `_Gone` when the server stops."""
        if self.chunk_delay_s <= 0:
            await asyncio.sleep(0)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping().wait(), self.chunk_delay_s)
        if self._stopping().is_set():
            raise _Gone

    async def _stall(self, request: web.Request) -> None:
        """Send nothing until the client disconnects or the server stops (then `_Gone`)."""
        while not self._stopping().is_set():
            transport = request.transport
            if transport is None or transport.is_closing():
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping().wait(), _POLL_S)
        raise _Gone

    @staticmethod
    def _cut(request: web.Request) -> None:
        """Drop the connection so the client sees a cut stream, never a finished one."""
        transport = request.transport
        if transport is not None and not transport.is_closing():
            transport.abort()

    # ---- lifecycle -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1` (after `start()`)."""
        if self._base_url is None:
            raise RuntimeError("ChaosModel.base_url is available after start()")
        return self._base_url

    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:PORT` (`GET {root_url}/stats`)."""
        return self.base_url.removesuffix("/v1")

    async def start(self) -> str:
        """Listen on an ephemeral port of 127.0.0.1; return the base URL (ends in `/v1`)."""
        if self._runner is not None:
            raise RuntimeError("ChaosModel is already running")
        self._shutdown = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle_chat)
        app.router.add_get("/stats", self._handle_stats)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=5.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = cast("tuple[str, int]", runner.addresses[0])[1]
        self._runner = runner
        self._base_url = f"http://127.0.0.1:{port}/v1"
        return self._base_url

    async def stop(self) -> None:
        """Wake every waiting handler (their streams are cut), then close the server."""
        if self._runner is None:
            return
        runner, self._runner = self._runner, None
        self._stopping().set()
        await runner.cleanup()

    async def __aenter__(self) -> ChaosModel:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- in a thread -----------------------------------------------------------------------

    def start_in_thread(self, *, timeout_s: float = 30.0) -> tuple[str, Callable[[], None]]:
        """Run this server on its own event loop in a daemon thread: (base URL, stop). `stop()`
        (idempotent) stops the server, ends the loop and joins the thread."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        thread = threading.Thread(target=serve, name="chaos-model", daemon=True)
        thread.start()
        if not ready.wait(timeout_s):
            raise RuntimeError("ChaosModel did not start in its thread")
        if failure:
            raise RuntimeError("ChaosModel failed to start in its thread") from failure[0]
        stopped = threading.Event()

        def stop() -> None:
            if stopped.is_set():
                return
            stopped.set()
            asyncio.run_coroutine_threadsafe(self.stop(), loop).result(timeout_s)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout_s)

        return self.base_url, stop

    @classmethod
    def run_in_thread(
        cls,
        *,
        fail_rate: float = 0.0,
        stall_rate: float = 0.0,
        chunk_delay_s: float = 0.02,
        salt: str = "",
        model: str = "chaos-1",
    ) -> tuple[str, Callable[[], None]]:
        """`ChaosModel(...).start_in_thread()`: a server in a daemon thread, (base URL, stop).
        Its counters are at `GET /stats` (`parse_stats`)."""
        server = cls(
            fail_rate=fail_rate,
            stall_rate=stall_rate,
            chunk_delay_s=chunk_delay_s,
            salt=salt,
            model=model,
        )
        return server.start_in_thread()
