"""Helpers of the DeepSeek rate-limit tests: the shared fake clock and limit server
(`tests/support/limit_server.py`) with DeepSeek's stream, and a limited adapter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deepseek_helpers import HELLO, sse_bytes
from limit_server import T0, Answer, FakeTime
from limit_server import LimitServer as SharedServer

from modelwire.adapters.deepseek import DeepSeekAdapter

__all__ = ["KEY", "T0", "Answer", "FakeTime", "LimitServer", "limited"]

KEY = "sk-test-key-123456"


class LimitServer(SharedServer):
    """The shared `LimitServer`, streaming DeepSeek's "hello" by default; `clock` timestamps the
    arrivals."""

    def __init__(self, answers: list[Answer], *, clock: Callable[[], float] | None = None) -> None:
        super().__init__(answers, reads=[sse_bytes(HELLO)], error="Rate limit reached", clock=clock)


def limited(url: str, time: FakeTime | None = None, **fields: Any) -> DeepSeekAdapter:
    """A DeepSeek adapter on `url` (limits from `fields`), on `time` when given."""
    if time is not None:
        fields.update(rate_limit_clock=time.clock, rate_limit_sleep=time.sleep)
    return DeepSeekAdapter(api_key=KEY, base_url=url, env={}, **fields)
