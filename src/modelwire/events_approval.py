"""The human-approval log event: `tool/decision` (a person approved or denied a pending tool
call). Pure data beside `modelwire.events` (layer 2), which registers it."""

from __future__ import annotations

import msgspec

__all__ = ["ToolDecision"]


class ToolDecision(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """`tool/decision`: call `call_id` of tool `name` (turn `turn`, step `step`), logged as
    needing approval, was approved (`approve`) or denied; `reason` is what the model is told of
    a denial, `by` who decided (both omitted when not given)."""

    turn: int
    step: int
    call_id: str
    name: str
    approve: bool
    reason: str | None = None
    by: str | None = None
