"""Retry policy: resolution and validation, the backoff function and the policy key.

The runtime stores and resolves policies; the retry plugin (`modelwire.retry`) executes them.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Mapping
from typing import ClassVar, Final, Literal, TypeAlias

import msgspec

from .errors import DEFAULT_RETRYABLE_CODES, ErrorCode, HarnessError
from .vocab.json import MAX_SAFE_INT as _MAX_SAFE_INT

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "MAX_TIMER_DELAY_MS",
    "AlwaysRetryPolicy",
    "NormalRetryPolicy",
    "RetryPolicy",
    "backoff_delay_ms",
    "policy_key",
    "resolve_retry_policy",
]

DEFAULT_MAX_RETRIES: Final = 2
"""Normal-mode default retry count (the seeds decide 2, not upstream's 5)."""
DEFAULT_INITIAL_DELAY_MS: Final = 500
DEFAULT_MAX_DELAY_MS: Final = 10_000
DEFAULT_JITTER_RATIO: Final = 0.1
MAX_TIMER_DELAY_MS: Final = 2_147_483_647
"""Upper bound for any delay (2^31 - 1 ms)."""
_KEYS: Final = frozenset({"mode", "max_retries", "retryable_codes", "backoff"})
_BACKOFF_KEYS: Final = frozenset({"initial_delay_ms", "max_delay_ms", "jitter_ratio"})


class NormalRetryPolicy(msgspec.Struct, frozen=True, tag="normal", tag_field="mode", kw_only=True):
    """Retry the listed codes at most `max_retries` times with exponential backoff."""

    max_retries: int = DEFAULT_MAX_RETRIES
    retryable_codes: tuple[str, ...] = DEFAULT_RETRYABLE_CODES
    initial_delay_ms: float = DEFAULT_INITIAL_DELAY_MS
    max_delay_ms: float = DEFAULT_MAX_DELAY_MS
    jitter_ratio: float = DEFAULT_JITTER_RATIO
    mode: ClassVar[Literal["normal"]] = "normal"


class AlwaysRetryPolicy(msgspec.Struct, frozen=True, tag="always", tag_field="mode", kw_only=True):
    """Retry every failure, without a count limit, until success, cancellation or disposal."""

    initial_delay_ms: float = DEFAULT_INITIAL_DELAY_MS
    max_delay_ms: float = DEFAULT_MAX_DELAY_MS
    jitter_ratio: float = DEFAULT_JITTER_RATIO
    mode: ClassVar[Literal["always"]] = "always"


RetryPolicy: TypeAlias = NormalRetryPolicy | AlwaysRetryPolicy
"""A resolved, immutable retry policy, discriminated by `mode`."""

_DEFAULT_POLICY: Final = NormalRetryPolicy()


def _fail(message: str) -> HarnessError:
    return HarnessError(message, ErrorCode.INVALID_CONFIG)


def resolve_retry_policy(
    config: Mapping[str, object] | RetryPolicy | None, path: str = "retry_policy"
) -> RetryPolicy:
    """Validate a snake_case retry-policy config and return the immutable resolved policy.

    Errors are `HarnessError(code="INVALID_CONFIG")` whose message starts with `path` and names the
    offending field; checks run in the spec's order (mode, unknown keys, count, codes, backoff).
    """
    if config is None:
        return _DEFAULT_POLICY
    if isinstance(config, (NormalRetryPolicy, AlwaysRetryPolicy)):
        return config
    if not isinstance(config, Mapping):
        raise _fail(f"{path} must be a mapping")
    mode = config.get("mode")
    if mode not in ("normal", "always"):
        raise _fail(f'{path}.mode must be "normal" or "always"')
    for key in config:
        if key not in _KEYS and key not in _BACKOFF_KEYS:
            raise _fail(f'{path}: unknown key "{key}"')
    flat = {key: config[key] for key in config if key in _BACKOFF_KEYS}
    if flat and config.get("backoff") is not None:
        raise _fail(
            f"{path}: give the backoff fields either flat ({', '.join(flat)}) or under "
            '"backoff", not both'
        )
    backoff_config, backoff_path = (
        (flat, path) if flat else (config.get("backoff"), f"{path}.backoff")
    )
    if mode == "always":
        # Retained normal-mode keys are tolerated and ignored (not validated) in always mode.
        return AlwaysRetryPolicy(**_resolve_backoff(backoff_config, backoff_path))
    max_retries = config.get("max_retries")
    if max_retries is None:
        max_retries = DEFAULT_MAX_RETRIES
    if not (
        isinstance(max_retries, (int, float))
        and not isinstance(max_retries, bool)
        and math.isfinite(max_retries)
        and float(max_retries).is_integer()
        and 0 <= max_retries <= _MAX_SAFE_INT
    ):
        raise _fail(f"{path}.max_retries must be a non-negative safe integer")
    codes_raw = config.get("retryable_codes")
    if codes_raw is None:
        codes: tuple[str, ...] = DEFAULT_RETRYABLE_CODES
    else:
        if isinstance(codes_raw, (str, bytes)) or not isinstance(codes_raw, (list, tuple)):
            raise _fail(f"{path}.retryable_codes must be a list of codes")
        if not codes_raw:
            raise _fail(f"{path}.retryable_codes must not be empty")
        if not all(isinstance(c, str) and c for c in codes_raw):
            raise _fail(f"{path}.retryable_codes must contain only non-empty strings")
        if len(set(codes_raw)) != len(codes_raw):
            raise _fail(f"{path}.retryable_codes must not contain duplicates")
        codes = tuple(str(c) for c in codes_raw)
    for code in codes:
        if not _is_known_code(code):
            raise _fail(
                f'{path}.retryable_codes contains an unknown code "{code}" (use a code of '
                "modelwire.ErrorCode or HTTP_<status>)"
            )
    backoff = _resolve_backoff(backoff_config, backoff_path)
    return NormalRetryPolicy(
        max_retries=int(max_retries),
        retryable_codes=codes,
        **backoff,
    )


def _is_known_code(code: str) -> bool:
    """A code of the table, or `HTTP_<status>` for a status in 100..599."""
    if code in ErrorCode.__members__:
        return True
    digits = code[5:]
    return code.startswith("HTTP_") and digits.isdigit() and 100 <= int(digits) <= 599


def _number(config: Mapping[str, object], key: str, default: float) -> float | None:
    value = config.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def _resolve_backoff(config: object, path: str) -> dict[str, float]:
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise _fail(f"{path} must be a mapping")
    for key in config:
        if key not in _BACKOFF_KEYS:
            raise _fail(f'{path}: unknown key "{key}"')
    out: dict[str, float] = {}
    for name, default in (
        ("initial_delay_ms", DEFAULT_INITIAL_DELAY_MS),
        ("max_delay_ms", DEFAULT_MAX_DELAY_MS),
    ):
        value = _number(config, name, default)
        if value is None or not 0 < value <= MAX_TIMER_DELAY_MS:
            raise _fail(
                f"{path}.{name} must be a positive finite number no greater than "
                f"{MAX_TIMER_DELAY_MS}"
            )
        out[name] = value
    if out["initial_delay_ms"] > out["max_delay_ms"]:
        raise _fail(f"{path}.initial_delay_ms must be less than or equal to max_delay_ms")
    jitter = _number(config, "jitter_ratio", DEFAULT_JITTER_RATIO)
    if jitter is None or not 0 <= jitter <= 1:
        raise _fail(f"{path}.jitter_ratio must be between 0 and 1")
    out["jitter_ratio"] = jitter
    return out


def backoff_delay_ms(
    policy: RetryPolicy, retry: int, *, sample: Callable[[], float] = random.random
) -> float:
    """Local delay before one-based retry `retry`: `min(initial * 2^min(n-1, 1024), max)` jittered
    symmetrically into `[1 - j, 1 + j]` and capped at `max_delay_ms`."""
    exponent = min(max(retry - 1, 0), 1024)
    # 2.0**1024 overflows a float (JS gives Infinity); the cap below makes that value irrelevant.
    factor = 2.0**exponent if exponent < 1024 else math.inf
    base = min(policy.initial_delay_ms * factor, policy.max_delay_ms)
    j = policy.jitter_ratio
    return min(base * (1 - j + 2 * j * sample()), policy.max_delay_ms)


def _num(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def policy_key(policy: RetryPolicy) -> str:
    """A stable fingerprint of the effective policy (codes sorted); it changes with any field."""
    if isinstance(policy, AlwaysRetryPolicy):
        data: list[object] = [
            "always",
            _num(policy.initial_delay_ms),
            _num(policy.max_delay_ms),
            _num(policy.jitter_ratio),
        ]
    else:
        data = [
            "normal",
            policy.max_retries,
            sorted(policy.retryable_codes),
            _num(policy.initial_delay_ms),
            _num(policy.max_delay_ms),
            _num(policy.jitter_ratio),
        ]
    return json.dumps(data, separators=(",", ":"))
