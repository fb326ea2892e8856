"""Helpers for the `bedrock-converse-stream` tests: the recordings, a hand-built model, the
translator driven over the event-stream framer, events encoded by hand, and the neutral check."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec
import pytest
from aiohttp import web
from providers_fixtures import start_site

from modelwire.adapters.providers.compat import NO_SWITCHES, CompatSwitches
from modelwire.adapters.providers.materialize import ModelDescriptor
from modelwire.adapters.providers.protocols.anthropic_stream import REDACTED_THINKING_TEXT
from modelwire.adapters.providers.protocols.bedrock_stream import BedrockTranslator
from modelwire.adapters.providers.protocols.common import ResponseRecord
from modelwire.assembler import BlockAssembler
from modelwire.vocab import Error, ReasoningBlock, StreamChunk, TextBlock, TextDelta, ToolCallBlock
from modelwire.wire.eventstream import EventStreamDecoder, encode_message
from modelwire.wire.pump import translate_reads

API = "bedrock-converse-stream"
FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures"
FOLDER = FIXTURES / "bedrock-converse"


def folder() -> Path:
    """The recordings folder (a missing folder fails the run, never skips it)."""
    if not FOLDER.is_dir():
        raise RuntimeError(f"recorded fixtures absent: {FOLDER} (CI must fail, not skip)")
    return FOLDER


def stream_cases() -> list[Any]:
    """pytest params (id = file stem) of every recorded ConverseStream body."""
    found = [
        pytest.param(path, id=path.stem)
        for path in sorted(folder().glob("*.eventstream"))
        if path.with_suffix(".expected.json").exists()
    ]
    if len(found) != 12:
        raise RuntimeError(f"expected 12 Bedrock recordings in {FOLDER}, found {len(found)}")
    return found


def error_cases() -> list[Any]:
    """pytest params of every recorded Bedrock HTTP error."""
    errors = folder() / "errors"
    return [
        pytest.param(path, id=path.name.removesuffix(".http.json"))
        for path in sorted(errors.glob("*.http.json"))
    ]


def load(path: Path) -> tuple[bytes, dict[str, Any]]:
    """A recorded body and its expected result."""
    return path.read_bytes(), json.loads(path.with_suffix(".expected.json").read_text())


def model(model_id: str = "m", **fields: Any) -> ModelDescriptor:
    """A hand-built `bedrock-converse-stream` model descriptor of route ``br``."""
    compat = fields.pop("compat", None)
    values: dict[str, Any] = {
        "id": model_id,
        "name": model_id,
        "api": API,
        "provider": "br",
        "base_url": "https://bedrock-runtime.us-east-1.amazonaws.com",
        "reasoning": False,
        "thinking_level_map": None,
        "input": ("text", "image"),
        "context_window": 200_000,
        "max_tokens": 8192,
        "configured_max_tokens": None,
        "headers": (),
        "compat": NO_SWITCHES if compat is None else msgspec.convert(compat, CompatSwitches),
    }
    values.update(fields)
    return ModelDescriptor(**values)


def record(answer_tool: str | None = None, context_window: int | None = None) -> ResponseRecord:
    """A fresh response record of route ``br``, model ``m``."""
    rec = ResponseRecord(api=API, provider="br", model="m", context_window=context_window)
    rec.answer_tool = answer_tool
    return rec


def translate(reads: Iterable[bytes], rec: ResponseRecord | None = None) -> list[StreamChunk]:
    """Body reads → chunks through the event-stream framer and the Bedrock translator."""
    out: list[StreamChunk] = []
    translate_reads(reads, BedrockTranslator(rec or record()), out, framer=EventStreamDecoder())
    return out


def event(kind: str, payload: dict[str, Any]) -> bytes:
    """One ``event`` message of type `kind` carrying `payload` as JSON."""
    headers = {":message-type": "event", ":event-type": kind, ":content-type": "application/json"}
    return encode_message(headers, json.dumps(payload).encode())


def exception(kind: str, message: str) -> bytes:
    """One ``exception`` message of type `kind` (``{"message": ...}``)."""
    headers = {
        ":message-type": "exception",
        ":exception-type": kind,
        ":content-type": "application/json",
    }
    return encode_message(headers, json.dumps({"message": message}).encode())


def text_stream(*pieces: str, stop: str = "end_turn", usage: bool = True) -> list[bytes]:
    """A whole text answer: start, one delta per piece, stop, metadata."""
    frames = [event("messageStart", {"role": "assistant"})]
    frames += [
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}}) for p in pieces
    ]
    frames.append(event("contentBlockStop", {"contentBlockIndex": 0}))
    frames.append(event("messageStop", {"stopReason": stop}))
    if usage:
        frames.append(
            event("metadata", {"usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}})
        )
    return frames


def assemble(chunks: list[StreamChunk]) -> BlockAssembler:
    """The chunks folded into an assembler."""
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    return asm


_STOP_KINDS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool-calls"}


def check(chunks: list[StreamChunk], expected: dict[str, Any], kind: str | None = None) -> None:
    """The chunks assemble to the recording's neutral expected form (MANIFEST, Bedrock rules;
    `kind`: the finish kind when a test overrules the one the raw stop reason implies)."""
    asm = assemble(chunks)
    if kind is None:
        kind = "error" if expected["error"] else _STOP_KINDS.get(expected["finish"], "max-tokens")
    assert asm.finish.kind == kind, asm.finish
    blocks = asm.interrupted_blocks() if kind == "error" else asm.blocks()
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == expected["text"]
    assert "".join(b.text for b in blocks if isinstance(b, TextBlock)) == expected["text"]
    reasoning = [
        b.text for b in blocks if isinstance(b, ReasoningBlock) and b.text != REDACTED_THINKING_TEXT
    ]
    assert "".join(reasoning) == (expected["reasoning"] or "")
    redacted = sum(
        isinstance(b, ReasoningBlock) and b.text == REDACTED_THINKING_TEXT for b in blocks
    )
    assert redacted == expected["extras"].get("redacted_reasoning_chunks", 0)
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (w["id"], w["name"], w["arguments_raw"] or "{}") for w in expected["tool_calls"]
    ]
    for call, want in zip(calls, expected["tool_calls"], strict=True):
        assert json.loads(call.arguments) == (want["arguments"] or {})
    want_usage = expected["usage"]
    usage = asm.usage
    assert usage is not None
    assert usage.input_tokens == want_usage["input_uncached"]
    assert usage.output_tokens == want_usage["output"]
    assert (usage.cache_read_tokens or 0) == (want_usage["cache_read"] or 0)
    assert (usage.cache_write_tokens or 0) == (want_usage["cache_write"] or 0)
    assert usage.reasoning_tokens is None  # ConverseStream reports no reasoning count
    if kind == "error":
        assert isinstance(asm.finish, Error)
        return
    state = asm.replay_state
    assert state is not None
    assert state.response["api"] == API
    assert state.response["version"] == 2
    signatures = [
        e["thinking_signature"]
        for e in state.blocks or ()
        if e["type"] == "reasoning" and not e.get("redacted") and "thinking_signature" in e
    ]
    assert signatures == expected["extras"].get("reasoning_signatures", [])


SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
"""The secret access key the SigV4 tests sign with (AWS's documentation example)."""


class Bedrock:
    """A loopback stand-in for bedrock-runtime: replays one body, records the raw requests."""

    def __init__(self, body: bytes, *, status: int = 200, headers: dict[str, str] | None = None):
        self.body = body
        self.status = status
        self.headers = headers or {}
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Bedrock:
        async def handle(request: web.Request) -> web.StreamResponse:
            raw = await request.read()
            seen = {k.lower(): v for k, v in request.headers.items()}
            self.requests.append((request.raw_path, seen, raw))
            if self.status != 200:
                return web.Response(status=self.status, body=self.body, headers=self.headers)
            response = web.StreamResponse(
                headers={"Content-Type": "application/vnd.amazon.eventstream"}
            )
            await response.prepare(request)
            for i in range(0, len(self.body), 613):
                await response.write(self.body[i : i + 613])
            await response.write_eof()
            return response

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        self._runner, self.url = await start_site(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def signature_valid(raw_path: str, headers: dict[str, str], body: bytes) -> bool:
    """The service-side SigV4 check, over the path and headers exactly as received."""
    auth = headers["authorization"]
    scope = auth.split("Credential=")[1].split(",")[0].split("/", 1)[1]
    signed = auth.split("SignedHeaders=")[1].split(",")[0]
    payload = hashlib.sha256(body).hexdigest()
    canonical = "\n".join(
        [
            "POST",
            quote(raw_path, safe="/~"),
            "",
            "".join(f"{n}:{' '.join(headers[n].split())}\n" for n in signed.split(";")),
            signed,
            payload,
        ]
    )
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    to_sign = f"AWS4-HMAC-SHA256\n{headers['x-amz-date']}\n{scope}\n{digest}"
    key = ("AWS4" + SECRET).encode()
    for part in scope.split("/"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return headers["x-amz-content-sha256"] == payload and auth.endswith(f"Signature={expected}")
