"""The fallback chain of `FallbackPlugin`: its targets, its trigger codes, and where a turn goes next.

Pure functions over validated values. A chain entry is a `(route, model)` pair, a
`"route:model"` string (split at the first colon, so `local:qwen3:8b` works) or a
`FallbackTarget`; a bad entry is refused with `INVALID_CONFIG` naming its index and value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec

from ..codes import ErrorCode
from ..errors import HarnessError
from ..session.events import LlmFallback

__all__ = [
    "IMMEDIATE_CODES",
    "PLUGIN_NAME",
    "FallbackTarget",
    "next_target",
    "parse_chain",
    "parse_codes",
]

PLUGIN_NAME: Final = "llm-fallback"
"""The plugin's name, the prefix of its configuration errors and of its exhausted-chain message."""

IMMEDIATE_CODES: Final = frozenset(
    {ErrorCode.CONTEXT_WINDOW_EXCEEDED, ErrorCode.QUOTA, ErrorCode.AUTH}
)
"""Codes that fall back at once (no retry on the failing route first) when `on` lists them:
retrying the same request on the same route cannot cure them."""


class FallbackTarget(msgspec.Struct, frozen=True):
    """One entry of a fallback chain: a route (a registered provider name) and a model id."""

    route: str
    model: str

    def __str__(self) -> str:
        return f"{self.route}:{self.model}"


def _fail(message: str) -> HarnessError:
    return HarnessError(f"{PLUGIN_NAME}: {message}", ErrorCode.INVALID_CONFIG)


def _name(value: object) -> bool:
    return isinstance(value, str) and bool(value) and value.strip() == value


def _target(index: int, entry: object) -> FallbackTarget:
    where = f"chain[{index}] {entry!r}"
    if isinstance(entry, FallbackTarget):
        route, model = entry.route, entry.model
    elif isinstance(entry, str):
        route, sep, model = entry.partition(":")
        if not sep:
            raise _fail(f'{where} must be "route:model" (e.g. "deepseek:deepseek-v4-flash")')
    elif isinstance(entry, (tuple, list)) and len(entry) == 2:
        route, model = entry
    else:
        raise _fail(f'{where} must be a (route, model) pair or a "route:model" string')
    if not _name(route):
        raise _fail(f"{where}: the route must be a non-empty name without surrounding spaces")
    if not _name(model):
        raise _fail(f"{where}: the model must be a non-empty id without surrounding spaces")
    assert isinstance(route, str) and isinstance(model, str)
    return FallbackTarget(route, model)


def parse_chain(chain: object) -> tuple[FallbackTarget, ...]:
    """Validate a chain: a non-empty sequence of distinct targets (see the module docstring)."""
    if isinstance(chain, (str, bytes)) or not isinstance(chain, Iterable):
        raise _fail(f"chain must be a sequence of (route, model) targets, got {chain!r}")
    targets: list[FallbackTarget] = []
    for index, entry in enumerate(chain):
        target = _target(index, entry)
        if target in targets:
            raise _fail(
                f"chain[{index}] {entry!r} repeats chain[{targets.index(target)}] ({target})"
            )
        targets.append(target)
    if not targets:
        raise _fail("chain must list at least one (route, model) target")
    return tuple(targets)


def _known(code: str) -> bool:
    if code in ErrorCode.__members__:
        return True
    digits = code[5:]
    return code.startswith("HTTP_") and digits.isdigit() and 100 <= int(digits) <= 599


def parse_codes(on: object) -> frozenset[str]:
    """Validate `on`: a non-empty collection of failure codes (`ErrorCode` names or
    `HTTP_<status>`)."""
    if isinstance(on, (str, bytes)) or not isinstance(on, Iterable):
        raise _fail(f"on must be a collection of failure codes, got {on!r}")
    codes: list[str] = []
    for code in on:
        if not isinstance(code, str) or not _known(code):
            raise _fail(
                f"on contains an unknown code {code!r} (use a code of modelwire.ErrorCode or "
                "HTTP_<status>)"
            )
        codes.append(str(code))
    if not codes:
        raise _fail("on must list at least one failure code")
    return frozenset(codes)


def next_target(
    chain: tuple[FallbackTarget, ...],
    current: FallbackTarget | None,
    latest: LlmFallback | None,
) -> tuple[FallbackTarget, int] | None:
    """Where the turn goes after `current` fails: the next target and its position, or None
    (the chain is exhausted).

    `latest` is the turn's latest `llm/fallback` (None: the turn is still on its configured
    route). Without one, `current` (the failed attempt's route/model) is the turn's position 0
    unless the chain lists it, and the next target follows it in the chain (or is the chain's
    first when it is not listed). After one, the target after its `to` follows, one position on.
    """
    if latest is not None:
        reached = FallbackTarget(latest.to_route, latest.to_model)
        if reached not in chain:  # the chain changed since that decision: nothing follows it
            return None
        index, position = chain.index(reached) + 1, latest.position + 1
    elif current is not None and current in chain:
        index = position = chain.index(current) + 1
    else:
        index, position = 0, 1
    if index >= len(chain):
        return None
    return chain[index], position
