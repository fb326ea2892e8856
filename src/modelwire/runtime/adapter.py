"""`LlmAdapter`: the abstract base every provider adapter extends."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator

from ..errors import ErrorCode, LlmError
from ..policy import RetryPolicy
from ..vocab import (
    EmbedLimits,
    EmbedOptions,
    EmbedResult,
    GenerateOptions,
    ModelInfo,
    ProviderInfo,
    ResolvedModelInfo,
    StreamChunk,
)

__all__ = ["LlmAdapter"]


class LlmAdapter(ABC):
    """Translates one provider-neutral request into one provider call and streams chunks back.

    Only `stream` is required. An adapter makes exactly one provider request per `stream()` call
    (no library retries), honours task cancellation, and may either raise or end with an in-band
    `Finish(Error|Aborted)`; the runtime turns raised failures into that terminal chunk.
    """

    @abstractmethod
    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Stream the chunks of one model call (typically an `async def` generator)."""

    @property
    def origin(self) -> LlmAdapter:
        """The registered adapter this one stands for: itself, or for a `pinned()` view the
        adapter it was pinned from (replay state is owned by the registered instance)."""
        return self

    def pinned(self) -> LlmAdapter:
        """This adapter bound to its current configuration generation, for a prepared call.

        `prepare_call` resolves the model on the pinned adapter and dispatches to it, so a
        configuration swapped between prepare and dispatch (e.g. `update_config`) never mixes
        one generation's capability result with another's request. An adapter whose
        configuration never changes returns itself (the default).
        """
        return self

    def provider_info(self, provider: str) -> ProviderInfo:
        """Display metadata for a route this adapter serves; `id` must equal the route."""
        return ProviderInfo(provider, provider)

    def provider_retry_policy(self, provider: str) -> RetryPolicy | None:
        """The retry policy for a route, or None for the normal defaults."""
        return None

    async def list_models(self, provider: str) -> list[ModelInfo]:
        """An advisory catalog of the route's models (never gates routing)."""
        return []

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        """Exact-model metadata: context window, default output cap and reasoning efforts."""
        return ResolvedModelInfo(provider=provider, id=model, name=model)

    def embed_limits(self, options: EmbedOptions) -> EmbedLimits:
        """How many inputs (and about how many tokens) one `embed` request of the model takes."""
        return EmbedLimits()

    async def embed(self, options: EmbedOptions) -> EmbedResult:
        """The vectors of `options.inputs` in input order from exactly one provider request
        (`LlmRuntime.embed` splits inputs within `embed_limits` first, and retries); no library
        retries here. The default serves no embeddings."""
        raise LlmError(
            f'provider "{options.provider}" serves no embeddings (its adapter has no embed())',
            ErrorCode.UNSUPPORTED_OPTION,
        )
