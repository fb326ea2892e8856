"""Deterministic pre-rendered provider streams for the benchmark server (stdlib only).

One *plan* (reasoning pieces, text pieces, tool-argument pieces) is rendered in the three wire
protocols modelwire speaks, so every client is checked against exactly what was sent:

* ``chat``      DeepSeek/OpenAI Chat Completions chunks (``data:`` lines, ``[DONE]``): a role
                chunk, ``reasoning_content`` deltas, ``content`` deltas, one tool call whose JSON
                arguments are split over many deltas, a finish chunk and a DeepSeek usage chunk.
* ``responses`` OpenAI Responses events (``event:`` + ``data:``): a reasoning item with
                ``reasoning_text`` deltas, a message item with ``output_text`` deltas, a
                ``function_call`` item with argument deltas, then ``response.completed``.
* ``anthropic`` Anthropic Messages events: a thinking block (+ signature), a text block, a
                ``tool_use`` block with ``input_json_delta`` pieces, ``message_delta``,
                ``message_stop``.

``n`` is the number of delta events (reasoning + text + tool-argument deltas): the "chunks" the
figures are normalised by. A protocol adds a handful of framing events on top (< 15). With
``tool_bytes > 0`` a fifth of the deltas carry one tool call whose arguments are exactly
``tool_bytes`` ASCII characters of valid JSON. Text mixes escapes, a newline, accents, CJK and an
emoji so that every client meets JSON escapes and multi-byte UTF-8.
"""

from __future__ import annotations

import json
from typing import Any

from streams_base import (
    CACHE_HIT,
    CALL_ID,
    MIN_N,
    MODEL,
    PROMPT_TOKENS,
    TOOL_NAME,
    Plan,
    default_tool_bytes,
    dumps,
    expected,
    plan,
)
from streams_providers import render_anthropic, render_responses

__all__ = [
    "MIN_N",
    "PROTOCOLS",
    "Plan",
    "default_tool_bytes",
    "expected",
    "plan",
    "render",
    "sse_bytes",
]

PROTOCOLS = ("chat", "responses", "anthropic")


# ---- chat (DeepSeek / OpenAI Chat Completions) ---------------------------------------------------


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    return dumps(
        {
            "id": "5f0c1e6a-8d53-4a1b-9a2e-0b7c1c2d3e4f",
            "object": "chat.completion.chunk",
            "created": 1764460800,
            "model": MODEL,
            "system_fingerprint": "fp_8802369eaa_prod0623_fp8_kvcache",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
    )


def render_chat(p: Plan) -> list[tuple[str | None, str]]:
    """(event name, data) pairs of a DeepSeek chat stream, ending with `[DONE]`."""
    ev: list[str] = [_chat_chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    ev += [_chat_chunk({"content": None, "reasoning_content": r}) for r in p.reasoning]
    ev += [_chat_chunk({"content": t, "reasoning_content": None}) for t in p.text]
    if p.has_tool:
        head = {"index": 0, "id": CALL_ID, "type": "function"}
        ev.append(
            _chat_chunk(
                {
                    "content": None,
                    "reasoning_content": None,
                    "tool_calls": [{**head, "function": {"name": TOOL_NAME, "arguments": ""}}],
                }
            )
        )
        ev += [
            _chat_chunk(
                {
                    "content": None,
                    "reasoning_content": None,
                    "tool_calls": [{"index": 0, "function": {"arguments": a}}],
                }
            )
            for a in p.args
        ]
    ev.append(_chat_chunk({"content": "", "reasoning_content": None}, expected_finish_chat(p)))
    out = p.n + 2
    usage = {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": out,
        "total_tokens": PROMPT_TOKENS + out,
        "prompt_tokens_details": {"cached_tokens": CACHE_HIT},
        "completion_tokens_details": {"reasoning_tokens": len(p.reasoning)},
        "prompt_cache_hit_tokens": CACHE_HIT,
        "prompt_cache_miss_tokens": PROMPT_TOKENS - CACHE_HIT,
    }
    last = json.loads(ev[0])
    last["choices"] = []
    last["usage"] = usage
    ev.append(dumps(last))
    framed: list[tuple[str | None, str]] = [(None, e) for e in ev]
    framed.append((None, "[DONE]"))
    return framed


def expected_finish_chat(p: Plan) -> str:
    """The chat `finish_reason` of the plan."""
    return "tool_calls" if p.has_tool else "stop"


RENDERERS = {"chat": render_chat, "responses": render_responses, "anthropic": render_anthropic}


def render(proto: str, p: Plan) -> list[tuple[str | None, str]]:
    """The (event name, data) pairs of `p` in protocol `proto`."""
    try:
        return RENDERERS[proto](p)
    except KeyError:
        raise ValueError(f"unknown protocol {proto!r}; expected one of {PROTOCOLS}") from None


def sse_bytes(events: list[tuple[str | None, str]]) -> list[bytes]:
    """One SSE event per element: optional `event:` line, `data:` line, blank line."""
    out: list[bytes] = []
    for name, data in events:
        head = b"event: " + name.encode() + b"\n" if name else b""
        out.append(head + b"data: " + data.encode("utf-8") + b"\n\n")
    return out
