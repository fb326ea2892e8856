"""The token-usage projection (spec E.2, keyed per DESIGN §7): billed tokens per provider call.

One provider call is identified by (turn, step, attempt). Its usage sample comes from the
`usage` chunks it logged (`assistant/chunk`, the *early* sample, which survives a failed attempt)
and from the `usage` of its `assistant/message` (the *final* sample). A later sample of the same
call replaces the earlier one — subtract the old, add the new — so nothing is counted twice, and
a retried attempt is a different call, so a failed attempt's billed tokens are kept.

Buckets are disjoint: uncached input (`input_tokens`), cache read, cache write and output;
`reasoning_tokens` is a part of output, reported but never added on top. The projection is a pure
fold over the log: `TokenMeter.project(events[:k])` is the report as of any seq `k`, and applying
events one by one as they arrive gives the same report.

Cost (`cost.py`): each call is priced at the `pricing` of the latest `request/context` before
its first usage sample; a call's cost is computed when its usage changes, the sums when a report
is built (no per-chunk decimal arithmetic).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Final, Literal

import msgspec

from ..errors import ErrorCode, HarnessError
from ..session.events import AssistantChunk, AssistantMessage, Event, RequestContext
from ..session.log import SessionLog
from ..vocab import ModelPricing, TokenUsage, UsageChunk, call_cost
from .cost import NO_PRICE, CallKey, PriceBook, check_parallel, cost_sums

__all__ = ["ZERO_USAGE", "CallKey", "MeterState", "TokenMeter", "UsageReport", "normalize_usage"]

ZERO_USAGE: Final = TokenUsage(0, 0, 0, 0, 0)
"""All buckets zero (every optional bucket present as 0)."""

STATE_VERSION: Final = 2


def normalize_usage(usage: TokenUsage) -> TokenUsage:
    """`usage` with every optional bucket present (an unreported bucket counts as 0)."""
    return TokenUsage(
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens or 0,
        usage.cache_write_tokens or 0,
        usage.reasoning_tokens or 0,
    )


@dataclass(frozen=True, slots=True)
class UsageReport:
    """A detached snapshot of the projection after `seq` events.

    `total` sums every call; `calls` maps (turn, step, attempt) to that call's current sample;
    `turns` maps a turn to the sum of its calls. Every `TokenUsage` has all five buckets as ints.

    Cost is in USD as `Decimal`, at the prices logged with each call (`request/context`):
    `calls_cost` has one entry per call in `calls` (None: its price is unknown); `turns_cost` and
    `cost` (the session) sum them, and are None as soon as one billed call of theirs has an
    unknown price — a partial sum is never passed off as the cost — or when no call of theirs
    is priced (an empty log's cost is None). Failed attempts' tokens are billed, so they are
    priced and summed too; an unpriced call that reported no tokens adds nothing.
    """

    total: TokenUsage
    calls: Mapping[CallKey, TokenUsage]
    turns: Mapping[int, TokenUsage]
    seq: int
    cost: Decimal | None = None
    calls_cost: Mapping[CallKey, Decimal | None] = field(
        default_factory=lambda: MappingProxyType({})
    )
    turns_cost: Mapping[int, Decimal | None] = field(default_factory=lambda: MappingProxyType({}))

    def call(self, turn: int, step: int, attempt: int = 1) -> TokenUsage | None:
        """The sample of one provider call, or None when it reported no usage."""
        return self.calls.get((turn, step, attempt))

    def call_cost(self, turn: int, step: int, attempt: int = 1) -> Decimal | None:
        """The cost of one provider call in USD, or None when its price is unknown or it
        reported no usage."""
        return self.calls_cost.get((turn, step, attempt))


class MeterState(msgspec.Struct, frozen=True, kw_only=True):
    """A JSON checkpoint of a `TokenMeter`: the version, the next seq, each call's sample and
    (version 2) the prices: the distinct price lists, each call's index into them and the index
    in effect for the next call (-1: unknown). A version 1 checkpoint restores with no prices."""

    version: Literal[1, 2] = 2
    next_seq: int
    calls: tuple[tuple[int, int, int, TokenUsage], ...]
    prices: tuple[ModelPricing, ...] = ()
    call_prices: tuple[int, ...] = ()
    pricing: int = NO_PRICE


_STATE_DECODER: Final = msgspec.json.Decoder(MeterState)


class TokenMeter:
    """The incremental usage projection of one session (see the module docstring).

    Feed events in log order with `apply`; read `report()`. `project(events)` and
    `await from_log(log, session_id)` rebuild it from scratch; `checkpoint()`/`restore()` carry it
    across a reload as JSON.
    """

    __slots__ = (
        "_call_pricing",
        "_calls",
        "_costs",
        "_next_seq",
        "_pricing",
        "_revision",
        "_total",
        "_turns",
    )

    def __init__(self) -> None:
        self._calls: dict[CallKey, TokenUsage] = {}
        self._turns: dict[int, TokenUsage] = {}
        self._total: TokenUsage = ZERO_USAGE
        self._next_seq = 0
        self._revision = 0
        self._pricing: ModelPricing | None = None  # of the latest `request/context`
        self._call_pricing: dict[CallKey, ModelPricing | None] = {}
        self._costs: dict[CallKey, Decimal | None] = {}

    # ---- building ----------------------------------------------------------------------------

    @classmethod
    def project(cls, events: Iterable[Event]) -> UsageReport:
        """The report of a fresh meter after `events` (in log order)."""
        meter = cls()
        for event in events:
            meter.apply(event)
        return meter.report()

    @classmethod
    async def from_log(
        cls, log: SessionLog, session_id: str, *, to_seq: int | None = None
    ) -> TokenMeter:
        """A meter caught up with `session_id` (up to, not including, `to_seq` when given)."""
        meter = cls()
        for event in await log.read(session_id, 0, to_seq):
            meter.apply(event)
        return meter

    async def catch_up(self, log: SessionLog, session_id: str) -> bool:
        """Apply the events of `session_id` this meter has not seen yet; True if usage changed."""
        changed = False
        for event in await log.read(session_id, self._next_seq):
            changed = self.apply(event) or changed
        return changed

    # ---- the fold ----------------------------------------------------------------------------

    @property
    def next_seq(self) -> int:
        """One past the seq of the last applied event (0 for a fresh meter)."""
        return self._next_seq

    @property
    def revision(self) -> int:
        """How many applied events changed the usage (a change counter for observers)."""
        return self._revision

    def apply(self, event: Event) -> bool:
        """Fold one event; True when it changed the usage, False when it left it untouched (a
        `request/context` only sets the prices of the calls that follow it).

        Events must come in increasing seq order; an event at or before an applied seq raises
        `HarnessError` `INVALID_ARGS` (a replayed event would otherwise look like a new sample).
        """
        if event.seq < self._next_seq:
            raise HarnessError(
                f"token meter: event seq {event.seq} arrived after seq {self._next_seq - 1}",
                ErrorCode.INVALID_ARGS,
            )
        self._next_seq = event.seq + 1
        data = event.data
        if isinstance(data, AssistantChunk):
            chunk = data.chunk
            if not isinstance(chunk, UsageChunk):
                return False
            return self._sample((data.turn, data.step, data.attempt), chunk.usage, self._pricing)
        if isinstance(data, AssistantMessage):
            if data.usage is None:
                return False
            return self._sample((data.turn, data.step, data.attempt), data.usage, self._pricing)
        if isinstance(data, RequestContext):
            self._pricing = data.pricing
        return False

    def record(self, key: CallKey, usage: TokenUsage | None, pricing: ModelPricing | None) -> bool:
        """Fold one call's usage sample given directly, priced at `pricing` when it is the call's
        first sample: the same fold as `apply`, for a caller that saw the call's final usage
        itself (an agent tallying the calls of its own turn). None is no sample."""
        return usage is not None and self._sample(key, usage, pricing)

    def _sample(self, key: CallKey, usage: TokenUsage, pricing: ModelPricing | None) -> bool:
        new = normalize_usage(usage)
        old = self._calls.get(key)
        if old == new:
            return False
        turn = key[0]
        turn_total = self._turns.get(turn, ZERO_USAGE)
        total = self._total
        if old is not None:  # a later sample of the same call replaces the earlier one
            turn_total = turn_total - old
            total = total - old
        else:  # the call's first sample: it is priced as the latest context says
            self._call_pricing[key] = pricing
        self._calls[key] = new
        self._costs[key] = call_cost(self._call_pricing[key], new)
        self._turns[turn] = turn_total + new
        self._total = total + new
        self._revision += 1
        return True

    # ---- reading and checkpoints -------------------------------------------------------------

    def report(self) -> UsageReport:
        """A detached, read-only snapshot of the current projection (cost sums included)."""
        cost, turns_cost = cost_sums(self._calls, self._costs)
        return UsageReport(
            total=self._total,
            calls=MappingProxyType(dict(self._calls)),
            turns=MappingProxyType(dict(self._turns)),
            seq=self._next_seq,
            cost=cost,
            calls_cost=MappingProxyType(dict(self._costs)),
            turns_cost=MappingProxyType(turns_cost),
        )

    @property
    def total(self) -> TokenUsage:
        """The session total so far (all five buckets as ints)."""
        return self._total

    def checkpoint(self) -> bytes:
        """The meter's state as JSON (`MeterState`), restorable with `restore`."""
        book = PriceBook()
        state = MeterState(
            next_seq=self._next_seq,
            calls=tuple((t, s, a, usage) for (t, s, a), usage in self._calls.items()),
            call_prices=tuple(book.index(self._call_pricing[key]) for key in self._calls),
            pricing=book.index(self._pricing),
            prices=tuple(book.prices),
        )
        return msgspec.json.encode(state)

    @classmethod
    def restore(cls, checkpoint: bytes | str) -> TokenMeter:
        """A meter rebuilt from `checkpoint()` output; a malformed one raises `INVALID_ARGS`."""
        try:
            state = _STATE_DECODER.decode(checkpoint)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise HarnessError(
                f"token meter: invalid checkpoint (state version {STATE_VERSION}): {exc}",
                ErrorCode.INVALID_ARGS,
                cause=exc,
            ) from exc
        book = PriceBook(state.prices)
        call_prices = state.call_prices or (NO_PRICE,) * len(state.calls)  # version 1: none
        check_parallel(state.calls, call_prices)
        meter = cls()
        for (turn, step, attempt, usage), index in zip(state.calls, call_prices, strict=True):
            pricing = book.lookup(index, f"call ({turn}, {step}, {attempt})")
            meter._sample((turn, step, attempt), usage, pricing)
        meter._pricing = book.lookup(state.pricing, "the next call")
        meter._next_seq = state.next_seq
        meter._revision = 0
        return meter
