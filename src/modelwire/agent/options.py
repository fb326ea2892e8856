"""The checks of an `Agent`'s options, each refused before anything happens (`INVALID_CONFIG`
naming the field), and the typed output a turn asks for."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

from ..errors import ErrorCode, HarnessError
from ..runtime.validation import MAX_OUTPUT_TOKENS
from .output import FINAL_TOOL, OutputSpec, output_spec
from .tools import Tool

__all__ = ["check_deadline_ms", "check_max_tokens", "check_ms", "output_of", "tool_map"]


def check_max_tokens(value: object) -> int | None:
    """`max_tokens`: None or a positive safe integer."""
    if value is None:
        return None
    if type(value) is not int or not 0 < value <= MAX_OUTPUT_TOKENS:
        raise HarnessError(
            f"agent max_tokens must be an integer in 1..{MAX_OUTPUT_TOKENS}, got {value!r}",
            ErrorCode.INVALID_CONFIG,
        )
    return value


def check_ms(name: str, value: object, *, zero: bool) -> float:
    """A duration in milliseconds: a number >= 0 (`zero`) or > 0."""
    if not isinstance(value, (int, float)) or not (value >= 0 if zero else value > 0):
        raise HarnessError(
            f"agent {name} must be a number {'>=' if zero else '>'} 0, got {value!r}",
            ErrorCode.INVALID_CONFIG,
        )
    return float(value)


def check_deadline_ms(name: str, value: object) -> int | None:
    """A model call's deadline (`timeout_ms`, `first_token_timeout_ms`): None, or an integer of
    ms >= 0 (0 = none), as `GenerateOptions` takes it."""
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= MAX_OUTPUT_TOKENS:
        raise HarnessError(
            f"agent {name} must be an integer of ms in 0..{MAX_OUTPUT_TOKENS} (0 = none), "
            f"got {value!r}",
            ErrorCode.INVALID_CONFIG,
        )
    return value


def tool_map(tools: Iterable[object]) -> dict[str, Tool]:
    """Index tools by name, typed functions made `Tool`s; a duplicate name is `INVALID_CONFIG`."""
    out: dict[str, Tool] = {}
    for item in tools:
        if not isinstance(item, Tool):
            if not callable(item):
                raise HarnessError(f"not a Tool: {item!r}", ErrorCode.INVALID_CONFIG)
            item = Tool.from_function(item)
        if item.name in out:
            raise HarnessError(f"duplicate tool name {item.name!r}", ErrorCode.INVALID_CONFIG)
        out[item.name] = item
    return out


def output_of(
    output_type: object, tools: Mapping[str, Tool], cache: dict[object, OutputSpec | None]
) -> OutputSpec | None:
    """The typed output of `output_type` (None, and `str`: plain text answers), checked once."""
    if output_type is None or output_type is str:
        return None
    try:
        found = cache.get(output_type)
    except TypeError:  # an unhashable annotation: derived each time
        found = None
    if found is None:
        found = output_spec(output_type)
        if FINAL_TOOL in tools:
            raise HarnessError(
                f"tool name {FINAL_TOOL!r} is the final-answer tool of output_type: rename the "
                "tool",
                ErrorCode.INVALID_CONFIG,
            )
        with contextlib.suppress(TypeError):  # an unhashable annotation is not cached
            cache[output_type] = found
    return found
