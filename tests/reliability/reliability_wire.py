"""Adapters under attack and the protocol-shaped bodies the fault server sends them.

`ADAPTERS` names the four targets: the DeepSeek adapter and the three protocols of the
multi-provider adapter. `make_runtime(kind, url)` registers one of them on a fresh `LlmRuntime`
pointed at the fault server, with a distinctive secret API key and a small idle budget;
`good_events(kind, text)` renders a complete, valid SSE body of that protocol answering `text`,
as a list of SSE events (bytes, each ending in a blank line) so scenarios can cut, repeat and
re-order them.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Final

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.runtime import LlmRuntime
from modelwire.vocab import GenerateOptions, user_message

__all__ = [
    "ADAPTERS",
    "DEEPSEEK_KEY",
    "IDLE_MS",
    "PROVIDERS_KEY",
    "SECRETS",
    "Target",
    "done_event",
    "good_events",
    "make_runtime",
    "options_for",
    "sse",
    "text_events",
]

DEEPSEEK_KEY: Final = f"sk-reliability-SECRET-{secrets.token_hex(12)}"
"""The DeepSeek adapter's key: shaped like a real key."""

PROVIDERS_KEY: Final = f"reliabilitySECRET{secrets.token_hex(12)}"
"""The providers' key: deliberately *not* key-shaped, so only explicit redaction can hide it."""

KEY_ENV: Final = "RELIABILITY_PROVIDER_KEY"
SECRETS: Final = (DEEPSEEK_KEY, PROVIDERS_KEY)
"""Every credential this suite uses; none may appear in any output."""

IDLE_MS: Final = 200
MODEL: Final = "rel-model"
DEEPSEEK_MODEL: Final = "deepseek-v4-flash"

ADAPTERS: Final = ("deepseek", "openai-completions", "openai-responses", "anthropic-messages")


@dataclass(frozen=True)
class Target:
    """One registered adapter: the runtime and the options that reach it."""

    kind: str
    runtime: LlmRuntime
    options: GenerateOptions


def options_for(kind: str, text: str = "hi", session_id: str | None = None) -> GenerateOptions:
    """Minimal request options for the route of `kind`."""
    model = DEEPSEEK_MODEL if kind == "deepseek" else MODEL
    return GenerateOptions(
        provider=kind, model=model, messages=(user_message(text),), session_id=session_id
    )


def providers_config(url: str, *, idle_ms: float = IDLE_MS) -> dict[str, object]:
    """A `{"providers": ...}` config with one route per protocol, all pointed at `url`."""
    return {
        "providers": {
            api: {
                "api": api,
                "base_url": url,
                "api_key_env": KEY_ENV,
                "stream_idle_timeout_ms": idle_ms,
                "models": [{"id": MODEL}],
            }
            for api in ADAPTERS[1:]
        }
    }


def make_runtime(kind: str, url: str, *, idle_ms: float = IDLE_MS) -> Target:
    """A fresh runtime serving `kind` from `url` (the route name is `kind` itself)."""
    runtime = LlmRuntime()
    if kind == "deepseek":
        adapter = DeepSeekAdapter(
            api_key=DEEPSEEK_KEY, base_url=url, env={}, stream_idle_timeout_ms=idle_ms
        )
        runtime.register_adapter(["deepseek"], adapter)
    else:
        providers = ProvidersAdapter.from_config(
            providers_config(url, idle_ms=idle_ms), env={KEY_ENV: PROVIDERS_KEY}
        )
        providers.register(runtime)
    return Target(kind, runtime, options_for(kind))


def sse(payload: object, event: str | None = None) -> bytes:
    """One SSE event (JSON-encoding non-string payloads), ending in its blank line."""
    data = (
        payload
        if isinstance(payload, str)
        else json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    )
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n".encode()


def done_event() -> bytes:
    return b"data: [DONE]\n\n"


def _completions(parts: list[str]) -> list[bytes]:
    return [
        sse({"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
        *(sse({"choices": [{"index": 0, "delta": {"content": p}}]}) for p in parts),
        sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        sse({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
    ]


def _responses(parts: list[str]) -> list[bytes]:
    full = "".join(parts)
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    done_item = {**item, "content": [{"type": "output_text", "text": full}]}
    usage = {"input_tokens": 5, "output_tokens": 2}
    return [
        sse({"type": "response.created", "response": {"id": "r1"}}),
        sse({"type": "response.output_item.added", "output_index": 0, "item": item}),
        *(
            sse({"type": "response.output_text.delta", "output_index": 0, "delta": p})
            for p in parts
        ),
        sse({"type": "response.output_item.done", "output_index": 0, "item": done_item}),
        sse(
            {
                "type": "response.completed",
                "response": {"id": "r1", "status": "completed", "usage": usage},
            }
        ),
    ]


def _anthropic(parts: list[str]) -> list[bytes]:
    msg = {"id": "m1", "model": MODEL, "usage": {"input_tokens": 5, "output_tokens": 0}}
    return [
        sse({"type": "message_start", "message": msg}, "message_start"),
        sse(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            "content_block_start",
        ),
        *(
            sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": p},
                },
                "content_block_delta",
            )
            for p in parts
        ),
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 2},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]


def text_events(kind: str, parts: list[str]) -> list[bytes]:
    """The events of a complete answer streaming `parts`, *without* a trailing ``[DONE]``.

    For the protocols that end with ``[DONE]`` (DeepSeek, Chat Completions) the caller appends
    it (or not); the last event of the others is their terminal event.
    """
    if kind in ("deepseek", "openai-completions"):
        return _completions(parts)
    if kind == "openai-responses":
        return _responses(parts)
    return _anthropic(parts)


def good_events(kind: str, text: str = "Hello, reliable world") -> list[bytes]:
    """A complete, valid answer of `text` (split in three deltas) as SSE events."""
    third = max(1, len(text) // 3)
    parts = [text[:third], text[third : 2 * third], text[2 * third :]]
    events = text_events(kind, [p for p in parts if p])
    if kind in ("deepseek", "openai-completions"):
        events.append(done_event())
    return events
