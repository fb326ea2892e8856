"""Shared helpers for the `google-generative-ai` tests: the recorded Gemini fixtures, their
neutral check, a hand-built model descriptor and a loopback server that records whole requests
(path, query, headers, body)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from providers_fixtures import start_site

from modelwire.adapters.providers.compat import CompatSwitches
from modelwire.adapters.providers.context import NContext, to_context
from modelwire.adapters.providers.materialize import ModelDescriptor
from modelwire.adapters.providers.protocols.common import ResponseRecord
from modelwire.adapters.providers.protocols.google_stream import GoogleTranslator
from modelwire.adapters.providers.replay_state import restore_assistant
from modelwire.assembler import BlockAssembler
from modelwire.vocab import (
    Error,
    Message,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolSchema,
)
from modelwire.wire.pump import translate_reads

API = "google-generative-ai"
FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures"
GEMINI = FIXTURES / "google-generative-ai"
STRUCTURED = FIXTURES / "structured-output"


def _folder(path: Path) -> Path:
    if not path.is_dir():
        raise RuntimeError(f"recorded fixtures absent: {path} (CI must fail, not skip)")
    return path


def stream_cases() -> list[Any]:
    """pytest params (id = file stem) of every recorded Gemini stream."""
    return [
        pytest.param(sse, id=sse.stem)
        for sse in sorted(_folder(GEMINI).glob("*.sse"))
        if sse.with_suffix(".expected.json").exists()
    ]


def structured_cases() -> list[Any]:
    """The Gemini recordings of the structured-output folder."""
    out = []
    for sse in sorted(_folder(STRUCTURED).glob("*.sse")):
        expected = json.loads(sse.with_suffix(".expected.json").read_text())
        if expected["extras"].get("protocol") == "gemini":
            out.append(pytest.param(sse, id=sse.stem))
    return out


def error_cases() -> list[Any]:
    """Every recorded Gemini HTTP error (`*.http.json`)."""
    folder = _folder(GEMINI / "errors")
    return [
        pytest.param(p, id=p.name.removesuffix(".http.json"))
        for p in sorted(folder.glob("*.http.json"))
    ]


def load_case(sse: Path) -> tuple[bytes, dict[str, Any]]:
    """The recorded body and its expected result."""
    return sse.read_bytes(), json.loads(sse.with_suffix(".expected.json").read_text())


def cut(body: bytes, cuts: Iterable[int]) -> list[bytes]:
    """`body` split at the sorted offsets `cuts`."""
    points = sorted(set(cuts))
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


def translate(
    reads: Iterable[bytes], *, model: str = "fixture-model", context_window: int | None = None
) -> tuple[list[StreamChunk], ResponseRecord]:
    """Chunks of a Gemini body given as reads (no I/O), and the record they were written into."""
    record = ResponseRecord(api=API, provider="gem", model=model, context_window=context_window)
    out: list[StreamChunk] = []
    translate_reads(reads, GoogleTranslator(record), out)
    return out, record


def assemble(chunks: list[StreamChunk]) -> BlockAssembler:
    """The chunks pushed through a `BlockAssembler`."""
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    return asm


_FILTERED = {
    "SAFETY",
    "RECITATION",
    "PROHIBITED_CONTENT",
    "BLOCKLIST",
    "SPII",
    "IMAGE_SAFETY",
}


def gemini_finish(expected: dict[str, Any]) -> tuple[str, str | None]:
    """The finish kind (and failure code) a recording's raw ``finishReason`` must end in: STOP is
    a stop, or tool calls when the response holds function calls; MAX_TOKENS is max-tokens; the
    safety family is a CONTENT_FILTER refusal; OTHER with nothing produced is EMPTY_RESPONSE."""
    raw = expected["finish"]
    content = bool(expected["text"] or expected["reasoning"] or expected["tool_calls"])
    if raw == "STOP":
        if expected["tool_calls"]:
            return "tool-calls", None
        return ("stop", None) if content else ("error", "EMPTY_RESPONSE")
    if raw == "MAX_TOKENS":
        return "max-tokens", None
    if raw in _FILTERED or raw.startswith("promptFeedback:"):
        return "error", "CONTENT_FILTER"
    if raw == "OTHER" and not content:
        return "error", "EMPTY_RESPONSE"
    raise AssertionError(f"no rule for recorded finish {raw!r}")


def check_gemini(
    asm: BlockAssembler,
    expected: dict[str, Any],
    chunks: list[StreamChunk],
    *,
    outcome: tuple[str, str | None] | None = None,
) -> None:
    """Assert the assembled result equals a Gemini recording's neutral expected form: text,
    reasoning, tool calls (Gemini's ids kept, absent ones minted and unique), finish, usage
    buckets, and every thought signature byte-exact in the replay envelope (`outcome`: the
    finish kind and code when a test overrules the one the raw finish reason implies)."""
    kind, code = outcome or gemini_finish(expected)
    assert asm.finish.kind == kind
    if code is not None:
        assert isinstance(asm.finish, Error)
        assert asm.finish.failure.code == code
    blocks = asm.interrupted_blocks() if kind == "error" else asm.blocks()
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == expected["text"]
    assert "".join(b.text for b in blocks if isinstance(b, TextBlock)) == expected["text"]
    reasoning = "".join(b.text for b in blocks if isinstance(b, ReasoningBlock))
    assert reasoning == (expected["reasoning"] or "")
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    want = [] if kind == "max-tokens" else expected["tool_calls"]
    assert len(calls) == len(want)
    for call, spec in zip(calls, want, strict=True):
        if spec["id"] is None:
            assert call.id  # minted
        else:
            assert call.id == spec["id"]  # Gemini's own id kept
        assert call.name == spec["name"]
        assert call.arguments == spec["arguments_raw"]
        assert json.loads(call.arguments) == (spec["arguments"] or {})
    assert len({c.id for c in calls}) == len(calls)  # unique within the response
    usage, want_usage = asm.usage, expected["usage"]
    assert usage is not None and want_usage is not None
    assert usage.input_tokens == want_usage["input_uncached"]
    assert usage.output_tokens == want_usage["output"]
    assert (usage.cache_read_tokens or 0) == (want_usage["cache_read"] or 0)
    assert usage.cache_write_tokens is None
    assert usage.reasoning_tokens == want_usage["reasoning"]
    state = asm.replay_state
    if kind == "error":
        assert state is None
        return
    assert state is not None
    assert state.response["api"] == API
    assert state.response.get("response_id") == expected["extras"]["response_id"]
    entries = state.blocks or ()
    call_signatures = [e.get("thought_signature") for e in entries if e["type"] == "tool-call"]
    if kind != "max-tokens":
        assert call_signatures == expected["extras"]["tool_call_thought_signatures"]
    kept = {
        e.get("text_signature") or e.get("thinking_signature")
        for e in entries
        if e["type"] != "tool-call"
    } - {None}
    recorded = {
        s["signature"]
        for s in expected["extras"]["thought_signatures"]
        if s["on"] in ("text", "thought")
    }
    assert kept == recorded


def model(
    model_id: str = "gemini-2.5-flash",
    *,
    base_url: str = "https://generativelanguage.googleapis.com/v1beta",
    reasoning: bool = False,
    level_map: Mapping[str, str | None] | None = None,
    image: bool = True,
    provider: str = "gem",
    context_window: int = 1_048_576,
    max_tokens: int = 65_536,
) -> ModelDescriptor:
    """A hand-built Gemini model descriptor."""
    return ModelDescriptor(
        id=model_id,
        name=model_id,
        api=API,
        provider=provider,
        base_url=base_url,
        reasoning=reasoning,
        thinking_level_map=level_map,
        input=("text", "image") if image else ("text",),
        context_window=context_window,
        max_tokens=max_tokens,
        configured_max_tokens=None,
        headers=(),
        compat=CompatSwitches(),
    )


def context(
    *messages: Message, system: str | None = None, tools: Iterable[ToolSchema] = ()
) -> NContext:
    """The neutral context of harness messages (replay state restored, images read as is)."""
    return to_context(
        messages,
        system=system,
        tools=tuple(tools),
        restore=lambda m, s: restore_assistant(m, s),
        read_image=lambda block: b"\x89PNG-bytes",
    )


class Recorded:
    """One request a `GeminiServer` received."""

    def __init__(self, path: str, query: str, headers: dict[str, str], body: dict[str, Any]):
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body


class GeminiServer:
    """A real 127.0.0.1 aiohttp server answering every request with one status and body (SSE
    reads for a 200), recording each request whole."""

    def __init__(
        self,
        *,
        reads: list[bytes] | None = None,
        status: int = 200,
        body: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.reads = reads or []
        self.status = status
        self.body = body
        self.headers = dict(headers or {})
        self.requests: list[Recorded] = []
        self.url = ""
        self._runner: Any = None

    async def __aenter__(self) -> GeminiServer:
        from aiohttp import web

        async def handle(request: web.Request) -> web.StreamResponse:
            raw = await request.read()
            self.requests.append(
                Recorded(
                    request.path,
                    request.query_string,
                    {k.lower(): v for k, v in request.headers.items()},
                    json.loads(raw) if raw else {},
                )
            )
            if self.status != 200:
                return web.Response(
                    status=self.status,
                    text=self.body,
                    headers=self.headers,
                    content_type="application/json",
                )
            response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for data in self.reads:
                await response.write(data)
            await response.write_eof()
            return response

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        self._runner, self.url = await start_site(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()


def sse(*events: dict[str, Any] | str) -> list[bytes]:
    """Gemini-framed SSE reads (``data:`` + CRLF CRLF), one read per event."""
    return [f"data: {e if isinstance(e, str) else json.dumps(e)}\r\n\r\n".encode() for e in events]
