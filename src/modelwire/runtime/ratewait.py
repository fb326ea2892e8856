"""Who hears about a rate-limit wait: listeners bound to the current call's context.

A limiter deep inside an adapter does not know which session, turn or terminal a call belongs
to; whoever drives the call does. So the listeners live in a `ContextVar`: the agent binds one
around each attempt's stream (it appends `llm/rate-limit-wait`), the CLI binds one around its
turn task (it prints a stderr line), and `notify_rate_limit_wait` — awaited by the limiter when
a call starts to wait — calls every listener bound in the caller's context, innermost first.
Contexts nest and are copied into tasks, so concurrent calls never hear each other's waits.
A listener that raises is isolated (the wait is only visible, never failed, by it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TypeAlias

from ..events_ratelimit import RateLimitNotice

__all__ = ["WaitListener", "listen_for_rate_limit_waits", "notify_rate_limit_wait"]

WaitListener: TypeAlias = Callable[[RateLimitNotice], Awaitable[None]]
"""Hears one notice: awaited before the wait starts."""

_listeners: ContextVar[tuple[WaitListener, ...]] = ContextVar(
    "modelwire_rate_limit_listeners", default=()
)


@contextlib.contextmanager
def listen_for_rate_limit_waits(listener: WaitListener) -> Iterator[None]:
    """Bind `listener` for the calls made in this context (and the tasks it starts) until exit."""
    token = _listeners.set((listener, *_listeners.get()))
    try:
        yield
    finally:
        _listeners.reset(token)


async def notify_rate_limit_wait(notice: RateLimitNotice) -> None:
    """Tell every listener bound in the current context, innermost first; errors are dropped."""
    for listener in _listeners.get():
        with contextlib.suppress(Exception):
            await listener(notice)
