"""Validation of adapter-published model metadata and call-config materialization (§6.7–6.9).

Adapters build msgspec structs, which do not type-check on construction, so every field the
runtime relies on is checked here and copied into a detached result; errors name the route, the
model and the field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, TypeVar

import msgspec

from ..errors import ErrorCode, LlmError
from ..vocab import (
    CallConfig,
    GenerateOptions,
    ModelContext,
    ModelInfo,
    ModelPricing,
    ModelReasoningInfo,
    ReasoningEffortInfo,
    ResolvedModelInfo,
)
from .validation import MAX_OUTPUT_TOKENS

__all__ = ["check_catalog", "check_model_info", "materialize"]

C = TypeVar("C", CallConfig, GenerateOptions)


def _is_str(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _integral(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and float(value).is_integer()


def _modalities(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(value) if isinstance(value, (list, tuple)) else value  # type: ignore[return-value]


def check_catalog(route: str, entries: Sequence[ModelInfo]) -> list[ModelInfo]:
    """Validate `list_models` output (R-LM-2) and return detached copies in adapter order."""
    seen: set[str] = set()
    out: list[ModelInfo] = []
    for i, entry in enumerate(entries):
        where = f'llm: catalog of provider "{route}" entry [{i}]'
        provider: object = getattr(entry, "provider", None)
        model_id: object = getattr(entry, "id", None)
        name: object = getattr(entry, "name", None)
        description: object = getattr(entry, "description", None)
        if provider != route or not isinstance(provider, str):
            raise LlmError(
                f"{where}.provider must equal the route, got {provider!r}", "INVALID_CATALOG"
            )
        if not _is_str(model_id):
            raise LlmError(
                f"{where}.id must be a non-empty string, got {model_id!r}", "INVALID_CATALOG"
            )
        if not _is_str(name):
            raise LlmError(
                f"{where}.name must be a non-empty string, got {name!r}", "INVALID_CATALOG"
            )
        if description is not None and not isinstance(description, str):
            raise LlmError(f"{where}.description must be a string", ErrorCode.INVALID_CATALOG)
        assert isinstance(model_id, str) and isinstance(name, str)
        if model_id in seen:
            raise LlmError(f'{where}.id repeats model "{model_id}"', ErrorCode.INVALID_CATALOG)
        seen.add(model_id)
        out.append(
            ModelInfo(
                provider=route,
                id=model_id,
                name=name,
                description=description,
                input_modalities=_modalities(getattr(entry, "input_modalities", None)),
            )
        )
    return out


def _fail(code: ErrorCode, route: str, model: str, detail: str) -> LlmError:
    return LlmError(f'llm: provider "{route}" model "{model}": {detail}', code)


def check_model_info(route: str, model: str, info: ResolvedModelInfo) -> ResolvedModelInfo:
    """Validate `resolve_model` output in the R-RMI-2 order and return a detached copy."""
    provider: object = getattr(info, "provider", None)
    model_id: object = getattr(info, "id", None)
    name: object = getattr(info, "name", None)
    description: object = getattr(info, "description", None)
    bad_info = ErrorCode.INVALID_MODEL_INFO
    if provider != route or not isinstance(provider, str):
        raise _fail(
            bad_info, route, model, f"model info provider must equal the route, got {provider!r}"
        )
    if model_id != model or not isinstance(model_id, str):
        raise _fail(bad_info, route, model, f"model info id must equal the model, got {model_id!r}")
    if not _is_str(name):
        raise _fail(
            bad_info, route, model, f"model info name must be a non-empty string, got {name!r}"
        )
    if description is not None and not isinstance(description, str):
        raise _fail(bad_info, route, model, "model info description must be a string")
    context: ModelContext | None = None
    raw_context: object = getattr(info, "context", None)
    if raw_context is not None:
        window: object = getattr(raw_context, "context_window", None)
        if not _integral(window) or window <= 0:  # type: ignore[operator]
            raise _fail(
                ErrorCode.INVALID_MODEL_CONTEXT,
                route,
                model,
                f"context.context_window must be a positive integer, got {window!r}",
            )
        context = ModelContext(int(window))  # type: ignore[call-overload]
    cap: object = getattr(info, "default_max_tokens", None)
    # Bounded like a caller's `max_tokens` (validation.MAX_OUTPUT_TOKENS): a default the request
    # edge would refuse is refused here, on every call path alike.
    if cap is not None and not (_integral(cap) and 0 < cap <= MAX_OUTPUT_TOKENS):  # type: ignore[operator]
        raise _fail(
            ErrorCode.INVALID_MODEL_MAX_TOKENS,
            route,
            model,
            f"default_max_tokens must be a positive integer no greater than {MAX_OUTPUT_TOKENS}, "
            f"got {cap!r}",
        )
    reasoning = _check_reasoning(route, model, getattr(info, "reasoning", None))
    support: object = getattr(info, "structured_output", None)
    if support not in _SUPPORT:
        raise _fail(
            bad_info,
            route,
            model,
            "structured_output must be native-strict, native-json, emulated or None, "
            f"got {support!r}",
        )
    choice: object = getattr(info, "tool_choice", None)
    parallel: object = getattr(info, "parallel_tool_calls", None)
    for field, flag in (("tool_choice", choice), ("parallel_tool_calls", parallel)):
        if flag is not None and not isinstance(flag, bool):
            raise _fail(bad_info, route, model, f"{field} must be a bool or None, got {flag!r}")
    pricing: object = getattr(info, "pricing", None)
    if pricing is not None and not isinstance(pricing, ModelPricing):
        raise _fail(
            bad_info, route, model, f"pricing must be a ModelPricing or None, got {pricing!r}"
        )
    wire: object = getattr(info, "wire", None)
    if wire is not None and not _is_str(wire):
        raise _fail(
            bad_info, route, model, f"wire must be a non-empty string or None, got {wire!r}"
        )
    total: object = getattr(info, "default_timeout_ms", None)
    first: object = getattr(info, "default_first_token_timeout_ms", None)
    for field, ms in (("default_timeout_ms", total), ("default_first_token_timeout_ms", first)):
        if ms is not None and not (_integral(ms) and ms > 0):  # type: ignore[operator]
            raise _fail(bad_info, route, model, f"{field} must be a positive integer, got {ms!r}")
    assert isinstance(name, str)
    return ResolvedModelInfo(
        provider=route,
        id=model,
        name=name,
        description=description if isinstance(description, str) else None,
        input_modalities=_modalities(getattr(info, "input_modalities", None)),
        context=context,
        default_max_tokens=None if cap is None else int(cap),  # type: ignore[call-overload]
        reasoning=reasoning,
        structured_output=support,  # type: ignore[arg-type]  # checked against _SUPPORT above
        tool_choice=choice,  # type: ignore[arg-type]  # checked above
        parallel_tool_calls=parallel,  # type: ignore[arg-type]  # checked above
        pricing=pricing,
        wire=wire if isinstance(wire, str) else None,
        default_timeout_ms=None if total is None else int(total),  # type: ignore[call-overload]
        default_first_token_timeout_ms=None if first is None else int(first),  # type: ignore[call-overload]
    )


_SUPPORT: Final = frozenset({None, "native-strict", "native-json", "emulated"})


def _check_reasoning(route: str, model: str, raw: object) -> ModelReasoningInfo | None:
    if raw is None:
        return None
    code = ErrorCode.INVALID_MODEL_REASONING
    efforts: object = getattr(raw, "efforts", None)
    if not isinstance(efforts, (list, tuple)) or not efforts:
        raise _fail(code, route, model, "reasoning.efforts must list at least one effort")
    out: list[ReasoningEffortInfo] = []
    ids: set[str] = set()
    for i, effort in enumerate(efforts):
        effort_id: object = getattr(effort, "id", None)
        name: object = getattr(effort, "name", None)
        description: object = getattr(effort, "description", None)
        if not _is_str(effort_id) or not _is_str(name):
            raise _fail(code, route, model, f"reasoning.efforts[{i}] needs a non-empty id and name")
        if description is not None and not isinstance(description, str):
            raise _fail(code, route, model, f"reasoning.efforts[{i}].description must be a string")
        assert isinstance(effort_id, str) and isinstance(name, str)
        if effort_id in ids:
            raise _fail(code, route, model, f'reasoning.efforts[{i}] repeats effort "{effort_id}"')
        ids.add(effort_id)
        out.append(ReasoningEffortInfo(effort_id, name, description))
    default: object = getattr(raw, "default_effort", None)
    if default is not None and default not in ids:
        raise _fail(
            code, route, model, f"reasoning.default_effort {default!r} is not an offered effort"
        )
    return ModelReasoningInfo(tuple(out), default if isinstance(default, str) else None)


def materialize(config: C, info: ResolvedModelInfo) -> C:
    """Apply the model's defaults to a config (R-RCC-2); returns `config` itself when unchanged.

    An explicit `max_tokens` always wins over `default_max_tokens`; the effective effort is the
    requested one, else the model's default, and must be offered by the model.
    """
    changes: dict[str, object] = {}
    if config.max_tokens is None and info.default_max_tokens is not None:
        changes["max_tokens"] = info.default_max_tokens
    requested = config.reasoning_effort
    reasoning = info.reasoning
    if reasoning is None:
        if requested is not None:
            raise _fail(
                ErrorCode.UNSUPPORTED_REASONING_EFFORT,
                config.provider,
                config.model,
                f'reasoning effort "{requested}" requested, but the model offers no reasoning efforts',
            )
    else:
        effective = requested if requested is not None else reasoning.default_effort
        if effective is not None:
            offered = [e.id for e in reasoning.efforts]
            if effective not in offered:
                raise _fail(
                    ErrorCode.UNSUPPORTED_REASONING_EFFORT,
                    config.provider,
                    config.model,
                    f'reasoning effort "{effective}" is not offered (offered: {", ".join(offered)})',
                )
            if effective != requested:
                changes["reasoning_effort"] = effective
    if not changes:
        return config
    return msgspec.structs.replace(config, **changes)
