"""DeepSeek adapter configuration: the validated, immutable snapshot, the catalog and its metadata.

`resolve_deepseek_config` turns keyword or mapping configuration into a `DeepSeekConfig`; every
failure is `LlmError` code ``INVALID_CONFIG`` (or ``INVALID_CATALOG`` for a catalog entry) whose
message names the offending field path, e.g. ``models[1].context_window``. The client-side rate
limits (`max_concurrency`, `requests_per_minute`, `tokens_per_minute`) are validated as a
providers profile's are (`wire.ratelimit.route_limits`), named ``deepseek.<field>``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Final, Literal, TypeAlias

import msgspec

from ...errors import ErrorCode, LlmError
from ...policy import RetryPolicy, resolve_retry_policy
from ...vocab import (
    ModelContext,
    ModelInfo,
    ModelReasoningInfo,
    ReasoningEffortInfo,
    ResolvedModelInfo,
)
from ...vocab.redacted import hidden, hidden_env, hidden_repr, hidden_rich_repr
from ...wire.ratelimit import RouteLimits, route_limits
from ...wire.settings import (
    DEFAULT_CONNECT_TIMEOUT_MS,
    DEFAULT_KEEPALIVE_S,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_SETTINGS,
    TransportSettings,
    transport_settings,
)
from ...wire.urls import http_url_problem
from ...wire.watchdog import MAX_IDLE_TIMEOUT_MS
from .pricing import catalog_pricing

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODELS",
    "EFFORTS",
    "DeepSeekConfig",
    "DeepSeekModel",
    "DeepSeekReasoning",
    "Effort",
    "ReasoningPassback",
    "Thinking",
    "context_window",
    "list_model_infos",
    "resolve_deepseek_config",
    "resolve_model_info",
]

DEFAULT_BASE_URL: Final = "https://api.deepseek.com"
DEFAULT_MAX_TOKENS: Final = 256_000
DEFAULT_CONTEXT_WINDOW: Final = 1_000_000
DEFAULT_IDLE_TIMEOUT_MS: Final = 300_000
DEFAULT_PUBLISHED_EFFORT: Final = "high"
_MAX_SAFE_INT: Final = 2**53 - 1

Effort: TypeAlias = Literal["off", "low", "high", "max"]
"""A DeepSeek reasoning effort; ``off`` disables thinking and never crosses the wire."""
Thinking: TypeAlias = Literal["enabled", "disabled"]
"""The deployment's thinking switch; ``disabled`` locks the effort to ``off``."""
ReasoningPassback: TypeAlias = Literal["tool-turns", "every-turn"]
"""Which assistant turns replay ``reasoning_content``: tool-call turns only, or every reasoned turn."""

EFFORTS: Final[tuple[str, ...]] = ("off", "low", "high", "max")
_EFFORT_INFOS: Final = tuple(ReasoningEffortInfo(e, e.capitalize()) for e in EFFORTS)


class DeepSeekModel(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One catalog entry; `name` defaults to `id`, modalities to text only."""

    id: str
    name: str | None = None
    description: str | None = None
    context_window: int | None = None
    max_tokens: int | None = None
    input_modalities: tuple[str, ...] = ("text",)


class DeepSeekReasoning(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Deployment reasoning defaults: the `thinking` switch and the default `effort`."""

    thinking: Thinking | None = None
    effort: Effort | None = None


DEFAULT_MODELS: Final[tuple[DeepSeekModel, ...]] = (
    DeepSeekModel(id="deepseek-v4-flash", name="DeepSeek-V4-Flash", context_window=1_000_000),
    DeepSeekModel(id="deepseek-v4-pro", name="DeepSeek-V4-Pro", context_window=1_000_000),
)
"""The built-in catalog (advisory: unlisted model ids are passed through)."""


class DeepSeekConfig(msgspec.Struct, frozen=True, kw_only=True):
    """One validated configuration snapshot; a `stream()` call uses one snapshot throughout.

    Its repr hides the literal `api_key` and the `env` mapping (it may hold every key).
    """

    base_url: str
    api_key: str | None
    api_key_env: str | None
    models: tuple[DeepSeekModel, ...]
    reasoning: DeepSeekReasoning
    max_tokens: int
    default_context_window: int
    stream_idle_timeout_ms: float
    retry_policy: RetryPolicy
    reasoning_passback: ReasoningPassback
    env: Mapping[str, str] | None
    rate_limits: RouteLimits = msgspec.field(default_factory=RouteLimits)
    transport_settings: TransportSettings = DEFAULT_SETTINGS

    def _hidden_fields(self) -> dict[str, object]:
        return {"api_key": hidden(self.api_key), "env": hidden_env(self.env)}

    def __repr__(self) -> str:
        return hidden_repr(self, self._hidden_fields())

    def __rich_repr__(self) -> list[tuple[str, object]]:
        return hidden_rich_repr(self, self._hidden_fields())


def _fail(message: str, code: str = ErrorCode.INVALID_CONFIG) -> LlmError:
    return LlmError(f"DeepSeek adapter: {message}", code)


def _positive_int(value: object, limit: int = _MAX_SAFE_INT) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool) and 0 < value <= limit) or (
        isinstance(value, float) and value.is_integer() and 0 < value <= limit
    )


def _model(raw: object, path: str) -> DeepSeekModel:
    if isinstance(raw, DeepSeekModel):
        entry = raw
    elif isinstance(raw, Mapping):
        unknown = set(raw) - set(DeepSeekModel.__struct_fields__)
        if unknown:
            raise _fail(f'{path}: unknown key "{sorted(unknown)[0]}"', ErrorCode.INVALID_CATALOG)
        fields = dict(raw)
        for name in ("context_window", "max_tokens"):
            value = fields.get(name)
            if value is not None and not _positive_int(value):
                raise _fail(f"{path}.{name} must be a positive integer", ErrorCode.INVALID_CATALOG)
            if isinstance(value, float):
                fields[name] = int(value)
        if isinstance(fields.get("input_modalities"), list):
            fields["input_modalities"] = tuple(fields["input_modalities"])
        try:
            entry = msgspec.convert(fields, DeepSeekModel)
        except msgspec.ValidationError as exc:
            where = str(exc).rpartition(" - at `$")[2].rstrip("`")
            what = str(exc).partition(" - at ")[0]
            raise _fail(f"{path}{where}: {what}", ErrorCode.INVALID_CATALOG) from None
    else:
        raise _fail(f"{path} must be a mapping", ErrorCode.INVALID_CATALOG)
    if not isinstance(entry.id, str) or not entry.id.strip():
        raise _fail(f"{path}.id: catalog model ids must be non-empty", ErrorCode.INVALID_CATALOG)
    if entry.name is not None and not entry.name.strip():
        raise _fail(f"{path}.name: empty name", ErrorCode.INVALID_CATALOG)
    if entry.context_window is not None and not _positive_int(entry.context_window):
        raise _fail(f"{path}.context_window must be a positive integer", ErrorCode.INVALID_CATALOG)
    if entry.max_tokens is not None and not _positive_int(entry.max_tokens):
        raise _fail(f"{path}.max_tokens must be a positive integer", ErrorCode.INVALID_CATALOG)
    mods = entry.input_modalities
    if not mods:
        raise _fail(f"{path}.input_modalities must not be empty", ErrorCode.INVALID_CATALOG)
    if any(m not in ("text", "image") for m in mods):
        raise _fail(
            f'{path}.input_modalities must contain only "text" and "image"',
            ErrorCode.INVALID_CATALOG,
        )
    if len(set(mods)) != len(mods):
        raise _fail(
            f"{path}.input_modalities must not contain duplicates", ErrorCode.INVALID_CATALOG
        )
    return entry


def _models(raw: object) -> tuple[DeepSeekModel, ...]:
    if raw is None:
        return DEFAULT_MODELS
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise _fail("models must be a list of catalog entries", ErrorCode.INVALID_CATALOG)
    out = tuple(_model(item, f"models[{i}]") for i, item in enumerate(raw))
    seen: set[str] = set()
    for i, entry in enumerate(out):
        if entry.id in seen:
            raise _fail(
                f'models[{i}]: duplicate catalog model "{entry.id}"', ErrorCode.INVALID_CATALOG
            )
        seen.add(entry.id)
    return out


def _reasoning(raw: object) -> DeepSeekReasoning:
    if raw is None:
        return DeepSeekReasoning()
    if isinstance(raw, DeepSeekReasoning):
        value = raw
    elif isinstance(raw, Mapping):
        unknown = set(raw) - {"thinking", "effort"}
        if unknown:
            raise _fail(f'reasoning: unknown key "{sorted(unknown)[0]}"')
        value = DeepSeekReasoning(thinking=raw.get("thinking"), effort=raw.get("effort"))
    else:
        raise _fail("reasoning must be a mapping with thinking and effort")
    if value.thinking not in (None, "enabled", "disabled"):
        raise _fail('reasoning.thinking must be "enabled" or "disabled"')
    if value.effort is not None and value.effort not in EFFORTS:
        raise _fail('reasoning.effort must be one of "off", "low", "high", "max"')
    if value.thinking == "disabled" and value.effort not in (None, "off"):
        raise _fail('reasoning.thinking "disabled" allows only reasoning effort "off"')
    return value


def resolve_deepseek_config(
    *,
    api_key: str | None = None,
    api_key_env: str | None = "DEEPSEEK_API_KEY",
    base_url: str | None = None,
    models: object = None,
    reasoning: object = None,
    max_tokens: object = DEFAULT_MAX_TOKENS,
    default_context_window: object = DEFAULT_CONTEXT_WINDOW,
    stream_idle_timeout_ms: object = DEFAULT_IDLE_TIMEOUT_MS,
    retry_policy: object = None,
    reasoning_passback: object = "tool-turns",
    max_concurrency: object = None,
    requests_per_minute: object = None,
    tokens_per_minute: object = None,
    proxy: object = None,
    ca_file: object = None,
    client_cert: object = None,
    client_key: object = None,
    max_connections: object = DEFAULT_MAX_CONNECTIONS,
    keepalive_s: object = DEFAULT_KEEPALIVE_S,
    connect_timeout_ms: object = DEFAULT_CONNECT_TIMEOUT_MS,
    env: Mapping[str, str] | None = None,
    launch_env: Mapping[str, str] | None = None,
) -> DeepSeekConfig:
    """Validate configuration into a snapshot (rules A.31-A.33); raises `LlmError` INVALID_CONFIG.

    `base_url` falls back to ``DEEPSEEK_BASE_URL`` in `launch_env` (default: `env`, else the
    process environment), then to the public endpoint.
    """
    if api_key is not None and not isinstance(api_key, str):
        raise _fail("api_key must be a string")
    if api_key_env is not None and (not isinstance(api_key_env, str) or not api_key_env):
        raise _fail("api_key_env must be a non-empty environment variable name")
    if base_url is None:
        source = launch_env if launch_env is not None else (env if env is not None else os.environ)
        base_url = source.get("DEEPSEEK_BASE_URL") or DEFAULT_BASE_URL
    if not isinstance(base_url, str):
        raise _fail("base_url must be an http:// or https:// URL")
    problem = http_url_problem(base_url)
    if problem is not None:
        raise _fail(f"base_url {problem}")
    if not _positive_int(max_tokens):
        raise _fail("max_tokens must be a positive safe integer")
    if not _positive_int(default_context_window):
        raise _fail("default_context_window must be a positive integer")
    idle = stream_idle_timeout_ms
    if isinstance(idle, bool) or not isinstance(idle, (int, float)) or not math.isfinite(idle):
        raise _fail("stream_idle_timeout_ms must be a positive finite number")
    if idle <= 0:
        raise _fail("stream_idle_timeout_ms must be a positive finite number")
    if idle > MAX_IDLE_TIMEOUT_MS:
        raise _fail(f"stream_idle_timeout_ms must be no greater than {MAX_IDLE_TIMEOUT_MS}")
    if reasoning_passback not in ("tool-turns", "every-turn"):
        raise _fail('reasoning_passback must be "tool-turns" or "every-turn"')
    try:
        policy = resolve_retry_policy(retry_policy, "retry_policy")  # type: ignore[arg-type]
    except LlmError:
        raise
    except Exception as exc:
        raise _fail(str(exc)) from None
    limits = {
        "max_concurrency": max_concurrency,
        "requests_per_minute": requests_per_minute,
        "tokens_per_minute": tokens_per_minute,
    }
    network = {
        "proxy": proxy,
        "ca_file": ca_file,
        "client_cert": client_cert,
        "client_key": client_key,
        "max_connections": max_connections,
        "keepalive_s": keepalive_s,
        "connect_timeout_ms": connect_timeout_ms,
    }
    try:
        rate_limits = route_limits(limits, "deepseek")
        settings = transport_settings(network, "deepseek")
    except ValueError as exc:
        raise _fail(str(exc)) from None
    return DeepSeekConfig(
        base_url=base_url,
        api_key=api_key,
        api_key_env=api_key_env,
        models=_models(models),
        reasoning=_reasoning(reasoning),
        max_tokens=int(max_tokens),  # type: ignore[call-overload]
        default_context_window=int(default_context_window),  # type: ignore[call-overload]
        stream_idle_timeout_ms=float(idle),
        retry_policy=policy,
        reasoning_passback=reasoning_passback,
        env=env,
        rate_limits=rate_limits,
        transport_settings=settings,
    )


def _entry(config: DeepSeekConfig, model: str) -> DeepSeekModel | None:
    for entry in config.models:
        if entry.id == model:
            return entry
    return None


def context_window(config: DeepSeekConfig, model: str) -> int:
    """The context window of `model`: its catalog entry's, else the configured default."""
    entry = _entry(config, model)
    return (entry.context_window if entry is not None else None) or config.default_context_window


def published_reasoning(config: DeepSeekConfig) -> ModelReasoningInfo:
    """The efforts every model publishes: four, or only ``off`` when thinking is disabled."""
    if config.reasoning.thinking == "disabled":
        return ModelReasoningInfo((_EFFORT_INFOS[0],), "off")
    return ModelReasoningInfo(_EFFORT_INFOS, config.reasoning.effort or DEFAULT_PUBLISHED_EFFORT)


def resolve_model_info(config: DeepSeekConfig, provider: str, model: str) -> ResolvedModelInfo:
    """Exact-model metadata from the catalog, or pass-through defaults for an unlisted id; the
    prices are the installed model catalog's (`pricing.py`), None for an id it does not list."""
    entry = _entry(config, model)
    if entry is None:
        entry = DeepSeekModel(id=model)
    return ResolvedModelInfo(
        provider=provider,
        id=entry.id,
        name=entry.name or entry.id,
        description=entry.description,
        input_modalities=entry.input_modalities,
        context=ModelContext(entry.context_window or config.default_context_window),
        default_max_tokens=entry.max_tokens or config.max_tokens,
        reasoning=published_reasoning(config),
        structured_output="native-json",  # JSON mode, no schema mode: the runtime validates
        tool_choice=True,
        parallel_tool_calls=False,  # not a DeepSeek API parameter
        pricing=catalog_pricing(entry.id),
        wire="deepseek",
    )


def list_model_infos(config: DeepSeekConfig, provider: str) -> list[ModelInfo]:
    """The catalog as advisory `ModelInfo` entries (name defaults to id)."""
    return [
        ModelInfo(
            provider=provider,
            id=e.id,
            name=e.name or e.id,
            description=e.description,
            input_modalities=e.input_modalities,
        )
        for e in config.models
    ]


def accepts_images(config: DeepSeekConfig, model: str) -> bool:
    """True when the catalog lists `model` with the image modality (unlisted: text only)."""
    entry = _entry(config, model)
    return entry is not None and "image" in entry.input_modalities
