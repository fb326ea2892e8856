"""Blocking calls for scripts and notebooks: `run_sync(make)` runs a coroutine to completion.

Every sync call of the process runs on one background event loop (a daemon thread, started on
first use), so it works the same with no running loop (a plain script) and inside one (Jupyter,
whose loop is merely blocked while the call runs: the work never needs it, so nothing deadlocks).
Objects a sync call creates and reuses — pooled HTTP sessions, a log opened by the agent — stay on
that one loop. The call runs in a copy of the caller's `contextvars` context, so what the caller
set there (an OpenTelemetry span, an owner scope) is the call's too.

`Ctrl-C` (a `KeyboardInterrupt` in the waiting thread) cancels the call's task, waits for it to
finish its cancellation (a turn writes its `turn/end {aborted}`; at most `CANCEL_WAIT_S`, a second
`Ctrl-C` stops waiting) and re-raises `KeyboardInterrupt`. At interpreter exit the loop runs the
registered cleanups, closes its async generators (which closes pooled HTTP sessions) and stops.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from ..errors import ErrorCode, HarnessError
from ..vocab.typing import Coro

__all__ = ["CANCEL_WAIT_S", "on_bridge_exit", "on_sync_loop", "run_sync", "sync_loop"]

T = TypeVar("T")

CANCEL_WAIT_S: Final = 10.0
"""How long a `Ctrl-C`-cancelled sync call may take to finish its cancellation."""

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_cleanups: list[Callable[[], Awaitable[object]]] = []


def sync_loop() -> asyncio.AbstractEventLoop:
    """The background loop every sync call runs on (started on first use)."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=serve, name="modelwire-sync", daemon=True).start()
            ready.wait()
            _loop = loop
            atexit.register(_shutdown)
        return _loop


def on_sync_loop() -> bool:
    """True when called from a coroutine running on the sync calls' loop."""
    try:
        return _loop is not None and asyncio.get_running_loop() is _loop
    except RuntimeError:
        return False


def on_bridge_exit(cleanup: Callable[[], Awaitable[object]]) -> None:
    """Run `cleanup()` on the sync loop at interpreter exit (e.g. close a log opened there)."""
    _cleanups.append(cleanup)


def run_sync(
    make: Callable[[], Coro[T]],
) -> T:
    """Run the coroutine `make()` builds on the sync loop and return its result (or raise).

    Called from a coroutine already running on the sync loop it would deadlock: `INVALID_ARGS`.
    """
    loop = sync_loop()
    with contextlib.suppress(RuntimeError):
        if asyncio.get_running_loop() is loop:
            raise HarnessError(
                "a sync call cannot run on the loop that serves sync calls: await the async "
                "method instead",
                ErrorCode.INVALID_ARGS,
            )
    done: concurrent.futures.Future[T] = concurrent.futures.Future()
    tasks: list[asyncio.Task[T]] = []
    # the call runs in the caller's context: its trace span, its owner scope
    context = contextvars.copy_context()

    def settle(task: asyncio.Task[T]) -> None:
        if task.cancelled():
            done.cancel()
        elif (error := task.exception()) is not None:
            done.set_exception(error)
        else:
            done.set_result(task.result())

    def start() -> None:
        try:
            task = loop.create_task(context.run(make), context=context)
        except BaseException as exc:  # building the coroutine failed: report it to the caller
            done.set_exception(exc)
            return
        tasks.append(task)
        task.add_done_callback(settle)

    loop.call_soon_threadsafe(start)
    try:
        return done.result()
    except KeyboardInterrupt:
        loop.call_soon_threadsafe(lambda: [task.cancel() for task in tasks])
        with contextlib.suppress(BaseException):  # a second Ctrl-C, a timeout, the cancellation
            done.result(timeout=CANCEL_WAIT_S)
        raise


def _shutdown() -> None:
    """At exit: run the cleanups, close async generators (pooled sessions), stop the loop."""
    loop = _loop
    if loop is None or loop.is_closed() or not loop.is_running():
        return

    async def close() -> None:
        for cleanup in reversed(_cleanups):
            with contextlib.suppress(Exception):
                await cleanup()
        await loop.shutdown_asyncgens()

    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=CANCEL_WAIT_S)
    loop.call_soon_threadsafe(loop.stop)
