"""Model metadata a replay publishes: an explicit provider catalog, or what the recording implies.

Explicit catalog (`providers=`, snake_case; D19)::

    {"acme": {"name": "Acme", "retry_policy": {...},
              "models": [{"id": "m1", "name": "M1", "context_window": 8192,
                          "input_modalities": ["text", "image"], "default_max_tokens": 1024,
                          "reasoning_efforts": ["low", "high"], "default_reasoning_effort": "low"}]}}

Without one, `resolve_model` re-publishes what the recorded `request/header` and
`request/context` events show (adapter-supplied default output cap and effort, offered efforts,
context window), so a replayed loop materializes the same call config the recording did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import msgspec

from ...errors import ErrorCode, HarnessError
from ...events import EpochHeader, RequestContext
from ...policy import RetryPolicy, resolve_retry_policy
from ...vocab import (
    ModelContext,
    ModelInfo,
    ModelReasoningInfo,
    ProviderInfo,
    ReasoningEffortInfo,
    ResolvedModelInfo,
)

__all__ = ["ReplayCatalog", "ReplayModelSpec", "ReplayProviderSpec", "recorded_model_info"]

_MODALITIES: Final = frozenset({"text", "image"})


class ReplayModelSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One catalog model: its id and the metadata `resolve_model` publishes for it."""

    id: str
    name: str | None = None
    context_window: int | None = None
    input_modalities: tuple[str, ...] | None = None
    default_max_tokens: int | None = None
    reasoning_efforts: tuple[str, ...] | None = None
    default_reasoning_effort: str | None = None


class ReplayProviderSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One catalog route: display name, models and an optional retry-policy mapping."""

    name: str | None = None
    models: tuple[ReplayModelSpec, ...] = ()
    retry_policy: dict[str, object] | None = None


def _bad(message: str) -> HarnessError:
    return HarnessError(message, ErrorCode.INVALID_CONFIG)


def _parse_provider(route: str, raw: object) -> tuple[ReplayProviderSpec, RetryPolicy | None]:
    where = f'replay: provider "{route}"'
    if not isinstance(raw, Mapping):
        raise _bad(f"{where} must be a mapping")
    models = raw.get("models", ())
    if isinstance(models, (list, tuple)):
        for model in models:
            if isinstance(model, Mapping) and "input_modalities" in model:
                value = model["input_modalities"]
                if not isinstance(value, (list, tuple)) or not set(value) <= _MODALITIES:
                    raise _bad(
                        f'{where} model "{model.get("id")}" input_modalities must be an array '
                        'containing only "text" and "image"'
                    )
    try:
        spec = msgspec.convert(dict(raw), ReplayProviderSpec)
    except msgspec.ValidationError as exc:
        raise _bad(f"{where}: {exc}") from exc
    policy = None
    if spec.retry_policy is not None:
        policy = resolve_retry_policy(spec.retry_policy, f"{where} retry_policy")
    return spec, policy


class ReplayCatalog:
    """A validated provider catalog; construction raises `INVALID_CONFIG` naming the field."""

    def __init__(self, providers: Mapping[str, object]) -> None:
        if not isinstance(providers, Mapping):
            raise _bad("replay: providers must be a mapping of route -> provider config")
        self._specs: dict[str, ReplayProviderSpec] = {}
        self._policies: dict[str, RetryPolicy | None] = {}
        for route, raw in providers.items():
            if not isinstance(route, str) or not route:
                raise _bad(f"replay: provider route must be a non-empty string, got {route!r}")
            self._specs[route], self._policies[route] = _parse_provider(route, raw)
            self._check_models(route, self._specs[route].models)

    @staticmethod
    def _check_models(route: str, models: Sequence[ReplayModelSpec]) -> None:
        for model in models:
            efforts = model.reasoning_efforts or ()
            default = model.default_reasoning_effort
            if default is not None and default not in efforts:
                raise _bad(
                    f'replay: provider "{route}" model "{model.id}" default_reasoning_effort '
                    f"{default!r} is not one of reasoning_efforts"
                )

    @property
    def routes(self) -> tuple[str, ...]:
        """The catalog's provider routes, in configuration order."""
        return tuple(self._specs)

    def provider_info(self, route: str) -> ProviderInfo | None:
        """Display metadata of a catalog route, or None when the route is not in the catalog."""
        spec = self._specs.get(route)
        return None if spec is None else ProviderInfo(route, spec.name or route)

    def retry_policy(self, route: str) -> RetryPolicy | None:
        """The configured retry policy of a route (None: the runtime's normal default)."""
        return self._policies.get(route)

    def list_models(self, route: str) -> list[ModelInfo] | None:
        """The route's catalog entries, or None when the route is not in the catalog."""
        spec = self._specs.get(route)
        if spec is None:
            return None
        return [
            ModelInfo(
                provider=route,
                id=m.id,
                name=m.name or m.id,
                input_modalities=m.input_modalities,
            )
            for m in spec.models
        ]

    def resolve(self, route: str, model: str) -> ResolvedModelInfo | None:
        """Exact-model metadata from the catalog, or None when it does not list the model."""
        spec = self._specs.get(route)
        found = None if spec is None else next((m for m in spec.models if m.id == model), None)
        if found is None:
            return None
        reasoning = None
        if found.reasoning_efforts:
            reasoning = ModelReasoningInfo(
                tuple(ReasoningEffortInfo(e, e) for e in found.reasoning_efforts),
                found.default_reasoning_effort,
            )
        window = found.context_window
        return ResolvedModelInfo(
            provider=route,
            id=model,
            name=found.name or model,
            input_modalities=found.input_modalities,
            context=None if window is None else ModelContext(window),
            default_max_tokens=found.default_max_tokens,
            reasoning=reasoning,
        )


@dataclass(frozen=True, slots=True)
class _Seen:
    efforts: tuple[str, ...]
    default_effort: str | None
    default_max_tokens: int | None


def _seen(headers: Sequence[EpochHeader]) -> _Seen:
    efforts: list[str] = []
    default_effort: str | None = None
    cap: int | None = None
    for header in headers:
        config, flags = header.config, header.adapter_defaults
        effort = config.reasoning_effort
        if effort is not None and effort not in efforts:
            efforts.append(effort)
        if flags is not None and flags.reasoning_effort and default_effort is None:
            default_effort = effort
        if flags is not None and flags.max_tokens and cap is None:
            cap = config.max_tokens
    return _Seen(tuple(efforts), default_effort, cap)


def recorded_model_info(
    headers: Sequence[EpochHeader],
    contexts: Sequence[RequestContext],
    provider: str,
    model: str,
) -> ResolvedModelInfo:
    """Metadata implied by the recording for (provider, model), the recorded prices included;
    plain identity when unrecorded.

    Headers of the same route and model are preferred; a recording made under another route name
    still lends its metadata by model id.
    """
    same = [h for h in headers if h.config.provider == provider and h.config.model == model]
    if not same:
        same = [h for h in headers if h.config.model == model]
    seen = _seen(same)
    matching = [
        c
        for c in contexts
        if c.model == model
        and (c.provider == provider or not any(x.provider == provider for x in contexts))
    ]
    window = next(
        (c.context_window for c in reversed(matching) if c.context_window is not None), None
    )
    pricing = matching[-1].pricing if matching else None  # the recorded calls' latest prices
    reasoning = None
    if seen.efforts:
        reasoning = ModelReasoningInfo(
            tuple(ReasoningEffortInfo(e, e) for e in seen.efforts), seen.default_effort
        )
    return ResolvedModelInfo(
        provider=provider,
        id=model,
        name=model,
        context=None if window is None else ModelContext(window),
        default_max_tokens=seen.default_max_tokens,
        reasoning=reasoning,
        pricing=pricing,
    )
