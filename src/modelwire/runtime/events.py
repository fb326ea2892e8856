"""The `llm/adapter-change` notification: payload-free, fired after every registry commit.

Listeners run one by one in registration order (spec/core.md R-EVT-1..5). A listener that raises
is logged and never vetoes the commit nor stops later listeners; a listener that returns an
awaitable is scheduled and its failure is logged the same way (no "exception never retrieved").
The first synchronous failure whose `code` is `INVARIANT` is re-raised from the mutating call after
the whole fan-out ran.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from ..errors import ErrorCode, HarnessError

__all__ = ["ADAPTER_CHANGE", "AdapterChangeListener", "AdapterChangeNotifier", "logger"]

ADAPTER_CHANGE: Final = "llm/adapter-change"
"""The notification's name (the seeds' spelling; upstream later called it `llm/adapters-updated`)."""

logger: Final = logging.getLogger("modelwire.runtime")
"""The runtime's logger; contained listener failures are reported here."""

_LISTENER_FAILED: Final = "llm: an llm/adapter-change listener failed"

AdapterChangeListener = Callable[[], Awaitable[None] | None]
"""A payload-free listener; consumers re-read the registry when it runs."""


def _log_failure(exc: BaseException) -> None:
    logger.warning(_LISTENER_FAILED, exc_info=exc)


def _log_task(task: asyncio.Future[None]) -> None:
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        _log_failure(exc)


async def _await(awaitable: Awaitable[None]) -> None:
    await awaitable


class AdapterChangeNotifier:
    """Holds `llm/adapter-change` listeners and fans a commit out to them with containment."""

    __slots__ = ("_listeners", "_tasks")

    def __init__(self) -> None:
        self._listeners: list[AdapterChangeListener] = []
        self._tasks: set[asyncio.Future[None]] = set()

    def add(self, listener: AdapterChangeListener) -> Callable[[], None]:
        """Append a listener; returns its idempotent remover."""
        self._listeners.append(listener)
        entry: list[AdapterChangeListener] = [listener]

        def remove() -> None:
            if entry:
                listener = entry.pop()
                for i, candidate in enumerate(self._listeners):
                    if candidate is listener:
                        del self._listeners[i]
                        break

        return remove

    def publish(self) -> None:
        """Run every listener (snapshot taken now); re-raise the first `INVARIANT` failure."""
        invariant: HarnessError | None = None
        for listener in tuple(self._listeners):
            try:
                result = listener()
            except Exception as exc:
                _log_failure(exc)
                if (
                    invariant is None
                    and isinstance(exc, HarnessError)
                    and exc.code == ErrorCode.INVARIANT
                ):
                    invariant = exc
                continue
            if inspect.isawaitable(result):
                self._schedule(result)
        if invariant is not None:
            raise invariant

    def _schedule(self, awaitable: Awaitable[None]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            _log_failure(
                RuntimeError("an async llm/adapter-change listener needs a running event loop")
            )
            return
        task = loop.create_task(_await(awaitable))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_log_task)
