"""Shared helpers for the multi-provider adapter tests: recorded fixtures and their checks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from modelwire.assembler import BlockAssembler
from modelwire.vocab import Error, ReasoningBlock, StreamChunk, TextBlock, TextDelta, ToolCallBlock

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures"
PROTOCOL_DIRS = {
    "openai-completions": "openai-chat",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic-messages",
}
REDACTED = "[Reasoning redacted]"


def fixture_cases(api: str) -> list[Any]:
    """pytest params (id = file stem) of every recorded stream of one protocol."""
    folder = FIXTURES / PROTOCOL_DIRS[api]
    if not folder.is_dir():
        raise RuntimeError(f"recorded fixtures absent: {folder} (CI must fail, not skip)")
    return [
        pytest.param(sse, id=sse.stem)
        for sse in sorted(folder.glob("*.sse"))
        if sse.with_suffix(".expected.json").exists()
    ]


def sse_frames(body: bytes) -> list[str]:
    """The `data:` payloads of a recorded SSE body: what a WebSocket server sends instead."""
    out = []
    for event in body.decode().replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].strip() for line in event.split("\n") if line.startswith("data:")]
        if data:
            out.append("\n".join(data))
    return out


def load_case(sse: Path) -> tuple[bytes, dict[str, Any]]:
    """The recorded body and its expected result."""
    return sse.read_bytes(), json.loads(sse.with_suffix(".expected.json").read_text())


_ERROR_TYPE_CODES = {
    "invalid_request_error": "INVALID_REQUEST",
    "overloaded_error": "SERVER",
    "api_error": "SERVER",
    "rate_limit_error": "RATE_LIMIT",
    "authentication_error": "AUTH",
    "server_error": "SERVER",
}
"""What a recorded in-stream error's `type` means in the code table."""


def expected_finish(api: str, expected: dict[str, Any]) -> tuple[str, str | None]:
    """The finish kind our chunk protocol must end in, and the failure code where the
    recording pins one, from the raw provider stop signal.

    Refusals and content-filter stops are one outcome on every protocol (DESIGN §8): an
    `Error` with code CONTENT_FILTER, never EMPTY_RESPONSE; `pause_turn` is a stop (spec §4.5)."""
    raw = expected["finish"]
    error = expected["error"]
    if error is not None:  # an in-stream error: the code its type implies, never the catch-all
        kind = error.get("type") if isinstance(error, dict) else None
        return "error", _ERROR_TYPE_CODES.get(kind or "", "PI_AI_ERROR" if kind else None)
    if expected["extras"].get("refusal") or raw in ("refusal", "content_filter"):
        return "error", "CONTENT_FILTER"
    if raw == "incomplete:content_filter":
        return "error", "CONTENT_FILTER"
    has_content = bool(expected["text"] or expected["reasoning"] or expected["tool_calls"])
    has_content = has_content or bool(expected["extras"].get("redacted_thinking_blocks"))
    if api == "openai-completions":
        kind = {"stop": "stop", "length": "max-tokens", "tool_calls": "tool-calls"}.get(
            raw, "error"
        )
    elif api == "anthropic-messages":
        kind = {
            "end_turn": "stop",
            "pause_turn": "stop",
            "stop_sequence": "stop",
            "max_tokens": "max-tokens",
            "tool_use": "tool-calls",
        }.get(raw, "error")
    else:
        if raw == "completed":
            kind = "tool-calls" if expected["tool_calls"] else "stop"
        elif raw.startswith("incomplete"):
            kind = "max-tokens"
        else:
            kind = "error"
    if kind == "stop" and not has_content:
        return "error", "EMPTY_RESPONSE"
    return kind, None


def check_assembled(
    api: str,
    asm: BlockAssembler,
    expected: dict[str, Any],
    chunks: list[StreamChunk],
    *,
    outcome: tuple[str, str | None] | None = None,
    envelope_api: str | None = None,
) -> None:
    """Assert the assembled result equals the fixture's neutral expected form (`outcome`: the
    finish kind and code when a test overrules the one the raw stop signal implies;
    `envelope_api`: the api the replay envelope names when it is not `api`)."""
    kind, code = outcome or expected_finish(api, expected)
    assert asm.finish.kind == kind
    if code is not None:
        assert isinstance(asm.finish, Error)
        assert asm.finish.failure.code == code
    if code == "CONTENT_FILTER" and expected["extras"].get("refusal"):
        assert expected["extras"]["refusal"].strip() in asm.finish.failure.message  # kept
    blocks = asm.interrupted_blocks() if kind == "error" else asm.blocks()
    streamed = "".join(c.text for c in chunks if isinstance(c, TextDelta))
    assert streamed == expected["text"]
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    # Responses closes a message with the item's whole final text; where the recording dropped
    # some deltas, the collection gives that whole text as `extras.final_text`
    assert text == expected["extras"].get("final_text", expected["text"])
    reasoning = [b.text for b in blocks if isinstance(b, ReasoningBlock) and b.text != REDACTED]
    want_reasoning = expected["reasoning"] or ""
    if api == "openai-responses" and expected["extras"].get("reasoning_blocks"):
        # separators only where the protocol has parts: summary parts join with a blank line
        want_reasoning = "\n\n".join(expected["extras"]["reasoning_blocks"])
    assert "".join(reasoning) == want_reasoning
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    want_calls = [] if kind == "max-tokens" else expected["tool_calls"]
    assert len(calls) == len(want_calls)
    for call, want in zip(calls, want_calls, strict=True):
        assert call.id.split("|")[0] == want["id"]
        assert call.name == want["name"]
        if "input" in want:  # a free-text (custom) tool: its raw input, not JSON
            assert call.arguments == want["input"]
            continue
        if want["arguments_raw"] or not want["arguments"]:
            assert call.arguments == (want["arguments_raw"] or "{}")
        # else the input came whole in the block's start event (no deltas streamed it)
        assert json.loads(call.arguments) == (want["arguments"] or {})
    usage = asm.usage
    want_usage = expected["usage"]
    if want_usage is None:
        assert usage is None  # not reported: no usage, never zeros
    else:
        assert usage is not None
        assert usage.input_tokens == want_usage["input_uncached"]
        assert usage.output_tokens == want_usage["output"]
        assert (usage.cache_read_tokens or 0) == (want_usage["cache_read"] or 0)
        assert (usage.cache_write_tokens or 0) == (want_usage["cache_write"] or 0)
        if want_usage["reasoning"] is not None:
            assert usage.reasoning_tokens == want_usage["reasoning"]
    redacted = expected["extras"].get("redacted_thinking_blocks") or 0
    count = redacted if isinstance(redacted, int) else len(redacted)
    assert sum(isinstance(b, ReasoningBlock) and b.text == REDACTED for b in blocks) == count
    state = asm.replay_state
    if kind in ("stop", "tool-calls", "max-tokens"):
        assert state is not None
        assert state.response["version"] == 2
        assert state.response["api"] == (envelope_api or api)
        signatures = [
            e["thinking_signature"]
            for e in state.blocks or ()
            if e["type"] == "reasoning" and not e.get("redacted")
        ]
        if "thinking_signatures" in expected["extras"] and api == "anthropic-messages":
            assert signatures == expected["extras"]["thinking_signatures"]


async def start_site(app: Any) -> tuple[Any, str]:
    """Run the aiohttp `app` on an ephemeral 127.0.0.1 port: its runner (``await
    runner.cleanup()`` when done) and its base URL ``http://127.0.0.1:PORT``."""
    from aiohttp import web

    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


class Reply:
    """One scripted HTTP reply: a status with a body, or a 200 SSE body in the given reads."""

    def __init__(
        self,
        *,
        status: int = 200,
        reads: list[bytes] | None = None,
        body: str = "",
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        self.status = status
        self.reads = reads
        self.body = body
        self.headers = headers or {}
        self.delay = delay


class MockServer:
    """A real 127.0.0.1 aiohttp server replaying one `Reply` per request and recording requests."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.paths: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.closed = 0
        self._runner: Any = None
        self.url = ""

    async def __aenter__(self) -> MockServer:
        from aiohttp import web

        async def handle(request: web.Request) -> web.StreamResponse:
            self.paths.append(request.path)
            raw = await request.read()
            self.bodies.append(json.loads(raw) if raw else {})
            self.headers.append({k.lower(): v for k, v in request.headers.items()})
            reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
            if reply.reads is None:
                return web.Response(
                    status=reply.status,
                    text=reply.body,
                    headers=reply.headers,
                    content_type="application/json",
                )
            response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            try:
                for data in reply.reads:
                    if reply.delay:
                        await asyncio.sleep(reply.delay)
                    await response.write(data)
                await response.write_eof()
            except (ConnectionResetError, asyncio.CancelledError):
                self.closed += 1
                raise
            return response

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        self._runner, self.url = await start_site(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()


def sse(*events: dict[str, Any] | str) -> list[bytes]:
    """Chat Completions style SSE reads (`data:` lines), one read per event."""
    out = []
    for e in events:
        out.append(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode())
    return out


TEXT_EVENTS = sse(
    {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "hel"}}]},
    {"id": "c1", "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]},
    {"id": "c1", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
    "[DONE]",
)
"""A Chat Completions stream producing "hello" with usage 3/1."""
