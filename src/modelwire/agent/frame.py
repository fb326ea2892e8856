"""The frame of one turn inside its lease: open it, run its Steps (`TurnLoop`), end it.

`Agent.run_turn` and `Agent.resume_turn` differ only in how the turn opens (`opener`): a new
`turn/start` after the repair of what a dead writer left, or the open turn read back. Whatever
the Steps do, the turn ends with one `turn/end` (completed, error, aborted, or a limit) and a
flush; a cancelled caller still gets its `turn/end` within `cancel_grace_ms`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Protocol

from ..errors import ErrorCode, HarnessError, normalize_llm_failure
from ..meter import ZERO_USAGE
from ..session.events import (
    AbortCause,
    TurnAborted,
    TurnCompleted,
    TurnEnd,
    TurnEndReason,
    TurnErrored,
    TurnPaused,
)
from ..vocab import Message, StreamChunk
from .approval import ApprovalState
from .cancel import TurnCancelled, TurnSignal
from .hooks import AgentHooks, AgentLike, ErrorContext, TurnHookContext
from .limits import UsageLimits
from .output import OutputSpec
from .request import LogView, derive_messages
from .result import TurnResult
from .step import SessionState, StepRunner
from .turn import TurnLoop, TurnState

__all__ = ["FramedAgent", "end_turn", "notify_error", "run_frame"]


class FramedAgent(AgentLike, Protocol):
    """What the frame uses of the agent (`Agent` is one)."""

    max_steps: int
    usage_limits: UsageLimits | None
    output_retries: int
    cancel_grace_ms: float
    _signals: dict[str, TurnSignal]
    _inbox: dict[str, list[Message]]
    _opened: dict[str, int]
    _sessions: dict[str, SessionState]

    def _session(self, session_id: str) -> SessionState:
        """The agent's state of a session."""
        ...

    def _runner(self, output: OutputSpec | None, timeout_ms: int | None) -> StepRunner:
        """The step runner of a turn starting now (`timeout_ms`: the turn's override)."""
        ...


async def run_frame(
    agent: FramedAgent,
    sid: str,
    output: OutputSpec | None,
    signal: TurnSignal,
    opener: Callable[[LogView], Awaitable[TurnState]],
    listener: Callable[[StreamChunk], None] | None = None,
    timeout_ms: int | None = None,
) -> TurnResult[Any]:  # Any: the turn's output type
    """The turn frame shared by `run_turn` and `resume_turn`: open, Steps, `turn/end`;
    `listener` hears every chunk of the turn's provider calls (`Agent.stream_turn`);
    `timeout_ms` overrides the agent's model-call deadline for this turn."""
    log = agent.log
    agent._signals[sid] = signal
    try:
        try:
            state = await opener(await agent._session(sid).view.refresh(log, sid))
        except HarnessError as exc:
            if exc.code != ErrorCode.STALE_WRITE:
                raise
            # The log is not where this agent's view of it ends (another writer appended, or a
            # crashed server lost relaxed commits): read the session afresh, decide once more.
            agent._sessions.pop(sid, None)
            state = await opener(await agent._session(sid).view.refresh(log, sid))
    except BaseException:
        agent._signals.pop(sid, None)
        raise
    state.sink.listener = listener
    turn = state.turn
    reason: TurnEndReason = TurnCompleted()
    failed: Exception | None = None
    try:
        try:
            steps = TurnLoop(
                agent=agent,
                log=log,
                hooks=agent.hooks,
                inbox=agent._inbox,
                session=agent._session(sid),
                signal=signal,
                runner=agent._runner(output, timeout_ms),
                max_steps=agent.max_steps,
                usage_limits=agent.usage_limits,
                output_retries=agent.output_retries,
            )
            opened = TurnHookContext(agent=agent, session_id=sid, turn=turn, signal=signal)
            reason = await agent.hooks.on_turn.run(opened, lambda: steps.run(state))
        except Exception as exc:
            failed = exc
            failure = normalize_llm_failure(exc)
            reason = TurnErrored(failure)
            notify_error(
                agent.hooks,
                ErrorContext(
                    session_id=sid, turn=turn, step=state.step, failure=failure, error=exc
                ),
            )
    except TurnCancelled:
        reason = TurnAborted(AbortCause(signal.cause or "user", signal.reason))
    except asyncio.CancelledError:
        # Bounded whatever the log does: a stalled log gets `cancel_grace_ms` to take the
        # turn/end (the write goes on in the background); a turn left open is repaired later.
        aborted = TurnAborted(AbortCause(signal.cause or "user", signal.reason))
        with contextlib.suppress(HarnessError):
            async with signal.grace():
                await end_turn(agent, sid, turn, aborted)
        raise
    finally:
        agent._signals.pop(sid, None)
    ended = False
    async with signal.grace():  # bounded once the log failed (`TurnSignal.wind_down`)
        await end_turn(agent, sid, turn, reason)
        ended = True
    if not ended:  # the failed log did not take turn/end in time: its failure is the answer
        if failed is not None:
            raise failed
        raise HarnessError(f"session {sid!r}: turn {turn} was not ended", ErrorCode.LOG_UNAVAILABLE)
    events = await log.read(sid, state.start_seq, chunks=False)
    messages = derive_messages(events)
    paused = isinstance(reason, TurnPaused)
    report = state.sink.tally.report()
    result: TurnResult[Any] = TurnResult(  # Any: the turn's output type
        turn,
        reason,
        messages,
        state.output,
        usage=report.turns.get(turn, ZERO_USAGE),
        cost=report.turns_cost.get(turn),
        pending=ApprovalState.fold(events).waiting if paused else (),
    )
    if output is None and (isinstance(reason, TurnCompleted) or state.answered):  # the text
        result = replace(result, output=result.text)
    return result


async def end_turn(
    agent: FramedAgent,
    sid: str,
    turn: int,
    reason: TurnEndReason,
) -> None:
    """Append `turn/end` and flush; a failing flush is raised unless the turn already failed."""
    await agent.log.append(sid, TurnEnd(turn, reason))
    try:
        await agent.log.flush()
    except Exception:
        if not isinstance(reason, (TurnErrored, TurnAborted)):
            raise
    if agent._opened.get(sid) == turn:
        del agent._opened[sid]


def notify_error(hooks: AgentHooks, ctx: ErrorContext) -> None:
    """Tell the `on_error` observers; an observer's failure changes nothing."""
    for observer in tuple(hooks.on_error):
        try:
            observer(ctx)
        except Exception:  # observers must not change the turn's outcome
            continue
