"""Context projections over the log (spec E.3 pressure and E.5 breakdown) with the E.1 estimator.

The *surface* is the model-visible conversation: `user/message`, non-empty `assistant/message`
and `tool/result` events each add the heuristic price of their message (modelwire's log only
appends to the surface, so the fold needs no shadow-price claims). On top of it:

- pressure: `pressure_tokens` is the prompt side (uncached input + cache read + cache write) of
  the newest usage sample; `projected_tokens = max(0, pressure + surface − sampled surface)`,
  where the sampled surface is stamped *before* the sampling event's own surface delta, so it
  grows as the conversation grows after the sample. `context_window` is last-wins from
  `request/context` (a record without a window removes it). The figures are informational.
- breakdown: `system_tokens`/`tools_tokens` repriced from each `request/header` (last wins),
  `message_tokens` = the surface total.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

import msgspec

from ..errors import ErrorCode, HarnessError
from ..session.events import (
    AssistantChunk,
    AssistantMessage,
    Event,
    RequestContext,
    RequestHeader,
    ToolResultRecord,
    UserMessage,
)
from ..vocab import TokenUsage, UsageChunk
from .estimate import estimate_message, estimate_system, estimate_tools

__all__ = ["ContextBreakdown", "ContextMeter", "ContextPressure", "ContextState"]


@dataclass(frozen=True, slots=True)
class ContextPressure:
    """Pressure view: each figure is None until known (spec E.3)."""

    pressure_tokens: int | None = None
    projected_tokens: int | None = None
    context_window: int | None = None


@dataclass(frozen=True, slots=True)
class ContextBreakdown:
    """Composition view (spec E.5): system prompt, tool list and conversation prices."""

    system_tokens: int = 0
    tools_tokens: int = 0
    message_tokens: int = 0


class ContextState(msgspec.Struct, frozen=True, kw_only=True):
    """A JSON checkpoint of a `ContextMeter` (bounded: no per-message prices are kept)."""

    version: Literal[4] = 4
    next_seq: int = 0
    surface_tokens: int = 0
    sampled_surface_tokens: int = 0
    pressure_tokens: int | None = None
    context_window: int | None = None
    system_tokens: int = 0
    tools_tokens: int = 0


_STATE_DECODER: Final = msgspec.json.Decoder(ContextState)


def _prompt_side(usage: TokenUsage) -> int:
    return usage.input_tokens + (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)


class ContextMeter:
    """The incremental pressure and breakdown projections of one session (module docstring)."""

    __slots__ = ("_state",)

    def __init__(self, state: ContextState | None = None) -> None:
        self._state = state or ContextState()

    @classmethod
    def project(cls, events: Iterable[Event]) -> ContextMeter:
        """A fresh meter folded over `events` (in log order)."""
        meter = cls()
        for event in events:
            meter.apply(event)
        return meter

    def apply(self, event: Event) -> bool:
        """Fold one event; True when either view changed (unrelated events change nothing)."""
        state = self._state
        if event.seq < state.next_seq:
            raise HarnessError(
                f"context meter: event seq {event.seq} arrived after seq {state.next_seq - 1}",
                ErrorCode.INVALID_ARGS,
            )
        changes: dict[str, int | None] = {}
        data = event.data
        if isinstance(data, RequestContext):
            changes["context_window"] = data.context_window
        elif isinstance(data, RequestHeader):
            changes["system_tokens"] = estimate_system(data.header.system)
            changes["tools_tokens"] = estimate_tools(data.header.tools)
        elif isinstance(data, AssistantChunk):
            if isinstance(data.chunk, UsageChunk):
                changes["pressure_tokens"] = _prompt_side(data.chunk.usage)
                changes["sampled_surface_tokens"] = state.surface_tokens
        elif isinstance(data, AssistantMessage):
            if data.usage is not None:  # anchored before this message's own delta (E12)
                changes["pressure_tokens"] = _prompt_side(data.usage)
                changes["sampled_surface_tokens"] = state.surface_tokens
            changes["surface_tokens"] = state.surface_tokens + estimate_message(data.message)
        elif isinstance(data, (UserMessage, ToolResultRecord)):
            changes["surface_tokens"] = state.surface_tokens + estimate_message(data.message)
        before = (self.pressure, self.breakdown)
        self._state = msgspec.structs.replace(state, next_seq=event.seq + 1, **changes)
        return (self.pressure, self.breakdown) != before

    @property
    def pressure(self) -> ContextPressure:
        """The current pressure view."""
        state = self._state
        projected = None
        if state.pressure_tokens is not None:
            delta = state.surface_tokens - state.sampled_surface_tokens
            projected = max(0, state.pressure_tokens + delta)
        return ContextPressure(state.pressure_tokens, projected, state.context_window)

    @property
    def breakdown(self) -> ContextBreakdown:
        """The current composition view."""
        state = self._state
        return ContextBreakdown(state.system_tokens, state.tools_tokens, state.surface_tokens)

    @property
    def next_seq(self) -> int:
        """One past the seq of the last applied event."""
        return self._state.next_seq

    def checkpoint(self) -> bytes:
        """The state as JSON (`ContextState`, version 4)."""
        return msgspec.json.encode(self._state)

    @classmethod
    def restore(cls, checkpoint: bytes | str) -> ContextMeter:
        """A meter rebuilt from `checkpoint()` output; a malformed one raises `INVALID_ARGS`."""
        try:
            return cls(_STATE_DECODER.decode(checkpoint))
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise HarnessError(
                f"context meter: invalid checkpoint (state version 4): {exc}",
                ErrorCode.INVALID_ARGS,
                cause=exc,
            ) from exc
