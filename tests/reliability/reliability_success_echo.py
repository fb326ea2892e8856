"""A real aiohttp.web server on 127.0.0.1 that answers every request *successfully* while echoing
the caller's credential in every field a provider says about its response: the response id, the
model name, the system fingerprint, item ids, the tool call's id, and the response headers
(request ids, model, rate-limit and processing headers).

A request is first answered with a call of the `lookup` tool; once a request carries the tool's
result (`TOOL_RESULT`), with the text `ANSWER`.

`kind` picks the protocol (DeepSeek and the providers' Chat Completions, Responses, Anthropic
Messages, Gemini, Mistral and Bedrock ConverseStream, with an API key as Bedrock's bearer token); with `echo` off the same fields carry harmless values, so a test
can show that the fields it scans do reach the surfaces it scans.
"""

from __future__ import annotations

import json
from typing import Final

from aiohttp import web
from catchall import serve_all
from reliability_wire import sse

from modelwire.wire.eventstream import encode_message

__all__ = [
    "ANSWER",
    "KINDS",
    "NAMELESS",
    "SAFE_ID",
    "SIGNATURE",
    "TOOL",
    "TOOL_RESULT",
    "SuccessEchoServer",
]

KINDS: Final = (
    "deepseek",
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
    "mistral-conversations",
    "bedrock-converse-stream",
)
NAMELESS: Final = frozenset({"bedrock-converse-stream"})
"""Protocols whose stream names no response id or model (only headers and the tool call's id)."""
ANSWER: Final = "All is well."
TOOL: Final = "lookup"
TOOL_RESULT: Final = "TOOL-RESULT-OK"
SIGNATURE: Final = "c2lnbmVk/sk-notTheKey0123456789+Bearer/aGk="
"""An Anthropic thinking signature (opaque, sent back on the next request) that holds text
shaped like a key and a Bearer token, but not the key: redaction must leave it intact."""
SAFE_ID: Final = "resp-harmless-0001"


def _credential(request: web.Request) -> str:
    for name in ("Authorization", "x-api-key", "x-goog-api-key"):
        value = request.headers.get(name, "")
        if value:
            return value.partition(" ")[2] if name == "Authorization" else value
    return "no-key-sent"


def _headers(key: str) -> dict[str, str]:
    return {
        "Content-Type": "text/event-stream",
        "x-request-id": key,
        "request-id": key,
        "x-deepseek-request-id": key,
        "openai-request-id": key,
        "openai-model": key,
        "openai-organization": key,
        "openai-processing-ms": key,
        "anthropic-organization-id": key,
        "x-ratelimit-limit-requests": key,
        "x-ratelimit-remaining-requests": key,
        "x-ratelimit-reset-requests": key,
        "anthropic-ratelimit-requests-remaining": key,
        "x-goog-request-id": key,
        "x-amzn-requestid": key,
        "mistral-correlation-id": key,
        "cf-ray": key,
        "x-echo": f"Bearer {key}",
    }


def _completions(rid: str, model: str, answered: bool) -> list[bytes]:
    head = {"id": rid, "object": "chat.completion.chunk", "created": 1, "model": model}
    meta = {**head, "system_fingerprint": rid, "service_tier": rid}
    call = {"index": 0, "id": rid, "type": "function"}
    call["function"] = {"name": TOOL, "arguments": "{}"}
    delta = {"content": ANSWER} if answered else {"tool_calls": [call]}
    stop = "stop" if answered else "tool_calls"
    return [
        sse({**meta, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        sse({**meta, "choices": [{"index": 0, "delta": delta}]}),
        sse({**meta, "choices": [{"index": 0, "delta": {}, "finish_reason": stop}]}),
        sse({**meta, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}),
        b"data: [DONE]\n\n",
    ]


def _responses(rid: str, model: str, answered: bool) -> list[bytes]:
    response = {"id": rid, "model": model, "service_tier": rid, "status": "in_progress"}
    usage = {"input_tokens": 5, "output_tokens": 3}
    if answered:
        item = {"type": "message", "id": rid, "role": "assistant", "status": "in_progress"}
        done = {**item, "status": "completed"}
        done["content"] = [{"type": "output_text", "text": ANSWER}]
        delta = {"type": "response.output_text.delta", "item_id": rid, "delta": ANSWER}
        middle = [sse({**delta, "output_index": 0, "content_index": 0})]
    else:
        item = {"type": "function_call", "id": rid, "call_id": rid, "name": TOOL}
        item["arguments"] = ""
        done = {**item, "arguments": "{}", "status": "completed"}
        middle = []
    completed = {**response, "status": "completed", "output": [done], "usage": usage}
    return [
        sse({"type": "response.created", "response": response}),
        sse({"type": "response.output_item.added", "output_index": 0, "item": item}),
        *middle,
        sse({"type": "response.output_item.done", "output_index": 0, "item": done}),
        sse({"type": "response.completed", "response": completed}),
    ]


def _anthropic(rid: str, model: str, answered: bool) -> list[bytes]:
    message = {
        "id": rid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "usage": {"input_tokens": 5, "output_tokens": 0},
    }
    tool_use = {"type": "tool_use", "id": rid, "name": TOOL, "input": {}}
    started = {"type": "text"} if answered else tool_use
    block = {"type": "content_block_start", "index": 1, "content_block": started}
    text = {"type": "text_delta", "text": ANSWER}
    args = {"type": "input_json_delta", "partial_json": "{}"}
    delta = {"type": "content_block_delta", "index": 1, "delta": text if answered else args}
    reason = "end_turn" if answered else "tool_use"
    stop = {"type": "message_delta", "delta": {"stop_reason": reason}}
    thinking = {"type": "content_block_start", "index": 0}
    thinking["content_block"] = {"type": "thinking", "thinking": ""}
    thought = {"type": "thinking_delta", "thinking": "Look it up."}
    signed = {"type": "signature_delta", "signature": SIGNATURE}
    kept = {"type": "content_block_start", "index": 2}
    kept["content_block"] = {"type": "echo_note", "note": rid}  # a block type nobody knows
    return [
        sse({"type": "message_start", "message": message}, "message_start"),
        sse(thinking, "content_block_start"),
        sse({"type": "content_block_delta", "index": 0, "delta": thought}, "content_block_delta"),
        sse({"type": "content_block_delta", "index": 0, "delta": signed}, "content_block_delta"),
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(block, "content_block_start"),
        sse(delta, "content_block_delta"),
        sse({"type": "content_block_stop", "index": 1}, "content_block_stop"),
        sse(kept, "content_block_start"),  # kept whole for replay, so the key reaches the
        sse({"type": "content_block_stop", "index": 2}, "content_block_stop"),  # envelope
        sse({**stop, "usage": {"output_tokens": 3}}, "message_delta"),
        sse({"type": "message_stop"}, "message_stop"),
    ]


def _gemini(rid: str, model: str, answered: bool) -> list[bytes]:
    usage = {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8}
    call = {"functionCall": {"id": rid, "name": TOOL, "args": {}}}
    content = {"role": "model", "parts": [{"text": ANSWER} if answered else call]}
    return [
        sse(
            {
                "candidates": [{"content": content, "finishReason": "STOP", "index": 0}],
                "usageMetadata": usage,
                "modelVersion": model,
                "responseId": rid,
            }
        )
    ]


def _bedrock_event(kind: str, payload: dict[str, object]) -> bytes:
    headers = {":message-type": "event", ":event-type": kind, ":content-type": "application/json"}
    return encode_message(headers, json.dumps(payload).encode())


def _bedrock(rid: str, answered: bool) -> list[bytes]:
    usage = {"inputTokens": 5, "outputTokens": 3, "totalTokens": 8}
    if answered:
        opened = []
        delta = {"contentBlockIndex": 0, "delta": {"text": ANSWER}}
    else:
        start = {"toolUse": {"toolUseId": rid, "name": TOOL}}
        opened = [_bedrock_event("contentBlockStart", {"contentBlockIndex": 0, "start": start})]
        delta = {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}}
    metadata = {"usage": usage, "metrics": {"latencyMs": 7}, "trace": {"echo": rid}}
    return [
        _bedrock_event("messageStart", {"role": "assistant"}),
        *opened,
        _bedrock_event("contentBlockDelta", delta),
        _bedrock_event("contentBlockStop", {"contentBlockIndex": 0}),
        _bedrock_event("messageStop", {"stopReason": "end_turn" if answered else "tool_use"}),
        _bedrock_event("metadata", metadata),
    ]


class SuccessEchoServer:
    """The server: `kind` picks the protocol of the next answer, `echo` whether it echoes."""

    def __init__(self) -> None:
        self.kind = KINDS[0]
        self.echo = True
        self.url = ""
        self.received: list[str] = []
        self.bodies: list[str] = []
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> SuccessEchoServer:
        self._runner, self.url = await serve_all(self._handle)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def _events(self, key: str, answered: bool) -> list[bytes]:
        rid, model = (key, key) if self.echo else (SAFE_ID, "served-model")
        kind = self.kind
        if kind in ("deepseek", "openai-completions", "mistral-conversations"):
            return _completions(rid, model, answered)
        if kind == "openai-responses":
            return _responses(rid, model, answered)
        if kind == "anthropic-messages":
            return _anthropic(rid, model, answered)
        if kind == "bedrock-converse-stream":
            return _bedrock(rid, answered)
        return _gemini(rid, model, answered)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        answered = TOOL_RESULT.encode() in body
        key = _credential(request)
        self.received.append(key)
        self.bodies.append(body.decode())
        headers = _headers(key) if self.echo else {"Content-Type": "text/event-stream"}
        if self.kind == "bedrock-converse-stream":
            headers["Content-Type"] = "application/vnd.amazon.eventstream"
        response = web.StreamResponse(status=200, headers=headers)
        await response.prepare(request)
        for event in self._events(key, answered):
            await response.write(event)
        await response.write_eof()
        return response
