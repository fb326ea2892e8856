"""The limits of one turn: its number of steps and the tokens its provider calls were billed.

Both are read from the log, so a resumed turn keeps counting where the dead process stopped: the
step count is the turn's last `step/start`, the usage is the token projection (`TokenMeter`) of
the turn's events, failed attempts included. Limits are checked when another step is due; one
that is exceeded ends the turn with `TurnLimit` (`turn/end {kind: "limit"}`), never an exception.
A token budget is checked once more when the turn would end: a last step that passed it ends the
turn with the limit too (its answer is kept on the result), never as a plain `completed`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias

import msgspec

from ..errors import ErrorCode, HarnessError
from ..events import TurnLimit
from ..meter import TokenMeter
from ..session.log import SessionLog

__all__ = [
    "TurnUsage",
    "UsageLimits",
    "check_count",
    "check_usage_limits",
    "exceeded",
    "over_budget",
]


TokenLimit: TypeAlias = Literal["input_tokens", "output_tokens", "total_tokens"]


class UsageLimits(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Token budgets of one turn (None: unbounded). Input counts billed input (uncached, cache
    reads and writes); total is input plus output."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None


def check_count(name: str, value: object, minimum: int) -> int:
    """`value` as an integer >= `minimum`, or `INVALID_CONFIG` naming the field `name`."""
    if type(value) is not int or value < minimum:
        raise HarnessError(
            f"agent {name} must be an integer >= {minimum}, got {value!r}",
            ErrorCode.INVALID_CONFIG,
        )
    return value


def check_usage_limits(value: object) -> UsageLimits | None:
    """`value` (None, a `UsageLimits` or a mapping of its fields) checked: each limit an integer
    >= 0; anything else is `INVALID_CONFIG` naming the field."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(UsageLimits.__struct_fields__))
        if unknown:
            raise HarnessError(
                f"agent usage_limits has an unknown field {unknown[0]!r} (known: "
                + ", ".join(UsageLimits.__struct_fields__)
                + ")",
                ErrorCode.INVALID_CONFIG,
            )
        value = UsageLimits(**value)
    if not isinstance(value, UsageLimits):
        raise HarnessError(
            f"agent usage_limits must be a UsageLimits or a mapping, got {type(value).__name__}",
            ErrorCode.INVALID_CONFIG,
        )
    for name in UsageLimits.__struct_fields__:
        limit = getattr(value, name)
        if limit is not None:
            check_count(f"usage_limits.{name}", limit, 0)
    return value


class TurnUsage:
    """The billed tokens of turn `turn` of `session_id` so far, folded from its events (from its
    `turn/start` at `start_seq` on), read on demand."""

    __slots__ = ("_log", "_meter", "_sid", "_start", "_turn")

    def __init__(self, log: SessionLog, session_id: str, turn: int, start_seq: int) -> None:
        self._log, self._sid = log, session_id
        self._turn = turn
        self._start = start_seq
        self._meter: TokenMeter | None = None

    async def read(self) -> tuple[int, int, int]:
        """(billed input, output, total) tokens of the turn as the log holds them now."""
        meter = self._meter
        if meter is None:
            meter = self._meter = TokenMeter()
            for event in await self._log.read(self._sid, self._start):
                meter.apply(event)
        else:
            await meter.catch_up(self._log, self._sid)
        usage = meter.report().turns.get(self._turn)
        if usage is None:
            return 0, 0, 0
        return usage.billed_input_tokens, usage.output_tokens, usage.total_tokens


async def exceeded(
    max_steps: int, steps: int, limits: UsageLimits | None, usage: TurnUsage
) -> TurnLimit | None:
    """The limit that forbids another step after `steps` steps, or None."""
    if steps >= max_steps:
        return TurnLimit("max_steps", max_steps, steps)
    return await over_budget(limits, usage)


async def over_budget(limits: UsageLimits | None, usage: TurnUsage) -> TurnLimit | None:
    """The first token budget of `limits` the turn's usage has passed, or None."""
    if limits is None:
        return None
    used_in, used_out, used_total = await usage.read()
    checks: tuple[tuple[TokenLimit, int | None, int], ...] = (
        ("input_tokens", limits.input_tokens, used_in),
        ("output_tokens", limits.output_tokens, used_out),
        ("total_tokens", limits.total_tokens, used_total),
    )
    for name, limit, used in checks:
        if limit is not None and used > limit:
            return TurnLimit(name, limit, used)
    return None
