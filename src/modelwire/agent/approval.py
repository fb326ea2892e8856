"""Human approval: which calls wait for a person, the paused state read back from the log, and
the decisions.

A tool's `needs_approval` (True, or a rule of the call's `RunContext` and parsed arguments) is
evaluated before its call runs (`asks_approval`); a call that needs approval is logged as
`tool/call {needs_approval}` and not run, and the turn ends `turn/end {paused}`. Nothing of the
paused state lives in memory: `ApprovalState.fold` derives it from the events alone (the pending
calls, the decisions, the paused turn and its step), so `decide` and `resume_turn` work in any
process, days later. `decide` appends `tool/decision` with a conditional append (a writer that
appended meanwhile makes it re-read and re-check), so two deciders never both win.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import msgspec

from ..errors import ErrorCode, HarnessError
from ..session.events import (
    Event,
    ToolCallRecord,
    ToolDecision,
    ToolResultRecord,
    TurnEnd,
    TurnPaused,
    TurnStart,
)
from ..session.log import SessionLog
from ..vocab import ToolCallBlock, tool_result_message
from ..vocab.json import JsonValue
from .context import RunContext
from .signature import ArgsError
from .toolcall import ToolOutcome
from .tools import Tool

__all__ = [
    "ApprovalState",
    "PendingApproval",
    "approval_state",
    "asks_approval",
    "decide",
    "decided_outcome",
]

_DECIDE_TRIES = 8  # conditional appends a decision retries when other writers appended meanwhile


class PendingApproval(msgspec.Struct, frozen=True):
    """A tool call waiting for a person's decision: its id, tool name and raw JSON arguments,
    the turn and step that made it, and the MCP server of the tool (None: the agent's own)."""

    call_id: str
    tool: str
    arguments: str
    turn: int = 0
    step: int = 0
    server: str | None = None


def _arguments(tool: Tool, call: ToolCallBlock, context: RunContext) -> dict[str, JsonValue] | None:
    """The call's parsed arguments, or None when the tool would refuse them (`INVALID_ARGS`)."""
    if tool.free_text is not None:
        return {"input": call.arguments}
    if tool.signature is not None:
        try:
            tool.signature.bind(call.arguments, context)
        except ArgsError:
            return None
    try:
        parsed = msgspec.json.decode(call.arguments) if call.arguments.strip() else {}
    except msgspec.DecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


async def asks_approval(tool: Tool | None, call: ToolCallBlock, context: RunContext) -> bool:
    """Whether `call` must wait for a decision: its tool's `needs_approval` is True, or its
    rule says so (a rule that raises asks too). A call of no known tool, or with arguments its
    tool refuses, never waits: it is answered with that error at once, and nothing runs."""
    rule = False if tool is None else tool.needs_approval
    if rule is False or tool is None:
        return False
    args = _arguments(tool, call, context)
    if args is None:
        return False
    if rule is True:
        return True
    try:
        verdict = rule(context, args)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception:  # fail closed: a person decides what the rule could not
        return True
    return bool(verdict)


@dataclass(slots=True)
class ApprovalState:
    """What the events say about approvals: the paused turn (None: none is paused) and the step
    it paused after, that turn's `ticket`, every call logged as needing approval (`calls`), the
    ones still without a result (`pending`, call order) and the decisions, by call id."""

    paused_turn: int | None = None
    paused_step: int = 0
    ticket: str | None = None
    calls: dict[str, ToolCallRecord] = field(default_factory=dict)
    pending: dict[str, ToolCallRecord] = field(default_factory=dict)
    decisions: dict[str, ToolDecision] = field(default_factory=dict)
    next_seq: int = 0

    @classmethod
    def fold(cls, events: Iterable[Event]) -> ApprovalState:
        """Fold a session's events (in seq order) into its approval state."""
        state = cls()
        for event in events:
            data = event.data
            if isinstance(data, ToolCallRecord) and data.needs_approval:
                state.calls[data.call_id] = data
                state.pending[data.call_id] = data
            elif isinstance(data, ToolResultRecord):
                state.pending.pop(data.call_id, None)
            elif isinstance(data, ToolDecision):
                state.decisions.setdefault(data.call_id, data)
            elif isinstance(data, TurnStart):
                state.paused_turn, state.ticket = None, data.ticket
            elif isinstance(data, TurnEnd) and isinstance(data.reason, TurnPaused):
                state.paused_turn = data.turn
                state.paused_step = max(
                    (c.step for c in state.pending.values() if c.turn == data.turn), default=0
                )
            state.next_seq = event.seq + 1
        return state

    @property
    def waiting(self) -> tuple[PendingApproval, ...]:
        """The pending calls of the paused turn, in call order (empty when none is paused)."""
        if self.paused_turn is None:
            return ()
        return tuple(
            PendingApproval(
                call_id=c.call_id,
                tool=c.name,
                arguments=c.arguments,
                turn=c.turn,
                step=c.step,
                server=c.server,
            )
            for c in self.pending.values()
            if c.turn == self.paused_turn
        )

    @property
    def undecided(self) -> tuple[PendingApproval, ...]:
        """The waiting calls no decision has answered yet."""
        return tuple(p for p in self.waiting if p.call_id not in self.decisions)


async def approval_state(log: SessionLog, session_id: str) -> ApprovalState:
    """The approval state of `session_id`, read from its log (chunks skipped)."""
    if not await log.exists(session_id):
        return ApprovalState()
    return ApprovalState.fold(await log.read(session_id, chunks=False))


def _named(decision: ToolDecision) -> str:
    verb = "approved" if decision.approve else "denied"
    who = f" by {decision.by}" if decision.by else ""
    why = f" ({decision.reason})" if decision.reason else ""
    return f"{verb}{who}{why}"


def _check_text(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise HarnessError(
            f"decide: {name} must be a string or None, got {type(value).__name__}",
            ErrorCode.INVALID_ARGS,
        )
    return value


async def decide(
    log: SessionLog,
    session_id: str,
    call_id: str,
    approve: bool,
    reason: str | None = None,
    *,
    by: str | None = None,
) -> ToolDecision:
    """Log the decision on pending call `call_id` of `session_id` (see the module docstring).

    The same answer again is a no-op (the first decision is returned); the opposite answer is
    `ALREADY_DECIDED` naming the first. A call the session never logged as needing approval (an
    unknown id, another session's call) or one no longer waiting (its turn is not paused) is
    `UNKNOWN_CALL` naming what is pending. Nothing is written on a refusal.
    """
    if not isinstance(approve, bool):
        raise HarnessError(
            f"decide: approve must be True or False, got {approve!r}", ErrorCode.INVALID_ARGS
        )
    reason, by = _check_text("reason", reason), _check_text("by", by)
    for _ in range(_DECIDE_TRIES):
        state = await approval_state(log, session_id)
        first = state.decisions.get(call_id)
        if first is not None:
            if first.approve == approve:
                return first
            raise HarnessError(
                f"session {session_id!r}: tool call {call_id!r} ({first.name}) was already "
                f"{_named(first)}; a decision cannot be changed",
                ErrorCode.ALREADY_DECIDED,
            )
        record = state.pending.get(call_id)
        if record is None or record.turn != state.paused_turn:
            waiting = ", ".join(f"{p.call_id} ({p.tool})" for p in state.undecided) or "none"
            known = "is not waiting for approval" if call_id in state.calls else "is unknown"
            raise HarnessError(
                f"session {session_id!r}: tool call {call_id!r} {known} (calls waiting for a "
                f"decision: {waiting})",
                ErrorCode.UNKNOWN_CALL,
            )
        decision = ToolDecision(
            turn=record.turn,
            step=record.step,
            call_id=call_id,
            name=record.name,
            approve=approve,
            reason=reason,
            by=by,
        )
        try:
            await log.append(session_id, decision, barrier=True, expect_seq=state.next_seq)
        except HarnessError as exc:
            if exc.code != ErrorCode.STALE_WRITE:
                raise
            continue  # another writer appended: read again and check again
        return decision
    raise HarnessError(
        f"session {session_id!r}: the decision on {call_id!r} lost {_DECIDE_TRIES} races with "
        "other writers; try again",
        ErrorCode.STALE_WRITE,
    )


DENIED_TEXT = "a person denied this call of tool {name!r}; it did not run"


def decided_outcome(
    decision: ToolDecision, tools: Mapping[str, Tool] | None = None
) -> ToolOutcome | None:
    """The result of a decided call that is not run: a denial (`TOOL_DENIED`, the reason told to
    the model), or an approved call whose tool the agent no longer has (`UNKNOWN_TOOL`); None
    for an approved call that runs."""
    call_id, name = decision.call_id, decision.name
    if not decision.approve:
        text = DENIED_TEXT.format(name=name)
        if decision.reason:
            text = f"{text}. Reason: {decision.reason}"
        message = tool_result_message(call_id, text, is_error=True)
        return ToolOutcome(message, True, ErrorCode.TOOL_DENIED)
    if tools is not None and name not in tools:
        text = (
            f"tool {name!r} was approved, but the agent has no tool {name!r} any more (it was "
            "removed while the turn was paused); the call did not run"
        )
        return ToolOutcome(
            tool_result_message(call_id, text, is_error=True), True, ErrorCode.UNKNOWN_TOOL
        )
    return None
