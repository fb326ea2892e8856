"""`assert_never`: the loud end of every exhaustive match over a closed union (R-NEV-1)."""

from __future__ import annotations

import json
from typing import Never, NoReturn

import msgspec

from .errors import ErrorCode, UnreachableVariantError

__all__ = ["assert_never", "render_compact"]


def render_compact(value: object) -> str:
    """Render `value` as compact JSON (no spaces), or as its string form when JSON gives nothing."""
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError):
        pass
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, OverflowError):
        return str(value)


def assert_never(
    value: Never, context: str | None = None, *, code: str = ErrorCode.INVARIANT
) -> NoReturn:
    """Raise `UnreachableVariantError` (an `AssertionError` and a `HarnessError` with `code`) for
    a value no branch of a closed union handles.

    `value` is typed `Never`, as `typing.assert_never`: a `match` that misses a variant of its
    union fails `mypy --strict` here, and a value outside the union still fails loudly at run
    time (with a stable code instead of a bare `AssertionError`).

    The message is `unreachable variant` plus ` in <context>` when a non-empty context is given,
    then `: ` and the compact JSON rendering of the value.
    """
    where = f" in {context}" if context else ""
    raise UnreachableVariantError(f"unreachable variant{where}: {render_compact(value)}", code)
