"""`LlmRuntime`: the route registry, model metadata, prepared calls and the call surfaces (§6).

Registration effects may be owned by a `Scope` (`scope=`), which releases them when it closes.
The async lookups (`list_models`, `resolve_model_info`, `resolve_call_config`, `prepare_call`)
capture the registration when they are *called*, not when first awaited (spec §9 item 13); a
missing route still surfaces as `NO_ADAPTER` when the result is awaited.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import cast

from ..errors import ErrorCode, InvalidRequestError, LlmError, categorized
from ..policy import RetryPolicy
from ..vocab import (
    AdapterDefaults,
    CallConfig,
    ConfigurableProvider,
    ContentBlock,
    DiscoveredModel,
    EmbedOptions,
    EmbedResult,
    GenerateOptions,
    ModelDiscoveryRequest,
    ModelInfo,
    ProviderInfo,
    ResolvedModelInfo,
    StreamChunk,
    call_config_equals,
)
from ..vocab.typing import Coro
from .adapter import LlmAdapter
from .boundary import ChunkStream, Dispatched, GuardedStream
from .deadline import call_deadline
from .directory import DirectoryRegistration, Discover, DiscoveryRegistry, ProviderDirectory
from .embed import embed_call, embed_problem
from .events import AdapterChangeListener, AdapterChangeNotifier
from .generate import GenerateResult, assemble_call, stream_blocks
from .middleware import (
    GenerateMiddleware,
    MiddlewareChain,
    StreamMiddleware,
    dispatch_generate,
    dispatch_stream,
)
from .models import check_catalog, check_model_info, materialize
from .options_contract import refused_option, unsupported
from .output import checked_answer, config_shape_problem, shape_problem
from .prepared import CONFIG_DRIFT_MESSAGE, PreparedCall
from .registry import AdapterRegistry, Registration, Route, unknown_route_text
from .replay_filter import filter_replay_state
from .scope import Scope
from .sync import run_sync
from .validation import call_config_problem, options_problem

__all__ = ["LlmRuntime"]


def _no_adapter(provider: str, routes: Iterable[str]) -> LlmError:
    return LlmError(
        f'{unknown_route_text(provider, routes)}: no adapter registered for provider "{provider}"',
        ErrorCode.NO_ADAPTER,
    )


def _check_config(config: CallConfig) -> None:
    problem = call_config_problem(config) or config_shape_problem(
        getattr(config, "output", None), getattr(config, "tool_choice", None)
    )
    if problem is not None:
        raise InvalidRequestError(f"invalid call config: {problem}", ErrorCode.INVALID_OPTION)


def _owned(remove: Callable[[], None], scope: Scope | None) -> Callable[[], None]:
    """Make `remove` idempotent and, when a scope is given, owned by it."""
    state = [scope]

    def dispose() -> None:
        if not state:
            return
        owner = state.pop()
        if owner is not None:
            owner.discard(dispose)
        remove()

    if scope is not None:
        scope.add(dispose)
    return dispose


class LlmRuntime:
    """The LLM service: adapters by route, model metadata, prepared calls and streaming calls.

    `default_model` is the `"route:model"` a caller that names none uses (`Agent.from_model()`):
    the config file's `[default]` one when `open_runtime` built the runtime, else None.
    """

    def __init__(self) -> None:
        self.default_model: str | None = None
        self._notifier = AdapterChangeNotifier()
        self._registry = AdapterRegistry(self._notifier.publish)
        self._directory = ProviderDirectory(self._notifier.publish)
        self._discovery = DiscoveryRegistry()
        self._stream_chain = MiddlewareChain()
        self._generate_chain = MiddlewareChain()

    # ---- registry ------------------------------------------------------------------------

    def register_adapter(
        self, providers: Sequence[str], adapter: LlmAdapter, *, scope: Scope | None = None
    ) -> Registration:
        """Serve `providers` with `adapter`; all-or-nothing (`INVALID_ADAPTER`, `DUPLICATE_ADAPTER`)."""
        return self._registry.register(providers, adapter, scope)

    def route_adapter(self, provider: str) -> LlmAdapter:
        """The adapter registered for route `provider` now (`NO_ADAPTER` otherwise)."""
        route = self._registry.routes.get(provider)
        if route is None:
            raise _no_adapter(provider, self._registry.routes)
        return route.adapter

    def list_providers(self) -> list[ProviderInfo]:
        """The registered routes' provider info, in registration order."""
        return [route.info for route in self._registry.routes.values()]

    def provider_retry_policy(self, provider: str) -> RetryPolicy:
        """The retry policy captured for the route now registered; `NO_ADAPTER` otherwise."""
        route = self._registry.routes.get(provider)
        if route is None:
            raise _no_adapter(provider, self._registry.routes)
        return route.retry_policy

    def on_adapter_change(
        self, listener: AdapterChangeListener, *, scope: Scope | None = None
    ) -> Callable[[], None]:
        """Run `listener` after every registry or directory commit; returns its remover."""
        if scope is not None:
            scope.ensure_open()
        return _owned(self._notifier.add(listener), scope)

    # ---- configurable-provider directory and discovery -----------------------------------

    def register_configurable_providers(
        self, entries: Sequence[ConfigurableProvider], *, scope: Scope | None = None
    ) -> DirectoryRegistration:
        """Declare providers a settings surface may offer (`INVALID_DIRECTORY`, `DUPLICATE_DIRECTORY`)."""
        return self._directory.register(entries, scope)

    def list_configurable_providers(self) -> list[ConfigurableProvider]:
        """The declared configurable providers, in declaration order."""
        return list(self._directory.entries.values())

    def register_model_discovery(
        self, settings_ns: str, discover: Discover, *, scope: Scope | None = None
    ) -> Callable[[], None]:
        """Offer model discovery for a settings namespace; returns its remover."""
        if scope is not None:
            scope.ensure_open()
        return _owned(self._discovery.register(settings_ns, discover), scope)

    def list_model_discovery_namespaces(self) -> list[str]:
        """The namespaces that offer model discovery, in registration order."""
        return list(self._discovery.offers)

    async def discover_models(
        self, settings_ns: str, request: ModelDiscoveryRequest
    ) -> list[DiscoveredModel]:
        """Interrogate a draft endpoint (`NO_DISCOVERY`, `INVALID_DISCOVERY`); stores nothing."""
        return await self._discovery.discover(settings_ns, request)

    # ---- model metadata ------------------------------------------------------------------

    def list_models(self, provider: str) -> Coro[list[ModelInfo]]:
        """The route's advisory catalog, validated (`INVALID_CATALOG`) and detached."""
        return self._list_models(provider, self._registry.routes.get(provider))

    async def _list_models(self, provider: str, route: Route | None) -> list[ModelInfo]:
        if route is None:
            raise _no_adapter(provider, self._registry.routes)
        return check_catalog(provider, await route.adapter.list_models(provider))

    def resolve_model_info(self, provider: str, model: str) -> Coro[ResolvedModelInfo]:
        """Exact-model metadata from the route's adapter, validated (`INVALID_MODEL_*`)."""
        return self._resolve_on(self._registry.routes.get(provider), provider, model)

    async def _resolve_on(
        self, route: Route | None, provider: str, model: str
    ) -> ResolvedModelInfo:
        if route is None:
            raise _no_adapter(provider, self._registry.routes)
        try:
            info = await route.adapter.resolve_model(provider, model)
        except LlmError as exc:  # raised by its category (`ModelNotFoundError`, `AuthError`, ...)
            twin = categorized(exc)
            if twin is exc:
                raise
            raise twin from exc
        return check_model_info(provider, model, info)

    def _route_of(self, config: CallConfig) -> Route | None:
        provider: object = getattr(config, "provider", None)
        return self._registry.routes.get(provider) if isinstance(provider, str) else None

    def resolve_call_config(self, config: CallConfig) -> Coro[CallConfig]:
        """Materialize adapter defaults into `config` (the same object when nothing changed).

        A malformed config (see `validation`) raises `INVALID_OPTION` when awaited.
        """
        return self._resolve_config(self._route_of(config), config)

    async def _resolve_config(self, route: Route | None, config: CallConfig) -> CallConfig:
        _check_config(config)
        info = await self._resolve_on(route, config.provider, config.model)
        return materialize(config, info)

    def prepare_call(self, config: CallConfig) -> Coro[PreparedCall]:
        """Resolve `config` once against the current registration and pin both for dispatch.

        A malformed config (see `validation`) raises `INVALID_OPTION` when awaited, before the
        adapter is asked anything.
        """
        return self._prepare(self._route_of(config), config)

    async def _prepare(self, route: Route | None, config: CallConfig) -> PreparedCall:
        _check_config(config)
        if route is None:
            raise _no_adapter(config.provider, self._registry.routes)
        pinned = route.adapter.pinned()  # one configuration generation, prepare to dispatch
        if pinned is not route.adapter:
            route = Route(pinned, route.info, route.retry_policy, route.owner)
        info = await self._resolve_on(route, config.provider, config.model)
        resolved = materialize(config, info)
        stop = resolved.stop
        frozen = CallConfig(
            provider=resolved.provider,
            model=resolved.model,
            reasoning_effort=resolved.reasoning_effort,
            temperature=resolved.temperature,
            max_tokens=resolved.max_tokens,
            stop=None if stop is None else tuple(stop),
            tool_choice=resolved.tool_choice,
            output=resolved.output,
        )
        defaults = AdapterDefaults(
            reasoning_effort=config.reasoning_effort is None
            and resolved.reasoning_effort is not None,
            max_tokens=config.max_tokens is None and resolved.max_tokens is not None,
        )
        return PreparedCall(self._dispatch, route, frozen, info.context, defaults, info)

    # ---- middleware ----------------------------------------------------------------------

    def use(
        self, middleware: StreamMiddleware, *, prepend: bool = False, scope: Scope | None = None
    ) -> Callable[[], None]:
        """Add an `llm/stream` middleware (last, or outermost with `prepend`); returns its remover."""
        if scope is not None:
            scope.ensure_open()
        return _owned(self._stream_chain.add(middleware, prepend=prepend), scope)

    def use_generate(
        self, middleware: GenerateMiddleware, *, prepend: bool = False, scope: Scope | None = None
    ) -> Callable[[], None]:
        """Add an `llm/generate` middleware around non-streaming calls; returns its remover."""
        if scope is not None:
            scope.ensure_open()
        return _owned(self._generate_chain.add(middleware, prepend=prepend), scope)

    # ---- calls ---------------------------------------------------------------------------

    def stream(self, options: GenerateOptions) -> ChunkStream:
        """Stream one call through `llm/stream`; adapter failures end in `Finish(Error|Aborted)`.

        A malformed request (see `validation`) ends in one `INVALID_OPTION` error finish before
        any adapter is consulted.
        """
        return self._dispatch(options, None)

    def _dispatch(self, options: GenerateOptions, prepared: PreparedCall | None) -> ChunkStream:
        chain = cast(tuple[StreamMiddleware, ...], self._stream_chain.items)

        def terminal(opts: GenerateOptions) -> AsyncIterator[StreamChunk]:
            return GuardedStream(lambda: self._open_adapter(opts, prepared))

        return dispatch_stream(chain, options, terminal)

    async def _open_adapter(
        self, options: GenerateOptions, prepared: PreparedCall | None
    ) -> Dispatched:
        """Failure sites (a)-(c): check the request, select the route, resolve, refuse what the
        route's row of the options contract refuses, filter replay state, dispatch; with the
        call's deadlines."""
        problem = options_problem(options) or shape_problem(options)
        if problem is not None:
            raise LlmError(f"invalid request: {problem}", ErrorCode.INVALID_OPTION)
        if prepared is None:
            route = self._registry.routes.get(options.provider)
            if route is None:
                raise _no_adapter(options.provider, self._registry.routes)
            # The route captured before the await serves the call even if it is replaced meanwhile.
            info = await self._resolve_on(route, options.provider, options.model)
            options = materialize(options, info)
        else:
            route = prepared.route
            if not call_config_equals(options, prepared.config):
                raise LlmError(CONFIG_DRIFT_MESSAGE, ErrorCode.INVALID_PREPARED_CALL)
            info = prepared.model_info
        option = refused_option(options, info)
        if option is not None:
            raise unsupported(options.provider, option)
        adapter = route.adapter
        request = filter_replay_state(options, adapter, self._registry.routes)
        stream = adapter.stream(request).__aiter__()
        deadline = call_deadline(options, info)
        output = options.output
        if output is not None and not (output.strict and info.structured_output == "native-strict"):
            # the provider does not enforce the schema: the answer is checked here
            checked = checked_answer(stream, output, options.provider, options.model)
            return checked.__aiter__(), deadline
        return stream, deadline

    async def generate(self, options: GenerateOptions) -> GenerateResult:
        """One call through `llm/generate` and `llm/stream`, fully assembled."""
        chain = cast(tuple[GenerateMiddleware, ...], self._generate_chain.items)
        if not chain:
            return await assemble_call(options, self.stream(options))
        return await dispatch_generate(
            chain, options, lambda opts: assemble_call(opts, self.stream(opts))
        )

    def generate_sync(self, options: GenerateOptions) -> GenerateResult:
        """`generate` for scripts and notebooks: blocks until the call is assembled.

        Works with no running loop and inside one (see `runtime.sync`: every sync call runs on
        one background loop); `Ctrl-C` cancels the call and re-raises `KeyboardInterrupt`.
        """
        return run_sync(lambda: self.generate(options))

    async def embed(self, options: EmbedOptions) -> EmbedResult:
        """The vectors of `options.inputs`, in input order, from the route's adapter.

        A malformed request raises `INVALID_OPTION` before any adapter is consulted; failures
        are retried under the route's retry policy as chat calls are (`runtime.embed`).
        """
        problem = embed_problem(options)
        if problem is not None:
            raise InvalidRequestError(f"invalid embed request: {problem}", ErrorCode.INVALID_OPTION)
        route = self._registry.routes.get(options.provider)
        if route is None:
            raise _no_adapter(options.provider, self._registry.routes)
        return await embed_call(route.adapter, options, route.retry_policy)

    def stream_blocks(self, options: GenerateOptions) -> AsyncIterator[ContentBlock]:
        """One call as completed content blocks; a failure finish raises its `LlmError`."""
        return stream_blocks(self.stream(options))
