"""`ProvidersAdapter`: routes configured by profiles, served over three wire protocols."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

from ...errors import ErrorCode, LlmError
from ...policy import RetryPolicy
from ...runtime import DirectoryRegistration, LlmAdapter, LlmRuntime, Registration
from ...vocab import (
    DiscoveredModel,
    EmbedLimits,
    EmbedOptions,
    EmbedResult,
    GenerateOptions,
    ModelContext,
    ModelDiscoveryRequest,
    ModelInfo,
    ModelReasoningInfo,
    ProviderInfo,
    ReasoningEffortInfo,
    ResolvedModelInfo,
    StreamChunk,
)
from ...wire.h1transport import default_transport
from ...wire.pump import StreamSource, pump_sse
from ...wire.ratelimit import RateLimiter
from ...wire.status import reclassify
from ...wire.transport import Transport
from .batches import RouteBatches, route_batches
from .catalog import load_catalog
from .config import ResolvedProfile, load_config_file, resolve_profiles
from .credentials import missing_credential
from .discovery import discover_models
from .dispatch import open_call
from .embeddings import embed_limits, embed_request
from .images import ImageLoader
from .materialize import ModelDescriptor
from .pinned import PinnedView
from .protocols import protocol, structured_output_support
from .protocols.common import is_overflow_text
from .replay_state import ReplayDegrade
from .snapshot import SETTINGS_NS, Snapshot, directory_entries, registration_facts

__all__ = ["ProvidersAdapter"]


class ProvidersAdapter(LlmAdapter):
    """Serves every route of a `{"providers": {route: profile}}` config (spec multiprovider).

    `env` is the launch environment credentials are read from (default `os.environ`), per request;
    `read_image` loads an image attachment's bytes (without it, images are `UNSUPPORTED_CONTENT`);
    `on_replay_degrade(provider, model, reason)` hears about replay state that was degraded.
    `rate_limiter` keeps the routes' client-side rate limits across calls and config updates
    (default: its own `RateLimiter` on the wall clock).
    """

    def __init__(
        self,
        profiles: Mapping[str, ResolvedProfile],
        *,
        env: Mapping[str, str] | None = None,
        read_image: ImageLoader | None = None,
        on_replay_degrade: ReplayDegrade | None = None,
        rate_limiter: RateLimiter | None = None,
        clock: Callable[[], float] = time.time,
        transport: Transport | None = None,
    ) -> None:
        self.rate_limiter = RateLimiter() if rate_limiter is None else rate_limiter
        self._clock = clock  # epoch seconds: request signatures and credential expiry
        # every request goes through it; proxy variables come from the process environment (as
        # curl and httpx read them), `env` is only where keys are read
        self._transport = transport or default_transport()
        self._snapshot = Snapshot(profiles)
        self._env = env
        self._read_image = read_image
        self._on_degrade = on_replay_degrade
        self._registration: Registration | None = None
        self._runtime: LlmRuntime | None = None
        self._directory: DirectoryRegistration | None = None
        self._discovery_disposer: Callable[[], None] | None = None
        self._facts = registration_facts(self._snapshot)

    @classmethod
    def from_config(
        cls,
        config: Mapping[str, object] | None,
        env: Mapping[str, str] | None = None,
        *,
        read_image: ImageLoader | None = None,
        on_replay_degrade: ReplayDegrade | None = None,
        rate_limiter: RateLimiter | None = None,
        clock: Callable[[], float] = time.time,
        transport: Transport | None = None,
    ) -> ProvidersAdapter:
        """Validate `config` fully (raises `INVALID_CONFIG` naming route and field) and build
        (`clock`: epoch seconds for request signatures and the expiry of minted tokens)."""
        return cls(
            resolve_profiles(config),
            env=env,
            read_image=read_image,
            on_replay_degrade=on_replay_degrade,
            clock=clock,
            rate_limiter=rate_limiter,
            transport=transport,
        )

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        env: Mapping[str, str] | None = None,
        *,
        read_image: ImageLoader | None = None,
        on_replay_degrade: ReplayDegrade | None = None,
    ) -> ProvidersAdapter:
        """Build from a TOML or YAML file holding `{"providers": {...}}`."""
        return cls.from_config(
            load_config_file(path),
            env=env,
            read_image=read_image,
            on_replay_degrade=on_replay_degrade,
        )

    @property
    def snapshot(self) -> Snapshot:
        """The currently published snapshot."""
        return self._snapshot

    @property
    def routes(self) -> list[str]:
        """The routes of the current snapshot, sorted."""
        return self._snapshot.routes

    @property
    def read_image(self) -> ImageLoader | None:
        """The image-attachment loader, looked up per request (so one mounted after the adapter
        is used by the next request); None makes images `UNSUPPORTED_CONTENT`."""
        return self._read_image

    @read_image.setter
    def read_image(self, loader: ImageLoader | None) -> None:
        self._read_image = loader

    def register(self, runtime: LlmRuntime) -> Registration | None:
        """Register every route at once on `runtime` and the configurable-provider directory.

        Returns the runtime's `Registration`, or None while dormant (no routes); a later
        `update_config` that adds routes registers them then.
        """
        self._runtime = runtime
        self._directory = runtime.register_configurable_providers(directory_entries(self._snapshot))
        self._discovery_disposer = runtime.register_model_discovery(
            SETTINGS_NS, self.discover_models
        )
        self._facts = registration_facts(self._snapshot)
        if self.routes:
            self._registration = runtime.register_adapter(self._snapshot.config_order, self)
        return self._registration

    def unregister(self) -> None:
        """Withdraw the routes, the directory entries and discovery registered by `register`."""
        for handle in (self._registration, self._directory, self._discovery_disposer):
            if handle is not None:
                handle()
        self._registration = self._directory = self._discovery_disposer = None
        self._runtime = None

    def update_config(self, config: Mapping[str, object] | None) -> bool:
        """Validate the new profile set fully, publish it, and re-register (atomic `replace`)
        only when the route set, a display name or a retry policy changed; returns whether it
        re-registered. A refused swap restores the previous snapshot and re-raises."""
        new = Snapshot(resolve_profiles(config))
        old = self._snapshot
        facts = registration_facts(new)
        self._snapshot = new
        if self._runtime is None or facts == self._facts:
            return False
        directory = self._directory
        try:
            if directory is not None:  # validated whole first: a collision changes nothing
                directory.replace(directory_entries(new))
            try:
                if self._registration is None:
                    if new.routes:
                        self._registration = self._runtime.register_adapter(new.config_order, self)
                else:
                    self._registration.replace(new.config_order)
            except BaseException:
                if directory is not None:
                    directory.replace(directory_entries(old))
                raise
        except BaseException:
            self._snapshot = old
            raise
        self._facts = facts
        return True

    async def discover_models(self, request: ModelDiscoveryRequest) -> list[DiscoveredModel]:
        """Which models a draft endpoint serves (catalog providers answered offline)."""
        return await discover_models(
            request,
            profiles=self._snapshot.profiles,
            env=os.environ if self._env is None else self._env,
            transport=self._transport,
        )

    # ---- describing ---------------------------------------------------------------------------

    def _profile(self, snapshot: Snapshot, provider: str) -> ResolvedProfile:
        profile = snapshot.profiles.get(provider)
        if profile is None:
            raise LlmError(f'no provider route "{provider}" is configured', ErrorCode.NO_ADAPTER)
        return profile

    def _model(self, profile: ResolvedProfile, model: str) -> ModelDescriptor:
        found = profile.models.get(model)
        if found is None:
            raise LlmError(
                f'provider "{profile.route}" serves no model "{model}"', ErrorCode.UNKNOWN_MODEL
            )
        return found

    def provider_info(self, provider: str) -> ProviderInfo:
        """`{id: route, name: display name}`; a route no longer configured answers its key."""
        profile = self._snapshot.profiles.get(provider)
        return ProviderInfo(provider, profile.display_name if profile else provider)

    def provider_retry_policy(self, provider: str) -> RetryPolicy | None:
        """The retry policy captured from the route's profile."""
        profile = self._snapshot.profiles.get(provider)
        return profile.retry_policy if profile else None

    async def list_models(self, provider: str) -> list[ModelInfo]:
        """The route's models, stamped with the route."""
        profile = self._profile(self._snapshot, provider)
        default = self.default_model(provider)
        return [
            ModelInfo(
                provider=provider,
                id=m.id,
                name=m.name,
                input_modalities=m.input,
                recommended=m.id == default,
            )
            for m in profile.models.values()
        ]

    def missing_credential(self, provider: str) -> str | None:
        """The variable a route still needs set before it can authenticate (None: ready)."""
        profile = self._profile(self._snapshot, provider)
        env = os.environ if self._env is None else self._env
        needs: set[str] = set()
        for model in profile.models.values():
            missing = missing_credential(profile, protocol(model.api), env)
            if missing is None:
                return None
            needs.add(missing)
        return min(needs) if needs else None

    def default_model(self, provider: str) -> str | None:
        """The route's default model: the catalog's recommended one when the route serves it,
        else its first model (None for an unknown route)."""
        profile = self._snapshot.profiles.get(provider)
        if profile is None or not profile.models:
            return None
        catalog = load_catalog().providers.get(provider) if profile.catalog_route else None
        wanted = catalog.default_model if catalog is not None else None
        return wanted if wanted in profile.models else next(iter(profile.models))

    def pinned(self) -> LlmAdapter:
        """This adapter bound to its current config snapshot (for a prepared call): a later
        `update_config` does not change what the prepared call resolves or sends."""
        return PinnedView(self, self._snapshot, self._resolve, self._stream_on)

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        """Context window, configured output cap and reasoning efforts of one model."""
        return self._resolve(self._snapshot, provider, model)

    def _resolve(self, snapshot: Snapshot, provider: str, model: str) -> ResolvedModelInfo:
        profile = self._profile(snapshot, provider)
        desc = self._model(profile, model)
        reasoning = None
        spec = protocol(desc.api)
        if desc.reasoning and (spec.reasoning is None or spec.reasoning(desc)):
            levels = desc.levels
            reasoning = ModelReasoningInfo(
                tuple(ReasoningEffortInfo(level, level.capitalize()) for level in levels),
                profile.reasoning if profile.reasoning in levels else None,
            )
        return ResolvedModelInfo(
            provider=provider,
            id=desc.id,
            name=desc.name,
            input_modalities=desc.input,
            context=ModelContext(desc.context_window),
            default_max_tokens=desc.configured_max_tokens,
            reasoning=reasoning,
            structured_output=structured_output_support(desc),
            tool_choice=True,
            parallel_tool_calls=spec.parallel_tool_calls,
            pricing=desc.pricing,
            wire=desc.api,
            default_timeout_ms=profile.timeout_ms,
            default_first_token_timeout_ms=profile.first_token_timeout_ms,
        )

    # ---- streaming ----------------------------------------------------------------------------

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Stream one call: checks before any I/O, then one request, chunks as they arrive."""
        return self._stream_on(options, None)

    def _stream_on(
        self, options: GenerateOptions, snapshot: Snapshot | None
    ) -> AsyncIterator[StreamChunk]:
        return pump_sse(functools.partial(self._open, options, snapshot), map_error=_overflow)

    async def _open(self, options: GenerateOptions, pinned: Snapshot | None = None) -> StreamSource:
        snapshot = self._snapshot if pinned is None else pinned  # captured before any await
        return await open_call(
            snapshot,
            options,
            env=os.environ if self._env is None else self._env,
            load_image=self._read_image,
            on_degrade=self._on_degrade,
            clock=self._clock,
            limiter=self.rate_limiter,
            transport=self._transport,
        )

    # ---- embeddings ---------------------------------------------------------------------------

    def embed_limits(self, options: EmbedOptions) -> EmbedLimits:
        """How many inputs one embeddings request of the route's family takes (`embeddings`)."""
        return embed_limits(self._snapshot, options)

    def batches(self, provider: str) -> RouteBatches:
        """The provider batch calls of route `provider` (`batches`; used by `modelwire.batch`)."""
        env = os.environ if self._env is None else self._env
        return route_batches(self._snapshot, provider, env, self._transport)

    async def embed(self, options: EmbedOptions) -> EmbedResult:
        """One embeddings request of the route (checks before I/O; `embeddings`)."""
        return await embed_request(
            self._snapshot,
            options,
            env=os.environ if self._env is None else self._env,
            clock=self._clock,
            limiter=self.rate_limiter,
            transport=self._transport,
        )


def _overflow(exc: LlmError) -> LlmError:
    """An HTTP error whose text says the context window overflowed is that, whatever its status."""
    if (
        exc.status is not None
        and exc.code != ErrorCode.CONTEXT_WINDOW_EXCEEDED
        and is_overflow_text(exc.message)
    ):
        return reclassify(exc, ErrorCode.CONTEXT_WINDOW_EXCEEDED)
    return exc
