"""Runtime test helpers: the scripted, recording, throwing and catalog adapters of spec §11."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from modelwire.policy import RetryPolicy
from modelwire.runtime import LlmAdapter, LlmRuntime
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Finish,
    GenerateOptions,
    Message,
    ModelContext,
    ModelInfo,
    ModelReasoningInfo,
    ProviderInfo,
    ResolvedModelInfo,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
)

SCRIPT: tuple[StreamChunk, ...] = (
    BlockStart(0, "text"),
    TextDelta(0, "hi"),
    BlockEnd(0, TextBlock("hi")),
    Finish(Stop()),
)


def opts(provider: str = "p", model: str = "m", **kw: Any) -> GenerateOptions:
    """A small request for `provider`/`model`."""
    messages: Sequence[Message] = kw.pop("messages", ())
    return GenerateOptions(provider=provider, model=model, messages=tuple(messages), **kw)


async def collect(stream: Any) -> list[StreamChunk]:
    """Drain a runtime stream (closing it) into a list."""
    out: list[StreamChunk] = []
    async with stream as s:
        async for chunk in s:
            out.append(chunk)
    return out


class ScriptedAdapter(LlmAdapter):
    """Yields a fixed script; records the last options it received and how often it streamed."""

    def __init__(
        self,
        script: Sequence[StreamChunk] = SCRIPT,
        *,
        policy: RetryPolicy | None = None,
        info: Any = None,
    ) -> None:
        self.script = tuple(script)
        self.policy = policy
        self.info = info
        self.received: GenerateOptions | None = None
        self.calls = 0

    def provider_info(self, provider: str) -> ProviderInfo:
        return self.info if self.info is not None else ProviderInfo(provider, provider)

    def provider_retry_policy(self, provider: str) -> RetryPolicy | None:
        return self.policy

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.received = options
        self.calls += 1
        for chunk in self.script:
            yield chunk


class ThrowingAdapter(LlmAdapter):
    """Raises `error` synchronously from `stream()` (a dispatch failure)."""

    def __init__(self, error: BaseException, *, policy: RetryPolicy | None = None) -> None:
        self.error = error
        self.policy = policy

    def provider_retry_policy(self, provider: str) -> RetryPolicy | None:
        return self.policy

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        raise self.error


class CatalogAdapter(ScriptedAdapter):
    """Fixed provider info, catalog and per-model context, reasoning and default cap."""

    def __init__(
        self,
        *,
        info: Any = None,
        models: Sequence[Any] = (),
        contexts: dict[str, Any] | None = None,
        reasoning: dict[str, Any] | None = None,
        default_max_tokens: dict[str, Any] | None = None,
        resolved: Any = None,
        modalities: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(info=info)
        self.models = list(models)
        self.contexts = contexts or {}
        self.reasoning = reasoning or {}
        self.default_max_tokens = default_max_tokens or {}
        self.resolved = resolved
        self.modalities = modalities or {}
        self.lookups = 0

    async def list_models(self, provider: str) -> list[ModelInfo]:
        return list(self.models)

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        self.lookups += 1
        if self.resolved is not None:
            return self.resolved  # type: ignore[no-any-return]
        context = self.contexts.get(model)
        return ResolvedModelInfo(
            provider=provider,
            id=model,
            name=model,
            input_modalities=self.modalities.get(model),
            context=None if context is None else ModelContext(context),
            default_max_tokens=self.default_max_tokens.get(model),
            reasoning=self.reasoning.get(model),
        )


def reasoning(*efforts: Any, default: str | None = None) -> ModelReasoningInfo:
    """Reasoning metadata from `ReasoningEffortInfo`s."""
    return ModelReasoningInfo(tuple(efforts), default)


class BlockingResolveAdapter(ScriptedAdapter):
    """`resolve_model` waits for `release` (to interleave registry changes with a resolution)."""

    def __init__(self, effort_info: ModelReasoningInfo) -> None:
        super().__init__()
        self.effort_info = effort_info
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        self.started.set()
        await self.release.wait()
        return ResolvedModelInfo(
            provider=provider, id=model, name=model, reasoning=self.effort_info
        )


def fresh_runtime() -> LlmRuntime:
    """A new runtime with nothing registered."""
    return LlmRuntime()
