"""Resuming a turn a dead process left open: where the log says it stopped, and what comes next.

`resume_point` folds the events of the open turn (a pure function of the log); `resume_step` then
settles or continues its last Step for `Agent.resume_turn`, through the turn's `StepRunner`:

- an open Step without a committed message continues in place (`StepRunner.carry_on`), attempts
  numbered on from the last logged one. A retry the dead process decided (`llm/retry` without its
  `llm/retry-started`) is honoured: only the rest of its `delay_ms`, measured from the record's
  `time` by the runner's clock, is waited (`wait_cancellably`, with the runner's sleep), then
  `llm/retry-started` is appended with the same `retry_id` and `retry`. A failure no decision
  followed is offered to `on_request_error` again; `GiveUp()` ends the turn in error with it.
- an open Step whose message was committed gets `TOOL_INTERRUPTED` results for its unanswered
  tool calls (a tool may have side effects and may have run: it is not run again) and its
  `step/end`; the turn goes on as the Step's outcome says. A call of a tool declared
  `idempotent` (safe to run twice) is the exception: it runs again, as a live Step runs its calls
  (`rerun.py`), unless the message was interrupted or cut at `max_tokens` (no live Step would run
  those calls).
- an open Step with calls logged as waiting for approval pauses the turn (the other unanswered
  calls are answered as above).
- a turn without an open Step goes on as its last Step's outcome says.

With a typed output the last Step's answer is judged again from the log (a rejected answer,
`OUTPUT_INVALID` included, becomes a correction rather than the turn's error).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..errors import ErrorCode, HarnessError, LlmError
from ..session.events import (
    AssistantChunk,
    AssistantMessage,
    Event,
    LlmRetry,
    LlmRetryStarted,
    StepEnd,
    StepStart,
    ToolResultRecord,
    TurnEndReason,
    TurnInterrupted,
    TurnStart,
)
from ..vocab import (
    Aborted,
    ContentBlock,
    Error,
    Finish,
    FinishReason,
    LlmFailure,
    MaxTokens,
    ToolCallBlock,
)
from ..vocab.messages import tool_result_message
from .cancel import cancellation
from .output import judge, offers_final
from .request import LogView
from .rerun import rerun_calls, rerun_step
from .step import FailedAttempt, StepFrame, StepOutcome, StepRunner
from .wait import wait_cancellably

__all__ = [
    "ResumePoint",
    "interrupted_results",
    "remaining_delay_ms",
    "resume_point",
    "resume_step",
]

INTERRUPTED_TOOL_TEXT = (
    "this tool call was interrupted before it produced a result; it may not have run"
)
"""The text of the error result given to a tool call whose process never logged a result."""


def interrupted_results(view: LogView) -> list[ToolResultRecord]:
    """`TOOL_INTERRUPTED` error results for every committed tool call without a `tool/result`
    (whatever its tool: `run_turn`'s repair answers them all so)."""
    return [
        ToolResultRecord(
            turn=turn,
            step=step,
            call_id=call_id,
            name=name,
            message=tool_result_message(call_id, INTERRUPTED_TOOL_TEXT, is_error=True),
            is_error=True,
            error_code=ErrorCode.TOOL_INTERRUPTED,
        )
        for call_id, (turn, step, name) in view.unanswered.items()
    ]


def remaining_delay_ms(delay_ms: float, decided_at_ms: int, now_ms: int) -> float:
    """What is left of a `delay_ms` wait decided at `decided_at_ms`: 0 once it has elapsed.

    Never more than `delay_ms`, even when the record's clock runs ahead of this one.
    """
    return max(0.0, min(float(delay_ms), decided_at_ms + delay_ms - now_ms))


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where an open turn stopped, folded from its events (`turn/start` on).

    `step` is the turn's last Step (0: none yet) and `step_open` whether its `step/end` is
    missing; `message` is that Step's committed assistant message; `attempt` its last logged
    attempt number (0: none); `finish` the terminal chunk of the message's attempt, or else of the
    last attempt; `failure` the last attempt's failure when no retry decision followed it;
    `pending` an `llm/retry` event decided after the last attempt whose `llm/retry-started` is
    missing; `reopened` that the turn is a paused one reopened (`turn/start {resumed_after}`,
    `step` its paused Step) that started no Step since.
    """

    turn: int
    step: int
    step_open: bool
    message: AssistantMessage | None
    attempt: int
    finish: FinishReason | None
    failure: LlmFailure | None
    pending: Event | None
    reopened: bool = False


def resume_point(events: Sequence[Event]) -> ResumePoint:
    """Fold the events of an open turn, starting at its `turn/start`, into a `ResumePoint`."""
    first = events[0].data if events else None
    if not isinstance(first, TurnStart):
        raise HarnessError(
            "resume_point needs the events of a turn, starting at its turn/start",
            ErrorCode.INVARIANT,
        )
    turn, step, step_open, attempt = first.turn, first.resumed_after or 0, False, 0
    message: AssistantMessage | None = None
    finishes: dict[int, FinishReason] = {}
    pending: Event | None = None
    decided = False  # a retry decision (llm/retry) followed the last attempt
    for event in events[1:]:
        data = event.data
        if isinstance(data, StepStart):
            step, step_open, attempt, message, pending, decided = (
                data.step,
                True,
                0,
                None,
                None,
                False,
            )
            finishes = {}
        elif isinstance(data, StepEnd):
            step_open = False
        elif isinstance(data, AssistantChunk):
            if data.attempt > attempt:
                attempt, pending, decided = data.attempt, None, False
            if isinstance(data.chunk, Finish):
                finishes[data.attempt] = data.chunk.reason
        elif isinstance(data, AssistantMessage):
            message = data
        elif isinstance(data, LlmRetry):
            if (data.turn, data.step) == (turn, step):
                pending, decided = event, True
        elif isinstance(data, LlmRetryStarted):
            record = None if pending is None else pending.data
            if isinstance(record, LlmRetry) and (record.retry_id, record.retry) == (
                data.retry_id,
                data.retry,
            ):
                pending = None
    finish = finishes.get(attempt if message is None else message.attempt)
    failure = None
    if message is None and not decided and isinstance(finish, (Error, Aborted)):
        failure = finish.failure
    reopened = first.resumed_after is not None and step == first.resumed_after and not step_open
    point = ResumePoint(turn, step, step_open, message, attempt, finish, failure, pending)
    return replace(point, reopened=reopened and message is None)


async def resume_step(
    runner: StepRunner, frame: StepFrame, point: ResumePoint
) -> StepOutcome | TurnEndReason | None:
    """Settle or continue the last Step of the open turn (see the module docstring).

    `frame` names that Step (`point.turn`, `point.step`). Returns the Step's outcome, a reason
    that ends the turn now, or None when the turn has no Step yet; a failure nothing retries is
    raised as its `LlmError`.
    """
    log, sid = runner.log, frame.session.session_id
    view = frame.session.view
    interrupted = interrupted_results(view)
    facts: list[ToolResultRecord | StepEnd] = list(interrupted)
    if point.step_open and point.message is not None and view.waiting & set(view.unanswered):
        # it died between logging calls that wait for approval and its pause: pause it now
        facts = [r for r in interrupted if r.call_id not in view.waiting]
        await log.append_many(sid, [*facts, StepEnd(point.turn, point.step)])
        return StepOutcome(max_tokens=False, ran_tools=True, paused=True)
    if point.step_open and point.message is None:
        if facts:
            await log.append_many(sid, facts)

        async def before() -> FailedAttempt | None:
            return await _before_attempt(runner, frame, point)

        return await runner.carry_on(frame, attempt=point.attempt + 1, before=before)
    await runner.tools.ready()  # an idempotent MCP tool is known (and runs) once it is up
    again = _rerun_content(runner, frame, point)
    if again is not None:
        await rerun_step(runner, frame, again, interrupted)
    else:
        if point.step_open:
            facts.append(StepEnd(point.turn, point.step))
        if facts:
            await log.append_many(sid, facts)
    if point.step == 0:
        return None
    if point.reopened:  # the decided calls' results (or their TOOL_INTERRUPTED) go to the model
        return StepOutcome(max_tokens=False, ran_tools=True)
    message = point.message
    if message is None:
        if point.failure is not None:  # the Step ended in error before the turn could
            if runner.output is not None and point.failure.code == ErrorCode.OUTPUT_INVALID:
                return StepOutcome(False, False, runner.output.rejected(point.failure.message))
            raise LlmError.from_failure(point.failure)
        return TurnInterrupted()  # it was being cancelled (or its failure was decided on)
    if message.interrupted:
        return TurnInterrupted()
    if isinstance(point.finish, MaxTokens):
        return StepOutcome(max_tokens=True, ran_tools=False)
    calls = any(isinstance(block, ToolCallBlock) for block in message.message.content)
    verdict = None
    if runner.output is not None:  # the verdict on the answer, as the live Step would judge it
        header = frame.session.view.latest_header
        offered = offers_final(header.tools if header is not None else None)
        verdict = judge(runner.output, offered, message.message)
    return StepOutcome(max_tokens=False, ran_tools=calls, verdict=verdict)


def _rerun_content(
    runner: StepRunner, frame: StepFrame, point: ResumePoint
) -> Sequence[ContentBlock] | None:
    """The open Step's committed message content when it has unanswered calls of idempotent
    tools that a live Step would have run (the message neither interrupted nor cut at
    `max_tokens`); else None."""
    message = point.message
    if not point.step_open or message is None or message.interrupted:
        return None
    if isinstance(point.finish, MaxTokens):
        return None
    content = message.message.content
    return content if rerun_calls(runner.tools, content, frame.session.view.unanswered) else None


async def _before_attempt(
    runner: StepRunner, frame: StepFrame, point: ResumePoint
) -> FailedAttempt | None:
    """Finish what the dead process was doing between the last attempt and the next one: the
    rest of a decided retry's wait, or the failed attempt still to decide on."""
    pending = point.pending
    if pending is not None and isinstance(pending.data, LlmRetry):
        record = pending.data
        left = remaining_delay_ms(record.delay_ms, pending.time, runner.clock())
        await wait_cancellably(left, frame.signal, sleep=runner.sleep)
        if frame.signal.cancelled:
            raise cancellation()
        await runner.log.append(
            frame.session.session_id,
            LlmRetryStarted(
                retry_id=record.retry_id, turn=record.turn, step=record.step, retry=record.retry
            ),
        )
        return None
    if point.failure is None:
        return None
    provider, policy = await runner.served_by(frame.session.view)
    return FailedAttempt(point.attempt, provider, point.failure, policy)
