"""The Steps of one turn (`TurnLoop`): run until no tool calls remain, a limit or the answer.

`Agent` opens and closes a turn (`turn/start`, repair, `turn/end`) and hands its Steps to one
`TurnLoop`, which runs them through the turn's `StepRunner`: the pre-step checkpoint and hook,
the limits checked before every step past the first (`limits.py`), and, with a typed output, the
verdict on each Step's answer (accepted: the turn completes; rejected: an `output/correction`,
until `output_retries` are spent, then `OUTPUT_INVALID`). A resumed turn first settles the Step
the dead process left open (`resume.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ErrorCode, HarnessError, OutputInvalidError
from ..events import OutputCorrection
from ..meter import TokenMeter
from ..session.events import (
    ToolCallRecord,
    ToolDecision,
    TurnBlocked,
    TurnCompleted,
    TurnEndReason,
    TurnMaxTokens,
    TurnPaused,
    TurnStart,
)
from ..session.log import SessionLog
from ..vocab import Message
from .approval import ApprovalState
from .cancel import TurnSignal, cancellation
from .chunks import CallSink
from .decided import settle_decided
from .hooks import AgentHooks, AgentLike, Block, PreStepContext
from .limits import TurnUsage, UsageLimits, exceeded, over_budget
from .output import Accepted, Rejected
from .repair import repair_facts
from .request import LogView
from .resume import ResumePoint, resume_point, resume_step
from .step import SessionState, StepFrame, StepOutcome, StepRunner

__all__ = ["TurnLoop", "TurnState", "open_new", "open_resumed"]


@dataclass(slots=True)
class TurnState:
    """The running turn inside the frame: its number, where its events start, the Step count,
    the messages entering the next Step, when resuming where the dead process stopped, the output
    corrections so far (and the step of the last one), the accepted output, whether the turn
    ended on an answer past a token budget (`answered`), and what hears its provider calls
    (`sink`: their usage tally — a resumed turn's read back from the log first — and chunks)."""

    turn: int
    start_seq: int
    step: int = 0
    entered: list[Message] = field(default_factory=list)
    resumed: ResumePoint | None = None
    corrections: int = 0
    corrected_step: int = 0
    output: object = None
    answered: bool = False
    sink: CallSink = field(default_factory=CallSink)
    decided: tuple[tuple[ToolCallRecord, ToolDecision], ...] | None = None  # a reopened pause
    usage_from: int | None = None  # where the turn's usage is read from (None: start_seq)


async def open_new(
    log: SessionLog,
    sid: str,
    view: LogView,
    first: Message | None,
    ticket: str | None,
    ours: bool,
    now: int,
    repair_after_ms: float,
) -> TurnState:
    """A new turn of `sid` (`turn/start`, with `ticket`), after the repair of an open turn a
    dead writer left (`ours`: this agent's own, or its holder proved gone). One conditional
    append: the repair and the turn number are decisions derived from the view, so they land
    only if no other writer appended since (else `STALE_WRITE`). A paused last turn is
    `TURN_PAUSED`: its calls wait for decisions, and `resume_turn` continues it."""
    if view.paused is not None:
        raise await _paused_error(log, sid)
    turn = view.last_turn + 1
    facts = [*repair_facts(sid, view, ours, now, repair_after_ms), TurnStart(turn, ticket)]
    events = await log.append_many(sid, facts, expect_seq=view.next_seq)
    return TurnState(turn, events[-1].seq, entered=[first] if first is not None else [])


async def open_resumed(log: SessionLog, sid: str, view: LogView) -> TurnState:
    """The state of the open turn of `sid` a dead process left, read from the log (its Steps and
    output corrections so far); no open turn is `NOTHING_TO_RESUME`. A paused turn whose calls
    are all decided is reopened (`turn/start {resumed_after}`, durable before any approved call
    runs; a call still undecided is `APPROVAL_PENDING` naming them all)."""
    start = await log.latest(sid, "turn/start")
    if view.open_turn is None and view.paused is not None and start is not None:
        return await _reopen(log, sid, view, start.seq)
    if view.open_turn is None or start is None:
        missing = "" if await log.exists(sid) else " (the session does not exist)"
        raise HarnessError(
            f"session {sid!r} has no open turn to resume{missing}", ErrorCode.NOTHING_TO_RESUME
        )
    events = await log.read(sid, start.seq)
    point = resume_point(events)
    steps = [e.data.step for e in events if isinstance(e.data, OutputCorrection)]
    state = TurnState(point.turn, start.seq, point.step, resumed=point, corrections=len(steps))
    state.corrected_step = max(steps, default=0)
    state.sink.tally = await TokenMeter.from_log(log, sid)  # the calls the dead process made
    return state


def _listed(state: ApprovalState, undecided: bool) -> str:
    calls = state.undecided if undecided else state.waiting
    return ", ".join(f"{p.call_id} ({p.tool} {p.arguments})" for p in calls)


async def _paused_error(log: SessionLog, sid: str) -> HarnessError:
    state = ApprovalState.fold(await log.read(sid, chunks=False))
    return HarnessError(
        f"session {sid!r}: turn {state.paused_turn} is paused, waiting for decisions on tool "
        f"calls {_listed(state, False)}; decide them (agent.decide) and resume the turn "
        "(agent.resume_turn) before a new turn starts",
        ErrorCode.TURN_PAUSED,
    )


async def _reopen(log: SessionLog, sid: str, view: LogView, start_seq: int) -> TurnState:
    """Reopen the paused turn of `sid` once every waiting call is decided (see open_resumed)."""
    state = ApprovalState.fold(await log.read(sid, start_seq, chunks=False))
    turn = state.paused_turn
    if turn is None:  # the view said paused: an earlier turn/start holds the pending calls
        state = ApprovalState.fold(await log.read(sid, chunks=False))
        turn = state.paused_turn
    assert turn is not None
    if state.undecided:
        raise HarnessError(
            f"session {sid!r}: turn {turn} cannot resume yet: tool calls "
            f"{_listed(state, True)} still wait for a decision (agent.decide)",
            ErrorCode.APPROVAL_PENDING,
        )
    reopen = TurnStart(turn, state.ticket, resumed_after=state.paused_step)
    event = await log.append(sid, reopen, barrier=True, expect_seq=view.next_seq)
    decided = tuple((state.pending[p.call_id], state.decisions[p.call_id]) for p in state.waiting)
    return TurnState(turn, event.seq, state.paused_step, decided=decided, usage_from=0)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnLoop:
    """The Steps of one turn of `agent` in `session` (see the module docstring); `inbox` is the
    agent's queue of injected messages per session."""

    agent: AgentLike
    log: SessionLog
    hooks: AgentHooks
    inbox: dict[str, list[Message]]
    session: SessionState
    signal: TurnSignal
    runner: StepRunner
    max_steps: int
    usage_limits: UsageLimits | None
    output_retries: int

    async def run(self, state: TurnState) -> TurnEndReason:
        """Run Steps until no tool calls (and no injected messages) remain; the turn's reason
        (a token budget the last step passed: that limit, see `limits.py`)."""
        start = state.start_seq if state.usage_from is None else state.usage_from
        usage = TurnUsage(self.log, self.session.session_id, state.turn, start)
        reason = await self._steps(state, usage)
        if self.usage_limits is not None and isinstance(reason, (TurnCompleted, TurnMaxTokens)):
            over = await over_budget(self.usage_limits, usage)
            if over is not None:
                state.answered = isinstance(reason, TurnCompleted)
                return over
        return reason

    async def _steps(self, state: TurnState, usage: TurnUsage) -> TurnEndReason:
        session, signal, runner = self.session, self.signal, self.runner
        sid = session.session_id
        max_tokens = False
        more = True
        if state.decided is not None:
            frame = StepFrame(session, signal, state.turn, state.step, state.sink)
            await settle_decided(runner, frame, state.decided)
            if signal.cancelled:
                raise cancellation()
        if state.resumed is not None:
            frame = StepFrame(session, signal, state.turn, state.step, state.sink)
            settled = await resume_step(runner, frame, state.resumed)
            if isinstance(settled, StepOutcome) and settled.paused:
                return TurnPaused()
            if isinstance(settled, StepOutcome):
                max_tokens = settled.max_tokens
                more = settled.ran_tools or bool(self.inbox.get(sid))
                if await self._answered(state, settled):
                    return TurnCompleted()
                more = more or bool(state.entered)
            elif settled is not None:
                return settled
            if signal.cancelled:
                raise cancellation()
        while more:
            state.entered.extend(self.inbox.pop(sid, ()))
            if state.step == 0 and not state.entered:
                break  # nothing to say: the turn completes without a step
            limit = await exceeded(self.max_steps, state.step, self.usage_limits, usage)
            if limit is not None:
                return limit
            state.step += 1
            await self.log.flush()  # pre-step checkpoint: the previous step is durable
            decision = await self.hooks.on_pre_step.run(
                PreStepContext(
                    agent=self.agent,
                    session_id=sid,
                    turn=state.turn,
                    step=state.step,
                    messages=tuple(state.entered),
                    signal=signal,
                )
            )
            if isinstance(decision, Block):
                return TurnBlocked()
            state.entered = []
            frame = StepFrame(session, signal, state.turn, state.step, state.sink)
            outcome = await runner.run(frame, tuple(decision))
            if outcome.paused:
                return TurnPaused()
            max_tokens = max_tokens or outcome.max_tokens
            more = outcome.ran_tools or bool(self.inbox.get(sid))
            if await self._answered(state, outcome):
                return TurnCompleted()
            more = more or bool(state.entered)
            if signal.cancelled:
                raise cancellation()
        return TurnMaxTokens() if max_tokens else TurnCompleted()

    async def _answered(self, state: TurnState, outcome: StepOutcome) -> bool:
        """Act on a Step's verdict: True once the answer is accepted; a rejected one is logged
        as a correction (its message enters the next Step) until the retries are spent."""
        verdict, output = outcome.verdict, self.runner.output
        if isinstance(verdict, Accepted):
            state.output = verdict.value
            return True
        if output is None or not isinstance(verdict, Rejected):
            return False
        if state.corrected_step == state.step:  # logged before the process died: ask again only
            state.entered.extend(() if verdict.correction is None else (verdict.correction,))
            return False
        if state.corrections >= self.output_retries:
            raise OutputInvalidError(
                f"the answer does not validate against output_type {output.name} after "
                f"{state.corrections} correction(s): {verdict.problem}",
                ErrorCode.OUTPUT_INVALID,
            )
        state.corrections += 1
        state.corrected_step = state.step
        correction = OutputCorrection(state.turn, state.step, state.corrections, verdict.problem)
        await self.log.append(self.session.session_id, correction)
        if verdict.correction is not None:
            state.entered.append(verdict.correction)
        return False
