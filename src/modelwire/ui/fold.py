"""`SessionFold`: one session's events folded, incrementally, into what the session page draws.

Feed events in log order with `apply`; `view.session_view(fold, since)` turns it into the
`SessionView` payload. Raw chunks are counted and located (first/last seq per attempt), never
kept: the page fetches them per attempt, so a session of 100,000 chunks folds into a small view.
Only the attempt still streaming is assembled (its `draft`), from the log once, then chunk by
chunk. Failed attempts, retry decisions and incomplete turn ends also become transcript notes,
and so do a pause for approvals (its waiting calls), each `tool/decision` and the reopening.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ..assembler import BlockAssembler
from ..meter import CallKey, TokenMeter
from ..session import (
    AssistantChunk,
    AssistantMessage,
    Event,
    LlmRetry,
    LlmRetryStarted,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolDecision,
    ToolResultRecord,
    TurnAborted,
    TurnEnd,
    TurnErrored,
    TurnStart,
    UserMessage,
)
from ..vocab import Aborted, Error, Finish, ModelSource, UsageChunk
from .blocks import failure_text
from .payloads import MarkerView, TranscriptItem
from .reader import Unreadable
from .timeline import (
    AttemptState,
    RetryState,
    StepState,
    ToolState,
    TurnState,
    mark_fallback,
)
from .transcript import (
    assistant_item,
    draft_item,
    note_item,
    system_item,
    tool_item,
    user_item,
)

__all__ = ["MARKER_TEXT", "SessionFold"]

MARKER_TEXT = 300
"""How much of an unknown event's JSON a timeline marker shows."""

_ENCODER = msgspec.json.Encoder()


class SessionFold:
    """The incremental session projection (see the module docstring)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.next_seq = 0
        self.caught_up = False
        self.start: int | None = None
        self.end: int | None = None
        self.turns: dict[int, TurnState] = {}
        self.transcript: list[TranscriptItem] = []
        self.headers: list[tuple[int, RequestHeader]] = []
        self.contexts: list[tuple[int, RequestContext]] = []
        self.meter = TokenMeter()
        self.messages = 0
        self._provider: str | None = None
        self._model: str | None = None
        self._system: str | None = None
        self._turn: TurnState | None = None
        self._step: StepState | None = None
        self._last: AttemptState | None = None
        self._draft: tuple[CallKey, BlockAssembler] | None = None

    # ---- the fold ----------------------------------------------------------------------------

    def apply_all(self, events: Iterable[Event]) -> None:
        """Fold several events in log order."""
        for event in events:
            self.apply(event)

    def apply(self, event: Event) -> None:
        """Fold one event (seqs must increase; a seq already folded is ignored)."""
        seq = event.seq
        if seq < self.next_seq:
            return
        self.next_seq = seq + 1
        data, at = event.data, event.time
        if at:
            if self.start is None:
                self.start = at
            self.end = at
        if isinstance(data, AssistantChunk):
            self._chunk(event, data)
        elif isinstance(data, AssistantMessage):
            self._message(event, data)
        elif isinstance(data, (ToolCallRecord, ToolResultRecord)):
            self._tool(event, data)
        elif isinstance(data, ToolDecision):
            self._decision(event, data)
        elif isinstance(data, (LlmRetry, LlmRetryStarted)):
            self._retry(event, data)
        elif isinstance(data, (TurnStart, TurnEnd)):
            self._turn_event(event, data)
        elif isinstance(data, (StepStart, StepEnd)):
            self._step_event(event, data)
        elif isinstance(data, UserMessage):
            turn = self._turn.turn if self._turn is not None else None
            self.transcript.append(user_item(event, data, turn))
            self.messages += 1
        elif isinstance(data, RequestHeader):
            self._header(event, data)
        elif isinstance(data, RequestContext):
            self.contexts.append((seq, data))
            self._provider, self._model = data.provider, data.model
            self.meter.apply(event)  # the prices of the calls that follow
        else:
            self._marker(event)

    def _turn_of(self, number: int, at: int, seq: int) -> TurnState:
        turn = self.turns.get(number)
        if turn is None:
            turn = self.turns[number] = TurnState(turn=number, start=at, updated_seq=seq)
        turn.updated_seq = seq
        return turn

    def _step_of(self, turn: TurnState, number: int, at: int) -> StepState:
        step = turn.steps.get(number)
        if step is None:
            step = turn.steps[number] = StepState(step=number, start=at, pending_start=at)
        return step

    def _attempt(self, turn: int, step: int, number: int, at: int, seq: int) -> AttemptState:
        last = self._last
        if last is not None and last.key == (turn, step, number):
            self.turns[turn].updated_seq = seq
            return last
        step_state = self._step_of(self._turn_of(turn, at, seq), step, at)
        attempt = step_state.attempts.get(number)
        if attempt is None:
            start = step_state.pending_start
            step_state.pending_start = None
            attempt = AttemptState(
                key=(turn, step, number),
                start=at if start is None else start,
                provider=self._provider,
                model=self._model,
                header=len(self.headers) - 1,
                context=len(self.contexts) - 1,
                input_messages=self.messages,
            )
            step_state.attempts[number] = attempt
            mark_fallback(step_state, attempt)
        self._last = attempt
        return attempt

    def _chunk(self, event: Event, data: AssistantChunk) -> None:
        attempt = self._attempt(data.turn, data.step, data.attempt, event.time, event.seq)
        attempt.chunks += 1
        if attempt.first_seq is None:
            attempt.first_seq = event.seq
        attempt.last_seq = event.seq
        chunk = data.chunk
        if isinstance(chunk, UsageChunk):
            self.meter.apply(event)
        elif isinstance(chunk, Finish):
            reason = chunk.reason
            attempt.end = event.time
            attempt.finish = reason.kind
            if isinstance(reason, (Error, Aborted)):
                attempt.status = "failed" if isinstance(reason, Error) else "aborted"
                attempt.failure = reason.failure
                t, s, a = attempt.key
                self.transcript.append(
                    note_item(
                        event,
                        f"attempt {t}.{s}.{a} {attempt.status}: {failure_text(reason.failure)}",
                        key=attempt.key,
                        is_error=True,
                    )
                )
            else:
                attempt.status = "ok"
            step = self.turns[data.turn].steps[data.step]
            step.pending_start = event.time
        draft = self._draft
        if draft is not None and draft[0] == attempt.key:
            draft[1].push(chunk)

    def _message(self, event: Event, data: AssistantMessage) -> None:
        attempt = self._attempt(data.turn, data.step, data.attempt, event.time, event.seq)
        if attempt.end is None:
            attempt.end = event.time
        if data.interrupted:
            attempt.status = "interrupted"
        elif attempt.status == "running":
            attempt.status = "ok"
        source = data.message.source
        if isinstance(source, ModelSource):
            attempt.provider, attempt.model = source.provider, source.model
            mark_fallback(self.turns[data.turn].steps[data.step], attempt)
        self.meter.apply(event)
        self.transcript.append(assistant_item(event, data))
        self.messages += 1
        if self._draft is not None and self._draft[0] == attempt.key:
            self._draft = None

    def _tool(self, event: Event, data: ToolCallRecord | ToolResultRecord) -> None:
        turn = self._turn_of(data.turn, event.time, event.seq)
        step = self._step_of(turn, data.step, event.time)
        if isinstance(data, ToolCallRecord):
            waits = "pending" if data.needs_approval else None
            step.tools[data.call_id] = ToolState(
                data.call_id, data.name, event.time, approval=waits, arguments=data.arguments
            )
            return
        tool = step.tools.get(data.call_id)
        if tool is not None:
            tool.end, tool.is_error, tool.error_code = event.time, data.is_error, data.error_code
        self.transcript.append(tool_item(event, data))
        self.messages += 1

    def _decision(self, event: Event, data: ToolDecision) -> None:
        step = self._step_of(self._turn_of(data.turn, event.time, event.seq), data.step, event.time)
        tool = step.tools.get(data.call_id)
        verdict = "approved" if data.approve else "denied"
        if tool is not None:
            tool.approval = verdict
        who = f" by {data.by}" if data.by else ""
        why = f": {data.reason}" if data.reason else ""
        text = f"tool call {data.call_id} ({data.name}) {verdict}{who}{why}"
        self.transcript.append(note_item(event, text, turn=data.turn))

    def _retry(self, event: Event, data: LlmRetry | LlmRetryStarted) -> None:
        turn = self._turn_of(data.turn, event.time, event.seq)
        step = self._step_of(turn, data.step, event.time)
        if isinstance(data, LlmRetry):
            step.retries.append(
                RetryState(
                    retry=data.retry,
                    mode=data.mode,
                    delay_ms=data.delay_ms,
                    max_retries=data.max_retries,
                    failure=data.failure,
                    start=event.time,
                )
            )
            step.pending_start = None
            limit = f"/{data.max_retries}" if data.max_retries is not None else ""
            self.transcript.append(
                note_item(
                    event,
                    f"retry {data.retry}{limit} of step {data.turn}.{data.step} in "
                    f"{data.delay_ms:.0f} ms ({data.mode} mode, after {data.failure.code})",
                    turn=data.turn,
                )
            )
            return
        for retry in reversed(step.retries):
            if retry.retry == data.retry and retry.end is None:
                retry.end = event.time
                break
        step.pending_start = event.time

    def _turn_event(self, event: Event, data: TurnStart | TurnEnd) -> None:
        turn = self._turn_of(data.turn, event.time, event.seq)
        if isinstance(data, TurnStart):
            self._turn = turn
            if data.resumed_after is not None:  # a paused turn reopened: running again
                turn.end, turn.outcome = None, None
                text = f"turn {data.turn} resumed: its decided calls are answered"
                self.transcript.append(note_item(event, text, turn=data.turn))
            return
        turn.end = event.time
        reason = data.reason
        turn.outcome = reason.kind
        if reason.kind == "paused":
            waiting = [
                f"{t.name} {t.arguments} [{t.call_id}]"
                for s in turn.steps.values()
                for t in s.tools.values()
                if t.approval == "pending"
            ]
            turn.detail = "waiting for a decision on " + ", ".join(waiting)
            text = f"turn {data.turn} paused: {turn.detail}"
            self.transcript.append(note_item(event, text, turn=data.turn))
            return
        if isinstance(reason, TurnErrored):
            turn.failure = reason.failure
        elif isinstance(reason, TurnAborted):
            cause = reason.reason
            turn.detail = f"by {cause.kind}" + (f": {cause.reason}" if cause.reason else "")
        for step in turn.steps.values():
            step.close_open(event.time)
        if reason.kind != "completed":
            why = failure_text(turn.failure) if turn.failure is not None else turn.detail
            self.transcript.append(
                note_item(
                    event,
                    f"turn {data.turn} ended: {reason.kind}" + (f" — {why}" if why else ""),
                    turn=data.turn,
                    is_error=True,
                )
            )

    def _step_event(self, event: Event, data: StepStart | StepEnd) -> None:
        turn = self._turn_of(data.turn, event.time, event.seq)
        step = self._step_of(turn, data.step, event.time)
        if isinstance(data, StepStart):
            self._step = step
            return
        step.end = event.time
        step.close_open(event.time)

    def _header(self, event: Event, data: RequestHeader) -> None:
        self.headers.append((event.seq, data))
        config = data.header.config
        self._provider, self._model = config.provider, config.model
        system = data.header.system
        if system and system != self._system:
            self.transcript.append(system_item(event, system))
        self._system = system

    def _marker(self, event: Event) -> None:
        data = event.data
        text = data.problem if isinstance(data, Unreadable) else _ENCODER.encode(data).decode()
        marker = MarkerView(
            seq=event.seq, time=event.time, type=event.type, text=text[:MARKER_TEXT]
        )
        step = self._step
        if step is not None and self._turn is not None:
            step.markers.append(marker)
            self._turn.updated_seq = event.seq

    # ---- the draft of a streaming attempt -----------------------------------------------------

    def open_attempt(self) -> AttemptState | None:
        """The attempt still streaming, when its draft is not assembled yet (needs its chunks)."""
        last = self._last
        if last is None or last.status != "running" or last.first_seq is None:
            return None
        if self._draft is not None and self._draft[0] == last.key:
            return None
        return last

    def prime_draft(self, attempt: AttemptState, events: Iterable[Event]) -> None:
        """Assemble the draft of `attempt` from its chunks read so far (`open_attempt`)."""
        assembler = BlockAssembler()
        for event in events:
            data = event.data
            if isinstance(data, AssistantChunk) and (data.turn, data.step, data.attempt) == (
                attempt.key
            ):
                assembler.push(data.chunk)
        self._draft = (attempt.key, assembler)

    def draft(self) -> TranscriptItem | None:
        """The streaming attempt's output so far (None when no attempt streams)."""
        draft, last = self._draft, self._last
        if draft is None or last is None or last.key != draft[0] or last.status != "running":
            return None
        return draft_item(draft[0], draft[1].blocks(), last.last_seq or 0, self.end or 0)

    # ---- views -------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while the latest turn has no `turn/end`."""
        return self._turn is not None and self._turn.end is None

    @property
    def route(self) -> str | None:
        """`provider/model` of the latest request header or context."""
        return f"{self._provider}/{self._model}" if self._provider else None
