"""`DeepSeekAdapter`: DeepSeek's OpenAI-compatible chat-completions stream over the shared wire.

One `stream()` call takes one configuration snapshot, rejects images, resolves the API key, then
(under the idle watchdog) serializes the body, POSTs it once and translates the SSE stream into
chunks through the shared pump (`wire.pump`). It never retries; every failure is an `LlmError`
with a stable code, and the caller's cancellation stays `asyncio.CancelledError` (the runtime
boundary reports it as aborted).

Before its request a call waits for the route's client-side rate limits (`wire.ratelimit`, as
the providers routes do): the configured `max_concurrency` / `requests_per_minute` /
`tokens_per_minute`, and what DeepSeek's responses publish (`x-ratelimit-*`, `retry-after`).
A wait is announced through `runtime.ratewait` (the agent's `llm/rate-limit-wait`, the CLI's
stderr line) and is cancellable.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Final

from ...errors import ErrorCode, LlmError
from ...policy import RetryPolicy
from ...runtime.adapter import LlmAdapter
from ...vocab import (
    GenerateOptions,
    ModelInfo,
    ProviderInfo,
    ResolvedModelInfo,
    StreamChunk,
)
from ...wire.attribution import attribution_headers
from ...wire.credentials import assert_usable_api_key, resolve_api_key
from ...wire.h1transport import default_transport
from ...wire.http import stream_post_pieces
from ...wire.pump import StreamSource, pump_sse
from ...wire.ratelimit import RateLimiter
from ...wire.ratelimit_reads import estimate_tokens, limited_reads
from ...wire.settings import (
    DEFAULT_CONNECT_TIMEOUT_MS,
    DEFAULT_KEEPALIVE_S,
    DEFAULT_MAX_CONNECTIONS,
    SETTING_FIELDS,
)
from ...wire.transport import Transport
from ...wire.watchdog import IdleWatchdog, idle_text
from .models import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_IDLE_TIMEOUT_MS,
    DEFAULT_MAX_TOKENS,
    DeepSeekConfig,
    accepts_images,
    context_window,
    list_model_infos,
    resolve_deepseek_config,
    resolve_model_info,
)
from .serialize import build_body, has_image
from .translate import Translator

__all__ = ["DeepSeekAdapter"]

DISPLAY_NAME: Final = "DeepSeek"
_PKG: Final = "DeepSeek adapter"
_FALLBACK_REQUEST_ID: Final = ("x-deepseek-request-id",)
_CONFIG_KEYS: Final = frozenset(
    {
        "api_key",
        "api_key_env",
        "base_url",
        "models",
        "reasoning",
        "max_tokens",
        "default_context_window",
        "stream_idle_timeout_ms",
        "retry_policy",
        "reasoning_passback",
        "max_concurrency",
        "requests_per_minute",
        "tokens_per_minute",
        *SETTING_FIELDS,
    }
)


class DeepSeekAdapter(LlmAdapter):
    """The DeepSeek adapter; register it under any route name (``deepseek-official`` upstream).

    Configuration is keyword-only and validated at construction (`LlmError` ``INVALID_CONFIG``):
    `api_key` (a literal key) or `api_key_env` (the variable read on every call from `env`,
    default the process environment); `base_url` (default ``DEEPSEEK_BASE_URL`` from `env`, then
    ``https://api.deepseek.com``); `models` (catalog entries, advisory); `reasoning`
    (`DeepSeekReasoning` or a ``{"thinking", "effort"}`` mapping); `max_tokens` and
    `default_context_window` (published model metadata); `stream_idle_timeout_ms`; `retry_policy`
    (a snake_case mapping for `resolve_retry_policy`); `reasoning_passback` (``"tool-turns"``, the
    default, replays ``reasoning_content`` only on tool-call turns; ``"every-turn"`` on every
    reasoned turn); `max_concurrency` (a positive integer), `requests_per_minute` and
    `tokens_per_minute` (positive numbers), the route's client-side rate limits (None: no such
    limit; DeepSeek's published limits apply either way); the transport settings `proxy`
    (``"http://[user:password@]host:port"`` or ``"none"``; unset: the environment's proxy
    variables), `ca_file`, `client_cert` / `client_key`, `max_connections` (per host),
    `keepalive_s` and `connect_timeout_ms` (`wire.settings`); `transport` replaces the HTTP
    transport (`modelwire.wire.Transport`). `update_config` swaps in a new
    snapshot; in-flight streams keep theirs. `rate_limiter` keeps the limits' state across calls
    and config updates; `rate_limit_clock` (epoch seconds) and `rate_limit_sleep` are its time
    (a test passes fakes).
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        api_key_env: str | None = "DEEPSEEK_API_KEY",
        base_url: str | None = None,
        models: object = None,
        reasoning: object = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        default_context_window: int = DEFAULT_CONTEXT_WINDOW,
        stream_idle_timeout_ms: float = DEFAULT_IDLE_TIMEOUT_MS,
        retry_policy: Mapping[str, object] | RetryPolicy | None = None,
        reasoning_passback: str = "tool-turns",
        max_concurrency: int | None = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        proxy: str | None = None,
        ca_file: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        keepalive_s: float = DEFAULT_KEEPALIVE_S,
        connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
        env: Mapping[str, str] | None = None,
        rate_limit_clock: Callable[[], float] = time.time,
        rate_limit_sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        transport: Transport | None = None,
    ) -> None:
        self._config: DeepSeekConfig = resolve_deepseek_config(
            api_key=api_key,
            api_key_env=api_key_env,
            base_url=base_url,
            models=models,
            reasoning=reasoning,
            max_tokens=max_tokens,
            default_context_window=default_context_window,
            stream_idle_timeout_ms=stream_idle_timeout_ms,
            retry_policy=retry_policy,
            reasoning_passback=reasoning_passback,
            max_concurrency=max_concurrency,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            proxy=proxy,
            ca_file=ca_file,
            client_cert=client_cert,
            client_key=client_key,
            max_connections=max_connections,
            keepalive_s=keepalive_s,
            connect_timeout_ms=connect_timeout_ms,
            env=env,
        )
        self._entry = self._config
        # every request goes through it; proxy variables come from the process environment (as
        # curl and httpx read them), `env` is only where keys are read
        self._transport = transport or default_transport()
        self.rate_limiter = RateLimiter(clock=rate_limit_clock, sleep=rate_limit_sleep)

    @classmethod
    def from_config(
        cls, config: Mapping[str, object], *, env: Mapping[str, str] | None = None
    ) -> DeepSeekAdapter:
        """Build an adapter from a snake_case mapping (e.g. a parsed YAML/TOML section)."""
        return cls(**_kwargs(config), env=env)  # type: ignore[arg-type]

    @property
    def config(self) -> DeepSeekConfig:
        """The current validated configuration snapshot."""
        return self._config

    def update_config(self, config: Mapping[str, object] | None) -> DeepSeekConfig:
        """Validate `config` (a full snake_case mapping) and make it the snapshot for new calls.

        `None` detaches the live settings and falls back to the construction-time configuration.
        An invalid mapping raises `LlmError` and leaves the whole previous snapshot (endpoint,
        key reference, catalog, timeouts) in place; streams already running keep their snapshot.
        """
        if config is None:
            self._config = self._entry
            return self._entry
        snapshot = resolve_deepseek_config(**_kwargs(config), env=self._config.env)  # type: ignore[arg-type]
        self._config = snapshot
        return snapshot

    def provider_info(self, provider: str) -> ProviderInfo:
        """The route's display metadata (name ``DeepSeek``)."""
        return ProviderInfo(provider, DISPLAY_NAME)

    def provider_retry_policy(self, provider: str) -> RetryPolicy | None:
        """The configured retry policy (the normal defaults when none was configured)."""
        return self._config.retry_policy

    async def list_models(self, provider: str) -> list[ModelInfo]:
        """The configured catalog (advisory; unlisted ids are still served)."""
        return list_model_infos(self._config, provider)

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        """Context window, default output cap and published reasoning efforts of `model`."""
        return resolve_model_info(self._config, provider, model)

    def _api_key(self, config: DeepSeekConfig) -> str:
        """Resolve the key once per call: the literal key, else one read of the env variable."""
        var = config.api_key_env
        if config.api_key is not None or not var:
            return resolve_api_key(
                api_key=config.api_key, api_key_env=var, env=config.env, pkg=_PKG
            )
        raw = (os.environ if config.env is None else config.env).get(var)
        if not raw:  # an empty value counts as absent
            raise LlmError(
                f"{_PKG}: no API key: the environment variable {var} is not set; "
                f"export {var}=<key> (or store it: `modelwire keys set deepseek`) or pass api_key",
                ErrorCode.MISSING_CREDENTIAL,
            )
        return assert_usable_api_key(raw, _PKG, var)

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Stream one DeepSeek chat completion as chunks (exactly one HTTP request)."""
        return pump_sse(functools.partial(self._open, options))

    async def _open(self, options: GenerateOptions) -> StreamSource:
        """Check `options` and the key (before any I/O), then the request's reads and translator."""
        config = self._config
        if has_image(options):
            detail = (
                "the DeepSeek adapter does not send image content"
                if accepts_images(config, options.model)
                else "it does not accept image input"
            )
            raise LlmError(
                f'DeepSeek model "{options.model}": {detail}.', ErrorCode.UNSUPPORTED_CONTENT
            )
        api_key = self._api_key(config)
        body = build_body(options, config)
        headers = attribution_headers()
        headers["Authorization"] = f"Bearer {api_key}"
        headers["Content-Type"] = "application/json"
        headers["Accept"] = "text/event-stream"
        base_url = config.base_url
        watchdog = IdleWatchdog(
            config.stream_idle_timeout_ms,
            message=idle_text(config.stream_idle_timeout_ms, "DeepSeek stream "),
        )
        route, limiter = options.provider, self.rate_limiter
        reads = stream_post_pieces(
            base_url + "/chat/completions",
            body,
            headers,
            provider=DISPLAY_NAME,
            endpoint=base_url,
            watchdog=watchdog,
            fallback_request_id_headers=_FALLBACK_REQUEST_ID,
            secrets=(api_key,),
            on_headers=functools.partial(limiter.observe, route),
            settings=config.transport_settings,
            transport=self._transport,
        )
        translator = Translator((api_key,))

        def used() -> int | None:
            usage = translator.usage
            return None if usage is None else usage.total_tokens

        estimate = estimate_tokens(body, context_window(config, options.model))
        reads = limited_reads(reads, limiter, route, estimate, used, limits=config.rate_limits)
        return StreamSource(reads, translator, watchdog)


def _kwargs(config: Mapping[str, object]) -> dict[str, object]:
    if not isinstance(config, Mapping):
        raise LlmError(f"{_PKG}: configuration must be a mapping", ErrorCode.INVALID_CONFIG)
    for key in config:
        if key not in _CONFIG_KEYS:
            raise LlmError(f'{_PKG}: unknown configuration key "{key}"', ErrorCode.INVALID_CONFIG)
    return dict(config)
