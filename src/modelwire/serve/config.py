"""The gateway's settings: the config file's `[gateway]` section beside the runtime's routes.

```toml
[gateway]
max_body_bytes = 4_194_304     # a larger request body is a 413
grace_ms = 10_000              # SIGTERM: how long running streams may finish
read_timeout_ms = 30_000       # a body not read whole by then is a 408 (slow clients)
[gateway.models]               # aliases clients may name as `model`
fast = "acme:m-small"
[gateway.fallbacks]            # per target, tried in order on the route's fallback codes
"acme:m-small" = ["backup:m"]
[gateway.limits.acme]          # the route's own requests/tokens per minute, for every key
rpm = 600
```

`split_settings` takes the section off the settings so that the rest opens the runtime as
`modelwire chat` would (`open_runtime`); a bad key or value is `INVALID_CONFIG` naming it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..errors import ErrorCode, HarnessError
from ..retry.fallback_chain import FallbackTarget, parse_chain
from .limits import RouteLimit

__all__ = ["GatewayConfig", "parse_gateway", "read_settings", "split_settings"]

_KEYS: Final = ("models", "fallbacks", "limits", "max_body_bytes", "grace_ms", "read_timeout_ms")
MAX_BODY_BYTES: Final = 4 * 1024 * 1024
GRACE_MS: Final = 10_000
READ_TIMEOUT_MS: Final = 30_000


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """The parsed `[gateway]` section (module docstring)."""

    aliases: Mapping[str, FallbackTarget] = field(default_factory=dict)
    fallbacks: Mapping[FallbackTarget, tuple[FallbackTarget, ...]] = field(default_factory=dict)
    limits: Mapping[str, RouteLimit] = field(default_factory=dict)
    max_body_bytes: int = 4 * 1024 * 1024  # = MAX_BODY_BYTES
    grace_ms: int = 10_000  # = GRACE_MS
    read_timeout_ms: int = 30_000  # = READ_TIMEOUT_MS


def _fail(text: str) -> HarnessError:
    return HarnessError(f"gateway: {text}", ErrorCode.INVALID_CONFIG)


def _target(text: object, where: str) -> FallbackTarget:
    if not isinstance(text, str):
        raise _fail(f'{where} must be a "route:model" string, got {text!r}')
    try:
        return parse_chain([text])[0]
    except HarnessError as exc:
        raise _fail(f"{where}: {exc.message}") from None


def _count(section: Mapping[str, object], key: str, default: int) -> int:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _fail(f"{key} must be a positive integer, got {value!r}")
    return value


def _limits(raw: object) -> dict[str, RouteLimit]:
    if not isinstance(raw, Mapping):
        raise _fail("gateway.limits must be a table of routes")
    out: dict[str, RouteLimit] = {}
    for route, table in raw.items():
        if not isinstance(table, Mapping) or not set(table) <= {"rpm", "tpm"} or not table:
            raise _fail(f"gateway.limits.{route} must be a table of rpm and/or tpm")
        counts = {k: _count(table, k, 1) for k in table}
        out[str(route)] = RouteLimit(counts.get("rpm"), counts.get("tpm"))
    return out


def parse_gateway(section: object) -> GatewayConfig:
    """The gateway config of a `[gateway]` table (None: the defaults)."""
    if section is None:
        return GatewayConfig()
    if not isinstance(section, Mapping):
        raise _fail("the gateway section must be a table")
    for key in section:
        if key not in _KEYS:
            raise _fail(f"unknown key gateway.{key} (known: {', '.join(_KEYS)})")
    models = section.get("models", {})
    fallbacks = section.get("fallbacks", {})
    if not isinstance(models, Mapping) or not isinstance(fallbacks, Mapping):
        raise _fail("gateway.models and gateway.fallbacks must be tables")
    aliases = {str(k): _target(v, f"gateway.models.{k}") for k, v in models.items()}
    chains: dict[FallbackTarget, tuple[FallbackTarget, ...]] = {}
    for key, chain in fallbacks.items():
        if not isinstance(chain, list):
            raise _fail(f'gateway.fallbacks."{key}" must be an array of "route:model" strings')
        first = _target(key, f'gateway.fallbacks."{key}"')
        chains[first] = tuple(
            _target(t, f'gateway.fallbacks."{key}"[{i}]') for i, t in enumerate(chain)
        )
    return GatewayConfig(
        aliases,
        chains,
        _limits(section.get("limits", {})),
        _count(section, "max_body_bytes", MAX_BODY_BYTES),
        _count(section, "grace_ms", GRACE_MS),
        _count(section, "read_timeout_ms", READ_TIMEOUT_MS),
    )


def read_settings(
    config: str | os.PathLike[str] | Mapping[str, object] | None,
) -> dict[str, object]:
    """The whole settings mapping of a config file path (or a mapping, copied)."""
    if config is None:  # as `open_runtime` and the CLI find it
        named = os.environ.get("MODELWIRE_CONFIG")
        if not named:
            from platformdirs import user_config_dir

            default = Path(user_config_dir("modelwire")) / "config.toml"
            if not default.is_file():
                return {}
            named = str(default)
        config = named
    if isinstance(config, Mapping):
        return dict(config)
    from ..adapters.providers.config import load_config_file

    path = Path(config).expanduser()
    if not path.is_file():
        raise HarnessError(f"config file not found: {path}", ErrorCode.INVALID_CONFIG)
    return load_config_file(path)


def split_settings(settings: Mapping[str, object]) -> tuple[dict[str, object], GatewayConfig]:
    """The runtime's settings and the gateway's, apart."""
    rest = {k: v for k, v in settings.items() if k != "gateway"}
    return rest, parse_gateway(settings.get("gateway"))
