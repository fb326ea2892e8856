"""`FallbackPlugin`: when a route fails for good, the step's next attempt goes to the next target.

It adds two listeners to the agent:

- on `on_request_error`, for a failure whose code `on` lists: `CONTEXT_WINDOW_EXCEEDED`, `QUOTA`
  and `AUTH` fall back at once, without asking the later listeners (the default retry policy
  retries none of them; one that lists such a code still retries it first when its `RetryPlugin`
  is installed before this plugin). Any other code falls back only once the retry policy gave up
  on the route: the later listeners are asked first (`call_next()`) and a `Retry()` from them
  wins. Under an always-mode policy only those three fall back: that policy never gives up.
  The decision is an `llm/fallback` event appended and flushed (conditionally on the log state
  it was derived from, `STALE_WRITE` otherwise) before `Retry()` is returned. When no target
  follows, the step fails with the last failure, code kept, its message naming the exhausted
  chain.
- on `on_request`, every request of a turn goes to the `to` target of the turn's latest
  `llm/fallback`, read from the log: a process that resumes the turn (`resume_turn`) goes on
  where the dead one fell back to. A later turn starts on its configured route again.

The position in the chain is derived from the log, never held in memory (like the retry count);
retry budgets are per target (`counting.py`). A decision the log already holds for the failed
attempt (a dead process's, offered again on resume) is honoured, not made twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, Final

import msgspec

from ..agent.hooks import (
    AgentLike,
    GiveUp,
    NextDecision,
    RequestErrorContext,
    RequestErrorDecision,
    RequestHookContext,
    Retry,
)
from ..codes import DEFAULT_RETRYABLE_CODES
from ..errors import LlmError
from ..policy import AlwaysRetryPolicy
from ..session.events import LlmFallback, RequestHeader, TurnStart
from ..session.log import SessionLog
from ..vocab import CallConfig, LlmFailure
from .fallback_chain import (
    IMMEDIATE_CODES,
    PLUGIN_NAME,
    FallbackTarget,
    next_target,
    parse_chain,
    parse_codes,
)

__all__ = ["DEFAULT_FALLBACK_CODES", "FallbackPlugin", "FallbackTarget"]

DEFAULT_FALLBACK_CODES: Final[tuple[str, ...]] = DEFAULT_RETRYABLE_CODES
"""What `on` is by default: the transient codes the default retry policy retries (a route that
stays down after its retries). The immediate codes fall back only when listed."""

ChainEntry = FallbackTarget | tuple[str, str] | str
"""A chain entry as given: a target, a `(route, model)` pair or a `"route:model"` string."""

NextConfig = Callable[[], Awaitable[CallConfig]]
"""An `on_request` listener's `call_next`: the config the later listeners chose."""


@dataclass(frozen=True, slots=True)
class _TurnFacts:
    """What a decision is derived from: the turn's latest `llm/fallback`, whether one was already
    decided for the failed attempt, the route/model of the latest request header, and the seq
    the decision must be appended at."""

    latest: LlmFallback | None
    decided: bool
    current: FallbackTarget | None
    next_seq: int


async def _turn_facts(log: SessionLog, ctx: RequestErrorContext) -> _TurnFacts:
    start = await log.latest(ctx.session_id, "turn/start")
    from_seq = 0
    if start is not None and isinstance(start.data, TurnStart) and start.data.turn == ctx.turn:
        from_seq = start.seq
    events = await log.read(ctx.session_id, from_seq)
    latest: LlmFallback | None = None
    decided = False
    header: RequestHeader | None = None
    for event in events:
        data = event.data
        if isinstance(data, LlmFallback) and data.turn == ctx.turn:
            latest = data
            decided = decided or (data.step, data.attempt) == (ctx.step, ctx.attempt)
        elif isinstance(data, RequestHeader):
            header = data
    if header is None:  # the turn runs under a header logged before it
        found = await log.latest(ctx.session_id, "request/header")
        header = found.data if found is not None and isinstance(found.data, RequestHeader) else None
    current = None
    if header is not None:
        current = FallbackTarget(header.header.config.provider, header.header.config.model)
    next_seq = events[-1].seq + 1 if events else from_seq
    return _TurnFacts(latest, decided, current, next_seq)


class FallbackPlugin:
    """Falls a step back across routes/models when its route fails (see the module docstring).

    `chain` lists the targets in order: `(route, model)` pairs or `"route:model"` strings; the
    turn's configured route/model is position 0 unless the chain lists it (then the chain goes on
    from where it is listed). `on` is the failure codes that trigger a fallback (default
    `DEFAULT_FALLBACK_CODES`; add `CONTEXT_WINDOW_EXCEEDED`, `QUOTA`, `AUTH` to fall back at once
    on them). A bad entry or code is refused with `INVALID_CONFIG` naming it. Install it beside
    `RetryPlugin`, e.g. `Agent(plugins=[RetryPlugin(), FallbackPlugin(chain=[...])])`.
    """

    name: ClassVar[str] = PLUGIN_NAME

    def __init__(
        self, *, chain: Iterable[ChainEntry], on: Iterable[str] = DEFAULT_FALLBACK_CODES
    ) -> None:
        self.chain: tuple[FallbackTarget, ...] = parse_chain(chain)
        self.on: frozenset[str] = parse_codes(on)

    def install(self, agent: AgentLike) -> Callable[[], None]:
        """Add the `on_request` and `on_request_error` listeners; returns their disposer."""
        off_request = agent.hooks.on_request.add(self._on_request)
        off_error = agent.hooks.on_request_error.add(self._on_request_error)

        def dispose() -> None:
            off_request()
            off_error()

        return dispose

    async def _on_request(self, ctx: RequestHookContext, call_next: NextConfig) -> CallConfig:
        """Send the request to where the turn fell back to (or back to its configured route)."""
        config = await call_next()
        found = await ctx.agent.log.latest(ctx.session_id, "llm/fallback")
        data = None if found is None else found.data
        if not isinstance(data, LlmFallback):
            return config
        reached = (data.to_route, data.to_model)
        target: tuple[str, str] | None = None
        if data.turn == ctx.turn:
            target = reached
        elif (config.provider, config.model) == reached:
            target = ctx.turn_target  # an earlier turn's fallback: this turn starts afresh
        if target is None or target == (config.provider, config.model):
            return config
        return msgspec.structs.replace(config, provider=target[0], model=target[1])

    async def _on_request_error(
        self, ctx: RequestErrorContext, call_next: NextDecision
    ) -> RequestErrorDecision | None:
        if ctx.signal.cancelled:
            return GiveUp()
        code = ctx.failure.code
        facts = await _turn_facts(ctx.log, ctx)
        if facts.decided:
            return Retry()  # decided by a process that died before the next attempt
        if code not in self.on:
            return None
        if code not in IMMEDIATE_CODES:
            if isinstance(ctx.retry_policy, AlwaysRetryPolicy):
                return None  # an always-mode policy never gives up on its route
            downstream = await call_next()
            if isinstance(downstream, Retry):
                return downstream  # the retry policy has not given up yet
            if ctx.signal.cancelled:
                return GiveUp()
            facts = await _turn_facts(ctx.log, ctx)
        return await self._fall_back(ctx, facts)

    async def _fall_back(self, ctx: RequestErrorContext, facts: _TurnFacts) -> Retry:
        failed = facts.current or FallbackTarget(ctx.provider, "?")
        found = next_target(self.chain, facts.current, facts.latest)
        if found is None:
            raise LlmError.from_failure(self._exhausted(ctx.failure, failed))
        target, position = found
        record = LlmFallback(
            turn=ctx.turn,
            step=ctx.step,
            attempt=ctx.attempt,
            from_route=failed.route,
            from_model=failed.model,
            to_route=target.route,
            to_model=target.model,
            failure=ctx.failure,
            position=position,
        )
        await ctx.log.append(ctx.session_id, record, barrier=True, expect_seq=facts.next_seq)
        return Retry()

    def _exhausted(self, failure: LlmFailure, failed: FallbackTarget) -> LlmFailure:
        chain = ", ".join(str(target) for target in self.chain)
        message = (
            f"{PLUGIN_NAME}: fallback chain exhausted ({chain}); the last target {failed} "
            f"failed: {failure.message}"
        )
        return msgspec.structs.replace(failure, message=message)
