"""Helpers for the recordings of the new protocols (Mistral, Azure OpenAI, local servers): the
folders, the neutral expected outcome per dialect, the assembled-result check and a loopback
server that records what it was sent (path with query, headers, body)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from providers_fixtures import start_site

from modelwire.adapters.providers.compat import NO_SWITCHES, CompatSwitches
from modelwire.adapters.providers.materialize import ModelDescriptor
from modelwire.adapters.providers.protocols.common import ResponseRecord
from modelwire.adapters.providers.protocols.spec import WireProtocol
from modelwire.assembler import BlockAssembler
from modelwire.vocab import Error, ReasoningBlock, StreamChunk, TextBlock, TextDelta, ToolCallBlock
from modelwire.wire.pump import translate_reads

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures"

_KINDS = {
    # dialect: raw provider stop signal → our finish kind
    "chat": {"stop": "stop", "length": "max-tokens", "tool_calls": "tool-calls"},
    "mistral": {
        "stop": "stop",
        "length": "max-tokens",
        "model_length": "max-tokens",
        "tool_calls": "tool-calls",
    },
}


def folder(name: str) -> Path:
    """A recordings folder; absent or empty is an error (CI must fail, never skip)."""
    path = FIXTURES / name
    if not path.is_dir() or not any(path.glob("*.sse")):
        raise RuntimeError(f"recorded fixtures absent: {path} (CI must fail, not skip)")
    return path


def stream_cases(name: str) -> list[Any]:
    """pytest params (id = file stem) of every recorded stream of a folder."""
    return [
        pytest.param(sse, id=sse.stem)
        for sse in sorted(folder(name).glob("*.sse"))
        if sse.with_suffix(".expected.json").exists()
    ]


def error_cases(name: str) -> list[Any]:
    """pytest params of every recorded HTTP error (`<folder>/errors/*.http.json`)."""
    path = folder(name) / "errors"
    found = sorted(path.glob("*.http.json"))
    if not found:
        raise RuntimeError(f"recorded error fixtures absent: {path}")
    return [pytest.param(p, id=p.name.removesuffix(".http.json")) for p in found]


def load(sse: Path) -> tuple[bytes, dict[str, Any]]:
    """The recorded body and its expected result."""
    return sse.read_bytes(), json.loads(sse.with_suffix(".expected.json").read_text())


def request_body(sse: Path) -> dict[str, Any] | None:
    """The request body the recording was answered to, when the source kept it."""
    path = sse.with_name(sse.name.removesuffix(".sse") + ".request.json")
    return json.loads(path.read_text()) if path.exists() else None


def dialect_of(body: bytes) -> str:
    """`responses` for a Responses stream, else `chat` (sniffed like the collection did)."""
    return "responses" if b'"type":"response.' in body else "chat"


def split(body: bytes, cuts: Iterable[int]) -> list[bytes]:
    """`body` cut at the given offsets (sorted, deduplicated, inside the body)."""
    points = sorted({c for c in cuts if 0 < c < len(body)})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


def translate(
    protocol: WireProtocol, reads: list[bytes], model: str = "fixture-model"
) -> tuple[BlockAssembler, list[StreamChunk]]:
    """Run reads through `protocol`'s translator (no I/O) and assemble the chunks."""
    record = ResponseRecord(
        api=protocol.api, provider="fixture-route", model=model, context_window=None
    )
    chunks: list[StreamChunk] = []
    translate_reads(reads, protocol.translator(record), chunks)
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    return asm, chunks


def expected_outcome(dialect: str, expected: dict[str, Any]) -> tuple[str, str | None]:
    """The finish kind (and failure code where one is pinned) a recording must end in."""
    raw = expected["finish"]
    if expected["error"] is not None:
        return "error", None
    if raw in ("content_filter", "incomplete:content_filter") or expected["extras"].get("refusal"):
        return "error", "CONTENT_FILTER"
    if dialect == "responses":
        if raw == "completed":
            kind = "tool-calls" if expected["tool_calls"] else "stop"
        else:
            kind = "max-tokens" if raw.startswith("incomplete") else "error"
    else:
        kind = _KINDS[dialect].get(raw, "error")
    content = expected["text"] or expected["reasoning"] or expected["tool_calls"]
    if kind == "stop" and not content:
        return "error", "EMPTY_RESPONSE"
    return kind, None


def check_recording(
    api: str,
    dialect: str,
    asm: BlockAssembler,
    expected: dict[str, Any],
    chunks: list[StreamChunk],
    *,
    outcome: tuple[str, str | None] | None = None,
) -> None:
    """Assert the assembled result equals the recording's neutral expected form (`outcome`: the
    finish kind and code when a test overrules the one the raw stop signal implies)."""
    kind, code = outcome or expected_outcome(dialect, expected)
    assert asm.finish is not None
    assert asm.finish.kind == kind, asm.finish
    if code is not None:
        assert isinstance(asm.finish, Error)
        assert asm.finish.failure.code == code
    blocks = asm.interrupted_blocks() if kind == "error" else asm.blocks()
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == expected["text"]
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    assert text == expected["extras"].get("final_text", expected["text"])
    reasoning = "".join(b.text for b in blocks if isinstance(b, ReasoningBlock))
    want_reasoning = expected["reasoning"] or ""
    if dialect == "responses" and expected["extras"].get("reasoning_blocks"):
        want_reasoning = "\n\n".join(expected["extras"]["reasoning_blocks"])
    assert reasoning == want_reasoning
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    want_calls = [] if kind == "max-tokens" else expected["tool_calls"]
    assert len(calls) == len(want_calls)
    for call, want in zip(calls, want_calls, strict=True):
        assert call.id.split("|")[0] == want["id"]
        assert call.name == want["name"]
        if want["arguments_raw"] or not want["arguments"]:
            assert call.arguments == (want["arguments_raw"] or "{}")
        assert json.loads(call.arguments) == (want["arguments"] or {})
    _check_usage(asm, expected["usage"])
    if kind in ("stop", "tool-calls", "max-tokens"):
        state = asm.replay_state
        assert state is not None
        assert state.response["version"] == 2
        assert state.response["api"] == api


def _check_usage(asm: BlockAssembler, want: dict[str, Any] | None) -> None:
    usage = asm.usage
    if want is None:
        assert usage is None  # not reported: no usage, never zeros
        return
    assert usage is not None
    assert usage.input_tokens == want["input_uncached"]
    assert usage.output_tokens == want["output"]
    assert (usage.cache_read_tokens or 0) == (want["cache_read"] or 0)
    assert (usage.cache_write_tokens or 0) == (want["cache_write"] or 0)
    if want["reasoning"] is not None:
        assert usage.reasoning_tokens == want["reasoning"]
    else:
        assert usage.reasoning_tokens is None


class Seen:
    """One request a `Loopback` server received."""

    def __init__(self, path_qs: str, headers: dict[str, str], body: dict[str, Any]) -> None:
        self.path_qs = path_qs
        self.headers = headers
        self.body = body


class Loopback:
    """A real 127.0.0.1 aiohttp server answering each request with a scripted reply (an SSE body
    in the given reads, per request with `script`, or a status with a body) and recording each
    request."""

    def __init__(
        self,
        *,
        reads: list[bytes] | None = None,
        script: list[list[bytes]] | None = None,
        status: int = 200,
        body: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        # `script`: the reads of each request in turn (the last one repeats)
        self.script = script if script is not None else (None if reads is None else [reads])
        self.status = status
        self.body = body
        self.headers = headers or {}
        self.seen: list[Seen] = []
        self.url = ""
        self._runner: Any = None

    async def __aenter__(self) -> Loopback:
        from aiohttp import web

        async def handle(request: web.Request) -> web.StreamResponse:
            raw = await request.read()
            headers = {k.lower(): v for k, v in request.headers.items()}
            self.seen.append(Seen(request.path_qs, headers, json.loads(raw) if raw else {}))
            if self.script is None:
                return web.Response(
                    status=self.status,
                    text=self.body,
                    headers=self.headers,
                    content_type="application/json",
                )
            response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for data in self.script[min(len(self.seen), len(self.script)) - 1]:
                await response.write(data)
            await response.write_eof()
            return response

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        self._runner, self.url = await start_site(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()


def sse_events(*events: dict[str, Any] | str) -> bytes:
    """A Chat Completions style SSE body (`data:` lines) from JSON events or raw strings."""
    return b"".join(
        f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events
    )


def descriptor(
    api: str,
    model_id: str = "m",
    *,
    base_url: str = "https://api.example.test",
    provider: str = "r",
    reasoning: bool = False,
    level_map: dict[str, str | None] | None = None,
    modalities: tuple[str, ...] = ("text",),
    api_version: str | None = None,
    compat: CompatSwitches = NO_SWITCHES,
    context_window: int = 128_000,
    max_tokens: int = 16_384,
) -> ModelDescriptor:
    """A hand-built model descriptor (what a route's materialization would resolve)."""
    return ModelDescriptor(
        id=model_id,
        name=model_id,
        api=api,
        provider=provider,
        base_url=base_url,
        reasoning=reasoning,
        thinking_level_map=level_map,
        input=modalities,
        context_window=context_window,
        max_tokens=max_tokens,
        configured_max_tokens=None,
        headers=(),
        compat=compat,
        api_version=api_version,
    )
