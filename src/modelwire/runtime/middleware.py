"""The `llm/stream` and `llm/generate` middleware chains (spec/core.md §6.13, §8.3; DESIGN §2).

A stream middleware is `(options, call_next) -> AsyncIterator[StreamChunk]`, typically an async
generator: it may wrap `call_next()`'s stream (prepend, append, observe), re-route by calling
`call_next(other_options)`, or short-circuit by never calling it (then no adapter is looked up).
A generate middleware is `async (options, call_next) -> GenerateResult` around non-streaming
calls. Chains compose outermost-first; the chain is snapshotted when a call starts; every level
gets its own continuation. Errors raised by middleware are never normalized.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeAlias

from ..vocab import GenerateOptions, StreamChunk
from .boundary import ChunkStream

if TYPE_CHECKING:
    from .generate import GenerateResult

__all__ = [
    "CallNext",
    "GenerateMiddleware",
    "GenerateNext",
    "MiddlewareChain",
    "StreamMiddleware",
    "dispatch_generate",
    "dispatch_stream",
]


class CallNext(Protocol):
    """Continue the `llm/stream` chain, with this level's options or `options` to re-route."""

    def __call__(self, options: GenerateOptions | None = None, /) -> AsyncIterator[StreamChunk]: ...


class GenerateNext(Protocol):
    """Continue the `llm/generate` chain, with this level's options or `options` to re-route."""

    def __call__(self, options: GenerateOptions | None = None, /) -> Awaitable[GenerateResult]: ...


StreamMiddleware: TypeAlias = Callable[[GenerateOptions, CallNext], AsyncIterator[StreamChunk]]
"""An `llm/stream` middleware: `(options, call_next) -> AsyncIterator[StreamChunk]`."""

GenerateMiddleware: TypeAlias = Callable[
    [GenerateOptions, GenerateNext], Awaitable["GenerateResult"]
]
"""An `llm/generate` middleware: `async (options, call_next) -> GenerateResult`."""


class MiddlewareChain:
    """An ordered, copy-on-write list of middleware; `add` returns an idempotent remover."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: tuple[object, ...] = ()

    def add(self, middleware: object, *, prepend: bool = False) -> Callable[[], None]:
        """Insert `middleware` last (or first, outermost, with `prepend`)."""
        entry = [middleware]
        self.items = (middleware, *self.items) if prepend else (*self.items, middleware)

        def remove() -> None:
            if entry:
                target = entry.pop()
                items = list(self.items)
                for i, candidate in enumerate(items):
                    if candidate is target:
                        del items[i]
                        self.items = tuple(items)
                        return

        return remove


def dispatch_stream(
    chain: tuple[StreamMiddleware, ...],
    options: GenerateOptions,
    terminal: Callable[[GenerateOptions], AsyncIterator[StreamChunk]],
) -> ChunkStream:
    """Compose `chain` around `terminal` and return the outermost stream."""
    if not chain:
        return ChunkStream(terminal(options))
    opened: list[AsyncIterator[StreamChunk]] = []
    depth = len(chain)

    def level(i: int, opts: GenerateOptions) -> AsyncIterator[StreamChunk]:
        if i == depth:
            iterator = terminal(opts)
        else:

            def call_next(override: GenerateOptions | None = None, /) -> AsyncIterator[StreamChunk]:
                return level(i + 1, opts if override is None else override)

            iterator = chain[i](opts, call_next)
        opened.append(iterator)
        return iterator

    return ChunkStream(level(0, options), opened)


def dispatch_generate(
    chain: tuple[GenerateMiddleware, ...],
    options: GenerateOptions,
    terminal: Callable[[GenerateOptions], Awaitable[GenerateResult]],
) -> Awaitable[GenerateResult]:
    """Compose `chain` around `terminal` and return the outermost awaitable."""
    depth = len(chain)

    def level(i: int, opts: GenerateOptions) -> Awaitable[GenerateResult]:
        if i == depth:
            return terminal(opts)

        def call_next(override: GenerateOptions | None = None, /) -> Awaitable[GenerateResult]:
            return level(i + 1, opts if override is None else override)

        return chain[i](opts, call_next)

    return level(0, options)
