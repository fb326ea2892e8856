"""`TokenMeasure`: how big the next request is, anchored on provider usage (spec E.6).

A per-session fold over the log. It keeps the latest canonical request header, the positional
surface (one node per surface event with its heuristic price), the open step, and an *anchor*
per successful `assistant/message`: the surface the provider's usage accounts for plus a baseline
(the provider's own count when it is at least the heuristic estimate, else the estimate).
`measure()` then reports the baseline plus the signed surface growth since the anchor, or a full
estimate when the request header changed since the anchor.

Each event is folded transactionally: everything is computed first and an inconsistent event
raises `HarnessError` (`INVARIANT`) leaving the fold unchanged, so the same error repeats.

modelwire choice: the anchor surface is the surface the request saw (everything before the
message) plus the price of the provider's own output, re-assembled from the chunk seqs the message
cites; a durable rewrite of the output then shows as a signed delta.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import msgspec

from ..assembler import BlockAssembler
from ..errors import ErrorCode, HarnessError
from ..session.events import (
    AssistantChunk,
    AssistantMessage,
    EpochHeader,
    Event,
    RequestHeader,
    StepEnd,
    StepStart,
    ToolResultRecord,
    UserMessage,
)
from ..session.log import SessionLog
from ..vocab import TokenUsage
from .estimate import estimate_blocks, estimate_header, estimate_message

__all__ = ["Baseline", "Measurement", "SurfaceNode", "TokenMeasure", "canonical_header"]

_ENCODER: Final = msgspec.json.Encoder()


def canonical_header(header: EpochHeader | None) -> EpochHeader | None:
    """`header` with an empty system prompt/tool list dropped and flag-less defaults removed."""
    if header is None:
        return None
    defaults = header.adapter_defaults
    keep = defaults is not None and (defaults.reasoning_effort or defaults.max_tokens)
    return EpochHeader(
        config=header.config,
        adapter_defaults=defaults if keep else None,
        system=header.system or None,
        tools=tuple(header.tools) if header.tools else None,
    )


def _same_header(a: EpochHeader | None, b: EpochHeader | None) -> bool:
    if a is None or b is None:
        return a is b
    return _ENCODER.encode(a) == _ENCODER.encode(b)


@dataclass(frozen=True, slots=True)
class Baseline:
    """Where a measurement starts: nothing, a heuristic estimate, or the provider's usage."""

    kind: Literal["none", "estimated", "usage"]
    tokens: int
    usage: TokenUsage | None = None


@dataclass(frozen=True, slots=True)
class SurfaceNode:
    """One surface event (by seq) and its heuristic price."""

    seq: int
    tokens: int


@dataclass(frozen=True, slots=True)
class Measurement:
    """A detached snapshot: `total_tokens = max(0, baseline.tokens + surface_delta_tokens)`."""

    log_revision: int
    baseline: Baseline
    surface_delta_tokens: int
    total_tokens: int
    surface_tokens: int
    nodes: tuple[SurfaceNode, ...]


@dataclass(frozen=True, slots=True)
class _Anchor:
    header: EpochHeader | None
    surface_tokens: int
    baseline: Baseline


_NONE: Final = Baseline("none", 0)


class TokenMeasure:
    """The `measure` fold of one session (see the module docstring)."""

    __slots__ = ("_anchor", "_chunks", "_consumed", "_header", "_nodes", "_open", "_surface")

    def __init__(self) -> None:
        self._consumed = 0
        self._header: EpochHeader | None = None
        self._nodes: list[SurfaceNode] = []
        self._surface = 0
        self._open: tuple[int, int] | None = None
        self._anchor: _Anchor | None = None
        self._chunks: dict[int, AssistantChunk] = {}  # the open step's chunks, by seq

    @classmethod
    def project(cls, events: Iterable[Event]) -> TokenMeasure:
        """A fresh fold over `events` (in log order)."""
        fold = cls()
        for event in events:
            fold.apply(event)
        return fold

    async def catch_up(self, log: SessionLog, session_id: str) -> Measurement:
        """Fold the events not seen yet (from `log_revision` on), then `measure()`."""
        for event in await log.read(session_id, self._consumed):
            self.apply(event)
        return self.measure()

    def apply(self, event: Event) -> None:
        """Fold one event, or raise `INVARIANT` and change nothing (the event stays unread)."""
        if event.seq != self._consumed:
            raise self._error(f"event seq {event.seq} is not the next seq {self._consumed}")
        data = event.data
        seq = event.seq
        if isinstance(data, StepStart):
            if self._open is not None:
                turn, step = self._open
                raise self._error(
                    f"step/start at seq {seq} arrived before turn {turn}/step {step} ended"
                )
            self._open = (data.turn, data.step)
            self._chunks = {}
        elif isinstance(data, StepEnd):
            if self._open != (data.turn, data.step):
                raise self._error(f"step/end at seq {seq} has no matching step/start event")
            self._open = None
            self._chunks = {}
        elif isinstance(data, AssistantChunk):
            if self._open == (data.turn, data.step):
                self._chunks[seq] = data
        elif isinstance(data, RequestHeader):
            self._header = canonical_header(data.header)
        elif isinstance(data, AssistantMessage):
            if self._open != (data.turn, data.step):
                raise self._error(
                    f"assistant/message at seq {seq} has no matching step/start event"
                )
            price = estimate_message(data.message)
            anchor = None if data.interrupted else self._anchor_for(seq, data, price)
            self._append(seq, price)
            if anchor is not None:
                self._anchor = anchor
        elif isinstance(data, (UserMessage, ToolResultRecord)):
            self._append(seq, estimate_message(data.message))
        self._consumed = seq + 1

    def _append(self, seq: int, price: int) -> None:
        self._nodes.append(SurfaceNode(seq, price))
        self._surface += price

    def _anchor_for(self, seq: int, data: AssistantMessage, durable_price: int) -> _Anchor:
        header = self._header
        header_price = estimate_header(header)
        usage = data.usage
        if usage is None or header is None:
            surface = self._surface + durable_price
            return _Anchor(header, surface, Baseline("estimated", header_price + surface))
        surface = self._surface + self._output_price(seq, data)
        provider = usage.billed_input_tokens + usage.output_tokens
        estimated = header_price + surface
        if provider >= estimated:
            return _Anchor(header, surface, Baseline("usage", provider, usage))
        return _Anchor(header, surface, Baseline("estimated", estimated))

    def _output_price(self, seq: int, data: AssistantMessage) -> int:
        """The price of what the provider produced: blocks re-assembled from the cited chunks."""
        cited: Sequence[int] = data.source_event_seqs
        seen: set[int] = set()
        assembler = BlockAssembler()
        for source in cited:
            where = f"assistant/message at seq {seq}"
            if source >= seq:
                raise self._error(f"{where}: source seq {source} is not earlier")
            if source in seen:
                raise self._error(f"{where} repeats source seq {source}")
            seen.add(source)
            chunk = self._chunks.get(source)
            if chunk is None:
                raise self._error(
                    f"{where}: source seq {source} is not assistant/chunk of turn "
                    f"{data.turn}/step {data.step} (it belongs to another step or is another event)"
                )
            if chunk.attempt != data.attempt:
                raise self._error(f"{where}: source seq {source} belongs to another attempt")
            assembler.push(chunk.chunk)
        blocks = assembler.blocks() if cited else ()
        return estimate_blocks(blocks) + 4 if blocks else 0

    def measure(self, header: EpochHeader | None = None) -> Measurement:
        """The measurement for the next request with `header` (default: the folded header)."""
        effective = canonical_header(header) if header is not None else self._header
        anchor = self._anchor
        surface = self._surface
        if anchor is not None and _same_header(anchor.header, effective):
            baseline = anchor.baseline
            delta = surface - anchor.surface_tokens
        elif effective is None and surface == 0:
            baseline, delta = _NONE, 0
        else:
            baseline, delta = Baseline("estimated", estimate_header(effective) + surface), 0
        return Measurement(
            log_revision=self._consumed,
            baseline=baseline,
            surface_delta_tokens=delta,
            total_tokens=max(0, baseline.tokens + delta),
            surface_tokens=surface,
            nodes=tuple(self._nodes),
        )

    @staticmethod
    def _error(message: str) -> HarnessError:
        return HarnessError(f"token meter: {message}", ErrorCode.INVARIANT)
