"""Provider profiles: the `providers` config dict, its validation, defaults and file loading.

`resolve_profiles(config)` turns `{"providers": {route: profile}}` (snake_case keys) into an
immutable map of `ResolvedProfile`s, or raises `INVALID_CONFIG` starting `providers: provider
"<route>"` and naming the field path. Models are materialized in `materialize.py`.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final, TypeGuard, get_args

import msgspec
import yaml

from ...errors import ErrorCode, HarnessError
from ...policy import RetryPolicy, resolve_retry_policy
from ...vocab.redacted import hidden_headers, hidden_repr, hidden_rich_repr
from ...wire.ratelimit import LIMIT_FIELDS, RouteLimits, route_limits
from ...wire.settings import DEFAULT_SETTINGS, SETTING_FIELDS, TransportSettings, transport_settings
from ...wire.urls import http_url_problem
from .compat import LEVELS, MODALITIES, MODALITIES_TEXT, PROTOCOLS
from .materialize import DEFAULT_MAX_TOKENS, ModelDescriptor, materialize_models
from .protocols.request import CacheRetention

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_IDLE_TIMEOUT_MS",
    "DEFAULT_MAX_REQUEST_IMAGE_BYTES",
    "DEFAULT_MAX_TOKENS",
    "ResolvedProfile",
    "load_config_file",
    "resolve_profiles",
]

DEFAULT_CONTEXT_WINDOW: Final = 262_144
DEFAULT_IDLE_TIMEOUT_MS: Final = 300_000
DEFAULT_MAX_REQUEST_IMAGE_BYTES: Final = 20_971_520
_MAX_TIMER_MS: Final = 2_147_483_647
_ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_FIELDS: Final = frozenset(
    {
        "api_key_env",
        "display_name",
        "api",
        "base_url",
        "models",
        "model_overrides",
        "compat",
        "default_context_window",
        "default_max_tokens",
        "default_input",
        "headers",
        "reasoning",
        "thinking_budgets",
        "cache_retention",
        "timeout_ms",
        "first_token_timeout_ms",
        "stream_idle_timeout_ms",
        "auth",
        "transport",
        "region",
        "project",
        "api_version",
        "account_id",
        "gateway_id",
        "max_request_image_bytes",
        "retry_policy",
        *LIMIT_FIELDS,
        *SETTING_FIELDS,
    }
)
_REMOVED_RETRY: Final = ("max_retries", "max_retry_delay_ms", "maxRetries", "maxRetryDelayMs")
_BUDGET_LEVELS: Final = ("minimal", "low", "medium", "high")
_AUTH: Final = ("key", "none")
_TRANSPORTS: Final = ("sse", "websocket")
_WEBSOCKET_APIS: Final = ("openai-responses", "azure-openai-responses")
_KEY_PARAMS: Final = re.compile(r"[?&](key|api[_-]?key|access[_-]?token|token)=", re.I)
_SEGMENT: Final = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_TOKEN: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 field-name
_HEADER_CONTROL: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _latin1(value: str) -> bool:
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


class ResolvedProfile(msgspec.Struct, frozen=True, kw_only=True):
    """One validated route: request knobs, captured retry policy and its materialized models.

    Its repr shows header names only (a profile header may carry the credential).
    """

    route: str
    display_name: str
    catalog_route: bool
    api_key_env: str | None
    ambient_key_env: tuple[str, ...]
    headers: tuple[tuple[str, str], ...]
    reasoning: str | None
    thinking_budgets: Mapping[str, int] | None
    cache_retention: CacheRetention | None
    timeout_ms: int | None
    first_token_timeout_ms: int | None
    stream_idle_timeout_ms: float
    auth: str
    transport: str
    region: str | None
    account_id: str | None
    gateway_id: str | None
    base_url: str | None
    max_request_image_bytes: int
    retry_policy: RetryPolicy
    models: Mapping[str, ModelDescriptor]
    rate_limits: RouteLimits = msgspec.field(default_factory=RouteLimits)
    project: str | None = None
    """The Google Cloud project of a Vertex AI route (None = from the environment)."""
    transport_settings: TransportSettings = DEFAULT_SETTINGS

    def __repr__(self) -> str:
        return hidden_repr(self, {"headers": hidden_headers(self.headers)})

    def __rich_repr__(self) -> list[tuple[str, object]]:
        return hidden_rich_repr(self, {"headers": hidden_headers(self.headers)})


def _fail(route: str, text: str) -> HarnessError:
    return HarnessError(f'providers: provider "{route}" {text}', ErrorCode.INVALID_CONFIG)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_retention(value: object) -> TypeGuard[CacheRetention]:
    return value in get_args(CacheRetention)


def _pos_int(route: str, raw: Mapping[str, object], key: str, default: int) -> int:
    value = raw.get(key, default)
    if not _is_int(value) or value < 1:
        raise _fail(route, f"providers.{route}.{key} must be a positive integer")
    return int(value)


def _string(route: str, raw: Mapping[str, object], key: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail(route, f"providers.{route}.{key} must be a string")
    return value


def _choice(
    route: str, raw: Mapping[str, object], key: str, allowed: tuple[str, ...]
) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if value not in allowed:
        raise _fail(route, f"providers.{route}.{key} must be one of " + ", ".join(allowed))
    return str(value)


def _resolve_one(route: str, raw: object) -> ResolvedProfile:
    if not isinstance(raw, Mapping):
        raise _fail(route, f"providers.{route} must be a mapping of profile fields")
    if "provider" in raw:
        raise _fail(route, "sets provider, which moved to the providers dict key")
    for key in _REMOVED_RETRY:
        if key in raw:
            raise _fail(
                route,
                f"sets {key}, which was removed; compose agent recovery with the retry plugin "
                f"(providers.{route}.retry_policy)",
            )
    if route == "":
        raise _fail(route, "is invalid: provider names must be non-empty")
    for key in raw:
        if key not in _FIELDS:
            raise _fail(route, f'providers.{route} has an unknown field "{key}"')
    base_url = _string(route, raw, "base_url")
    if base_url == "":
        raise _fail(route, f"has an empty baseURL (providers.{route}.base_url)")
    if base_url is not None and _KEY_PARAMS.search(base_url):
        raise _fail(
            route,
            f"base_url carries a credential in its query string (providers.{route}.base_url); "
            "keys travel in headers: use api_key_env",
        )
    if base_url is not None and (problem := http_url_problem(base_url)) is not None:
        raise _fail(route, f"base_url {problem} (providers.{route}.base_url)")
    display_name = _string(route, raw, "display_name")
    if display_name == "":
        raise _fail(route, f"has an empty displayName (providers.{route}.display_name)")
    idle = raw.get("stream_idle_timeout_ms", DEFAULT_IDLE_TIMEOUT_MS)
    if not (
        isinstance(idle, (int, float))
        and not isinstance(idle, bool)
        and math.isfinite(idle)
        and 0 < idle <= _MAX_TIMER_MS
    ):
        raise _fail(
            route,
            f"providers.{route}.stream_idle_timeout_ms: streamIdleTimeoutMs must be a positive "
            f"finite number no greater than {_MAX_TIMER_MS}",
        )
    image_bytes = raw.get("max_request_image_bytes", DEFAULT_MAX_REQUEST_IMAGE_BYTES)
    if not _is_int(image_bytes) or image_bytes < 1:
        raise _fail(
            route,
            f"providers.{route}.max_request_image_bytes: maxRequestImageBytes must be a "
            "positive integer",
        )
    default_input = raw.get("default_input", ["text"])
    if not isinstance(default_input, (list, tuple)) or any(
        m not in MODALITIES for m in default_input
    ):
        raise _fail(route, f"providers.{route}.default_input must list {MODALITIES_TEXT}")
    if not default_input:
        raise _fail(route, "defaultInput must name at least one modality (default_input)")
    api = raw.get("api")
    if api is not None and api not in PROTOCOLS:
        raise _fail(
            route,
            f'sets api "{api}", which this adapter cannot serve; supported protocols are '
            + ", ".join(PROTOCOLS),
        )
    context_window = _pos_int(route, raw, "default_context_window", DEFAULT_CONTEXT_WINDOW)
    max_tokens = _pos_int(route, raw, "default_max_tokens", DEFAULT_MAX_TOKENS)
    explicit_max_tokens = max_tokens if "default_max_tokens" in raw else None
    models, catalog_route, ambient = materialize_models(
        route,
        raw,
        api=api,
        base_url=base_url,
        default_context_window=context_window,
        default_max_tokens=explicit_max_tokens,
        default_input=tuple(dict.fromkeys(default_input)),
    )
    key_env = _string(route, raw, "api_key_env")
    if key_env is not None and not _ENV_NAME.match(key_env):
        raise _fail(route, f"providers.{route}.api_key_env must match ^[A-Za-z_][A-Za-z0-9_]*$")
    policy = resolve_retry_policy(raw.get("retry_policy"), f'provider "{route}" retry_policy')
    headers = raw.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise _fail(route, f"providers.{route}.headers must map header names to strings")
    for name, value in headers.items():
        if not _TOKEN.match(name):
            raise _fail(route, f"providers.{route}.headers has an invalid header name {name!r}")
        if _HEADER_CONTROL.search(value) or not _latin1(value):
            raise _fail(
                route,
                f"providers.{route}.headers.{name} holds a control character or a character "
                "outside Latin-1",
            )
    budgets = raw.get("thinking_budgets")
    if budgets is not None:
        if not isinstance(budgets, Mapping) or not all(
            k in _BUDGET_LEVELS and _is_int(v) and v >= 0 for k, v in budgets.items()
        ):
            raise _fail(
                route,
                f"providers.{route}.thinking_budgets must map minimal/low/medium/high to "
                "non-negative integers",
            )
        budgets = MappingProxyType(dict(budgets))
    timeout = raw.get("timeout_ms")
    if timeout is not None and (not _is_int(timeout) or timeout < 0 or timeout > _MAX_TIMER_MS):
        raise _fail(
            route,
            f"providers.{route}.timeout_ms must be a non-negative integer of ms (0 = no total "
            "deadline)",
        )
    first = raw.get("first_token_timeout_ms")
    if first is not None and (not _is_int(first) or first < 1 or first > _MAX_TIMER_MS):
        raise _fail(route, f"providers.{route}.first_token_timeout_ms must be a positive integer")
    auth = _choice(route, raw, "auth", _AUTH) or "key"
    transport = _choice(route, raw, "transport", _TRANSPORTS) or "sse"
    if transport == "websocket":
        other = sorted({m.api for m in models.values()} - set(_WEBSOCKET_APIS))
        if other:
            raise _fail(
                route,
                f'sets transport "websocket" (providers.{route}.transport), which only '
                f"{' and '.join(_WEBSOCKET_APIS)} speak; this route also serves {', '.join(other)}",
            )
    segments = {
        k: _string(route, raw, k) for k in ("region", "project", "account_id", "gateway_id")
    }
    for key, value in segments.items():
        if value is not None and not _SEGMENT.match(value):
            raise _fail(route, f"providers.{route}.{key} must be 1-128 of [A-Za-z0-9._-]")
    api_version = _string(route, raw, "api_version")
    if api_version is not None and not _SEGMENT.match(api_version):
        raise _fail(route, f"providers.{route}.api_version must be 1-128 of [A-Za-z0-9._-]")
    if api_version is not None:
        models = {k: msgspec.structs.replace(m, api_version=api_version) for k, m in models.items()}
    try:
        limits = route_limits(raw, f"providers.{route}")
        settings = transport_settings(raw, f"providers.{route}")
    except ValueError as exc:
        raise _fail(route, str(exc)) from None
    reasoning = _choice(route, raw, "reasoning", LEVELS)
    retention = _choice(route, raw, "cache_retention", get_args(CacheRetention))
    return ResolvedProfile(
        route=route,
        display_name=display_name or route,
        catalog_route=catalog_route,
        api_key_env=key_env,
        ambient_key_env=ambient,
        headers=tuple(headers.items()),
        reasoning=reasoning,
        thinking_budgets=budgets,
        cache_retention=retention if _is_retention(retention) else None,
        timeout_ms=timeout or None,
        first_token_timeout_ms=first,
        stream_idle_timeout_ms=float(idle),
        auth=auth,
        transport=transport,
        region=segments["region"],
        account_id=segments["account_id"],
        gateway_id=segments["gateway_id"],
        base_url=base_url,
        max_request_image_bytes=int(image_bytes),
        retry_policy=policy,
        models=MappingProxyType(models),
        rate_limits=limits,
        project=segments["project"],
        transport_settings=settings,
    )


def resolve_profiles(config: Mapping[str, object] | None) -> Mapping[str, ResolvedProfile]:
    """Validate `{"providers": {route: profile}}` and return the resolved, immutable profiles.

    `None`, a missing `providers` key or an empty dict resolve to no routes (a dormant adapter).
    """
    if config is None:
        return MappingProxyType({})
    if not isinstance(config, Mapping):
        raise HarnessError(
            "providers: the adapter config must be a mapping", ErrorCode.INVALID_CONFIG
        )
    providers = config.get("providers")
    if providers is None:
        return MappingProxyType({})
    if isinstance(providers, (list, tuple)):
        raise HarnessError(
            "providers: providers is now a dict keyed by provider route, not a list",
            ErrorCode.INVALID_CONFIG,
        )
    if not isinstance(providers, Mapping):
        raise HarnessError(
            "providers: providers must be a dict keyed by provider route", ErrorCode.INVALID_CONFIG
        )
    return MappingProxyType({str(r): _resolve_one(str(r), p) for r, p in providers.items()})


def load_config_file(path: str | Path) -> dict[str, object]:
    """Read an adapter config (`{"providers": {...}}`) from a `.toml`, `.yaml` or `.yml` file."""
    file = Path(path)
    text = file.read_bytes()
    try:
        if file.suffix == ".toml":
            data: object = tomllib.loads(text.decode("utf-8"))
        elif file.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        else:
            raise HarnessError(
                f"providers: {file}: unsupported config format (use .toml, .yaml or .yml)",
                ErrorCode.INVALID_CONFIG,
            )
    except (tomllib.TOMLDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise HarnessError(
            f"providers: {file}: not valid {file.suffix[1:].upper()}: {exc}",
            ErrorCode.INVALID_CONFIG,
            cause=exc,
        ) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise HarnessError(
            f"providers: {file}: top level must be a mapping", ErrorCode.INVALID_CONFIG
        )
    return data
