"""A providers adapter bound to one config snapshot: what `ProvidersAdapter.pinned()` returns
for a prepared call, so a later `update_config` never mixes one generation's capability result
with another's request."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from ...policy import RetryPolicy
from ...runtime import LlmAdapter
from ...vocab import GenerateOptions, ProviderInfo, ResolvedModelInfo, StreamChunk
from .snapshot import Snapshot

__all__ = ["PinnedView"]


class PinnedView(LlmAdapter):
    """Resolves and streams on `snapshot`; display info and retry policy come from `origin`."""

    def __init__(
        self,
        origin: LlmAdapter,
        snapshot: Snapshot,
        resolve: Callable[[Snapshot, str, str], ResolvedModelInfo],
        stream: Callable[[GenerateOptions, Snapshot], AsyncIterator[StreamChunk]],
    ) -> None:
        self._origin = origin
        self._snapshot = snapshot
        self._resolve = resolve
        self._stream = stream

    @property
    def origin(self) -> LlmAdapter:
        return self._origin

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        return self._resolve(self._snapshot, provider, model)

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        return self._stream(options, self._snapshot)

    def provider_info(self, provider: str) -> ProviderInfo:
        return self._origin.provider_info(provider)

    def provider_retry_policy(self, provider: str) -> RetryPolicy | None:
        return self._origin.provider_retry_policy(provider)
