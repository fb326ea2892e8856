"""The retry count, read back from the session log (spec C10): there is no counter in memory.

The number of the next retry of a failed attempt is one more than the `retry` of the **last**
`llm/retry` event whose turn, step, provider and policy key all equal the current ones. A restart,
another worker on the same log, or a second plugin instance therefore continues the same chain,
and a changed policy (a different key) or another provider starts a new chain at 1.

Retry counts are per fallback target: an `llm/fallback` of the step decided for an earlier attempt
than the one being decided ends every chain before it, so the route/model the step fell back to
starts with a fresh budget even when it is the same route (another model). A fallback decided for
the attempt itself (a dead process's decision offered again on resume) does not: that failure
still belongs to the chain it was counted in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..session.events import Event, LlmFallback, LlmRetry, StepStart
from ..session.log import SessionLog

__all__ = [
    "ChainKey",
    "fallback_decided",
    "find_previous_retry",
    "last_matching_retry",
    "read_retry_chain",
]


@dataclass(frozen=True, slots=True)
class ChainKey:
    """What identifies one retry chain: the step's turn and number, the provider and policy key."""

    turn: int
    step: int
    provider: str
    policy_key: str

    def matches(self, record: LlmRetry) -> bool:
        """True when `record` belongs to this chain."""
        return (
            record.turn == self.turn
            and record.step == self.step
            and record.provider == self.provider
            and record.policy_key == self.policy_key
        )


def last_matching_retry(
    events: Iterable[Event], key: ChainKey, attempt: int | None = None
) -> LlmRetry | None:
    """The last `llm/retry` payload of chain `key` among `events` (in log order), or None.

    An `llm/fallback` of the key's step ends the chain when it was decided for an attempt before
    `attempt` (any attempt when `attempt` is None): see the module docstring."""
    found: LlmRetry | None = None
    for event in events:
        data = event.data
        if isinstance(data, LlmRetry) and key.matches(data):
            found = data
        elif (
            isinstance(data, LlmFallback)
            and (data.turn, data.step) == (key.turn, key.step)
            and (attempt is None or data.attempt < attempt)
        ):
            found = None
    return found


async def fallback_decided(
    log: SessionLog, session_id: str, turn: int, step: int, attempt: int
) -> bool:
    """True when the log already holds an `llm/fallback` for this failed attempt: its next attempt
    was decided (by a process that died before making it, when the failure is offered again on
    resume), so it is not retried on the old route. A decision for an attempt is the session's
    newest `llm/fallback` until a later attempt fails."""
    found = await log.latest(session_id, "llm/fallback")
    data = None if found is None else found.data
    return isinstance(data, LlmFallback) and (data.turn, data.step, data.attempt) == (
        turn,
        step,
        attempt,
    )


async def find_previous_retry(
    log: SessionLog, session_id: str, key: ChainKey, attempt: int | None = None
) -> LlmRetry | None:
    """The last durable `llm/retry` of chain `key` in `session_id`, or None (the chain is new).

    Every record of a step follows that step's `step/start`, so when the newest `step/start` is
    the chain's own step only the events from it on are read; otherwise the whole log is scanned.
    `attempt` is the failed attempt being decided (see `last_matching_retry`).
    """
    return (await read_retry_chain(log, session_id, key, attempt))[0]


async def read_retry_chain(
    log: SessionLog, session_id: str, key: ChainKey, attempt: int | None = None
) -> tuple[LlmRetry | None, int]:
    """`find_previous_retry` plus the session's event count it was derived from: the seq the
    next decision must be appended at (`expect_seq`), so a decision made from a stale read is
    refused (`STALE_WRITE`) instead of double-spending the budget."""
    start = await log.latest(session_id, "step/start")
    from_seq = 0
    data = None if start is None else start.data
    if (
        start is not None
        and isinstance(data, StepStart)
        and (data.turn, data.step)
        == (
            key.turn,
            key.step,
        )
    ):
        from_seq = start.seq
    events = await log.read(session_id, from_seq)
    next_seq = events[-1].seq + 1 if events else from_seq
    return last_matching_retry(events, key, attempt), next_seq
