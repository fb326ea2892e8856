"""Helpers of the providers' client-side rate-limit tests: the shared fake clock and limit server
(`tests/support/limit_server.py`), with this protocol's streams and a one-route config."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from limit_server import T0, Answer, FakeTime
from limit_server import LimitServer as SharedServer

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.wire.ratelimit import RateLimiter

__all__ = [
    "ANTHROPIC_TEXT",
    "CHAT_TEXT",
    "T0",
    "Answer",
    "FakeTime",
    "LimitServer",
    "acme",
    "adapter",
]

CHAT_TEXT = [
    b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n',
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
    b'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n',
    b"data: [DONE]\n\n",
]
"""A Chat Completions stream answering "hi" (usage 3/1)."""

ANTHROPIC_TEXT = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
    b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"hi"}}\n\n',
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":3}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]
"""An Anthropic Messages stream answering "hi"."""


class LimitServer(SharedServer):
    """The shared `LimitServer`, streaming `CHAT_TEXT` by default."""

    def __init__(self, answers: list[Answer], *, hold: Callable[[], bool] | None = None) -> None:
        super().__init__(answers, reads=CHAT_TEXT, hold=hold)


def acme(url: str, *, api: str = "openai-completions", **fields: Any) -> dict[str, Any]:
    """A one-route config (`acme`, model `m`) pointing at `url`."""
    base = url + ("/v1" if api == "openai-completions" else "")
    profile = {"api": api, "base_url": base, "api_key_env": "K", "models": [{"id": "m"}]}
    return {"providers": {"acme": {**profile, **fields}}}


def adapter(url: str, limiter: RateLimiter, **fields: Any) -> ProvidersAdapter:
    """The providers adapter of `acme(url, **fields)` using `limiter`."""
    return ProvidersAdapter.from_config(acme(url, **fields), env={"K": "k"}, rate_limiter=limiter)
