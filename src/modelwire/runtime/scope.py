"""`Scope`: the owner of a plugin's registrations, released together in reverse order.

The Python stand-in for the upstream "fiber" (spec/core.md §8.2): every registration made with
`scope=` (adapter routes, directory entries, model discovery, middleware, listeners) is recorded
here, and `close()` / `await aclose()` releases them last-in first-out, each at most once.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Final

from ..errors import ErrorCode, HarnessError

__all__ = ["Disposer", "Scope"]

Disposer = Callable[[], Awaitable[None] | None]
"""A zero-argument callable that releases one registration (it may return an awaitable)."""


class Scope:
    """Owns disposers for a lifetime; closing runs them in reverse order, once each.

    Closing is idempotent. Adding to a closed scope raises `SCOPE_CLOSED`. A disposer that fails
    does not stop the others; the failures are raised after all ran (one error as is, several as an
    `ExceptionGroup`).
    """

    __slots__ = ("_async_close", "_closed", "_disposers", "name")

    def __init__(self, name: str = "scope") -> None:
        self.name: Final = name
        self._disposers: list[Disposer] = []
        self._closed = False
        self._async_close = False

    @property
    def closed(self) -> bool:
        """True once `close()` or `aclose()` began."""
        return self._closed

    def ensure_open(self) -> None:
        """Raise `SCOPE_CLOSED` when the scope can no longer own registrations."""
        if self._closed:
            raise HarnessError(
                f'scope "{self.name}" is closed and cannot own new registrations',
                ErrorCode.SCOPE_CLOSED,
            )

    def add(self, disposer: Disposer) -> None:
        """Record a disposer to run when the scope closes."""
        self.ensure_open()
        self._disposers.append(disposer)

    def discard(self, disposer: Disposer) -> None:
        """Forget a disposer that was already run by its owner (no-op when absent)."""
        disposers = self._disposers
        for i in range(len(disposers) - 1, -1, -1):
            if disposers[i] is disposer:
                del disposers[i]
                return

    def child(self, name: str = "child") -> Scope:
        """A nested scope that closes (first) when this one closes."""
        child = Scope(f"{self.name}/{name}")

        def close_child() -> Awaitable[None] | None:
            # Follow the parent's mode so a sync `close()` never meets an awaitable it cannot run.
            if self._async_close:
                return child.aclose()
            child.close()
            return None

        self.add(close_child)
        return child

    def _take(self) -> list[Disposer]:
        self._closed = True
        disposers = self._disposers
        self._disposers = []
        disposers.reverse()
        return disposers

    def close(self) -> None:
        """Release every owned registration synchronously (awaitable results are an error)."""
        errors: list[Exception] = []
        for disposer in self._take():
            try:
                result = disposer()
                if inspect.isawaitable(result):
                    if inspect.iscoroutine(result):
                        result.close()
                    raise HarnessError(
                        f'scope "{self.name}" holds an async disposer; use `await scope.aclose()`',
                        ErrorCode.INVALID_ARGS,
                    )
            except Exception as exc:
                errors.append(exc)
        _raise_all(self.name, errors)

    async def aclose(self) -> None:
        """Release every owned registration, awaiting asynchronous disposers."""
        self._async_close = True
        errors: list[Exception] = []
        for disposer in self._take():
            try:
                result = disposer()
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                errors.append(exc)
        _raise_all(self.name, errors)

    def __enter__(self) -> Scope:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Scope:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _raise_all(name: str, errors: list[Exception]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ExceptionGroup(f'scope "{name}": {len(errors)} disposers failed', errors)
