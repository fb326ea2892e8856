"""What the loop needs from the runtime: `prepare_call` and a prepared call's `stream` (structural)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from ..policy import RetryPolicy
from ..vocab import (
    AdapterDefaults,
    CallConfig,
    GenerateOptions,
    ModelContext,
    ResolvedModelInfo,
    StreamChunk,
)

__all__ = ["PreparedCallLike", "RuntimeLike"]


class PreparedCallLike(Protocol):
    """A one-shot prepared model call (`LlmRuntime.prepare_call`'s result)."""

    @property
    def config(self) -> CallConfig:
        """The resolved call config (adapter defaults materialized)."""
        ...

    @property
    def retry_policy(self) -> RetryPolicy:
        """The retry policy of the registration that will serve the call."""
        ...

    @property
    def context(self) -> ModelContext | None:
        """The model's context window, when the adapter published one."""
        ...

    @property
    def adapter_defaults(self) -> AdapterDefaults:
        """Which config fields the adapter (not the caller) supplied."""
        ...

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Dispatch once; adapter failures end in a terminal `Finish(Error|Aborted)`."""
        ...


class RuntimeLike(Protocol):
    """The part of `LlmRuntime` the agent loop uses."""

    async def prepare_call(self, config: CallConfig) -> PreparedCallLike:
        """Resolve model metadata and defaults and bind the current registration."""
        ...

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Stream a request through the middleware chain without a prepared call."""
        ...

    async def resolve_model_info(self, provider: str, model: str) -> ResolvedModelInfo:
        """What the route advertises for the model (asked only for a typed output)."""
        ...
