"""The typed session events, the event-type registry and the payload codec.

Every event's `data` is a frozen msgspec struct registered under its type name (`turn/start`,
`assistant/chunk`, ...); plugins add types with `register_event_type`. Payloads are compact JSON
(snake_case keys) validated against the registered struct both ways (`INVALID_EVENT`).
"""

from __future__ import annotations

from typing import ClassVar, Literal, TypeAlias

import msgspec

from .errors import ErrorCode, HarnessError
from .events_approval import ToolDecision
from .events_batch import BatchCreated, BatchCreateStarted, BatchEnded, BatchPlanned, BatchUploaded
from .events_fallback import LlmFallback
from .events_ratelimit import LlmRateLimitWait
from .events_retry import LlmRetry, LlmRetryStarted
from .vocab import CallConfig, LlmFailure, Message, StreamChunk, TokenUsage, ToolSchema
from .vocab.options import AdapterDefaults
from .vocab.pricing import ModelPricing

__all__ = [
    "AbortCause",
    "AssistantChunk",
    "AssistantMessage",
    "EpochHeader",
    "Event",
    "LlmRetry",
    "LlmRetryStarted",
    "OutputCorrection",
    "RequestContext",
    "RequestHeader",
    "StepEnd",
    "StepStart",
    "ToolCallRecord",
    "ToolDecision",
    "ToolResultRecord",
    "TurnAborted",
    "TurnBlocked",
    "TurnCompleted",
    "TurnEnd",
    "TurnEndReason",
    "TurnErrored",
    "TurnInterrupted",
    "TurnLimit",
    "TurnMaxTokens",
    "TurnPaused",
    "TurnStart",
    "UserMessage",
    "decode_event_data",
    "encode_event_data",
    "event_type_of",
    "event_types",
    "register_event_type",
]


class Event(msgspec.Struct, frozen=True, gc=False):  # no cycles: see session/chunkrun.py
    """One durable log entry: contiguous `seq` from 0 per session, `type`, epoch-ms `time`, typed `data`."""

    seq: int
    type: str
    time: int
    data: msgspec.Struct


# ---- turn and step boundaries ----------------------------------------------------------------


class TurnStart(msgspec.Struct, frozen=True, omit_defaults=True):
    """`turn/start`: a new turn, numbered from 1 per session; `ticket`: the turn queue's ticket
    it runs (omitted for a turn not run from a queue); `resumed_after`: the paused turn `turn`
    reopened by `resume_turn`, after its step `resumed_after` (omitted for a new turn)."""

    turn: int
    ticket: str | None = None
    resumed_after: int | None = None


class AbortCause(msgspec.Struct, frozen=True, omit_defaults=True):
    """Who aborted a turn (`user`, `parent`, `hook`, `disposed`, `legacy`) and an optional reason."""

    kind: Literal["user", "parent", "hook", "disposed", "legacy"]
    reason: str | None = None


class TurnCompleted(msgspec.Struct, frozen=True, tag="completed", tag_field="kind"):
    """The turn ran until no tool calls remained."""

    kind: ClassVar[Literal["completed"]] = "completed"


class TurnErrored(msgspec.Struct, frozen=True, tag="error", tag_field="kind"):
    """The turn failed with `failure`."""

    failure: LlmFailure
    kind: ClassVar[Literal["error"]] = "error"


class TurnAborted(msgspec.Struct, frozen=True, tag="aborted", tag_field="kind"):
    """The turn was cancelled; `reason` says by whom."""

    reason: AbortCause
    kind: ClassVar[Literal["aborted"]] = "aborted"


class TurnMaxTokens(msgspec.Struct, frozen=True, tag="max-tokens", tag_field="kind"):
    """A step hit the output-token limit; its tool calls were not dispatched."""

    kind: ClassVar[Literal["max-tokens"]] = "max-tokens"


class TurnBlocked(msgspec.Struct, frozen=True, tag="blocked", tag_field="kind"):
    """A pre-step hook refused to run the step."""

    kind: ClassVar[Literal["blocked"]] = "blocked"


class TurnInterrupted(msgspec.Struct, frozen=True, tag="interrupted", tag_field="kind"):
    """Written by persistence repair for a turn whose process died before `turn/end`."""

    kind: ClassVar[Literal["interrupted"]] = "interrupted"


class TurnLimit(msgspec.Struct, frozen=True, tag="limit", tag_field="kind"):
    """An agent limit ended the turn: `limit` stood at `used` (past `max`) when a step was due."""

    limit: Literal["max_steps", "input_tokens", "output_tokens", "total_tokens"]
    max: int
    used: int
    kind: ClassVar[Literal["limit"]] = "limit"


class TurnPaused(msgspec.Struct, frozen=True, tag="paused", tag_field="kind"):
    """Tool calls wait for a person's decision (`tool/call` with `needs_approval`)."""

    kind: ClassVar[Literal["paused"]] = "paused"


TurnEndReason: TypeAlias = (
    TurnCompleted
    | TurnErrored
    | TurnAborted
    | TurnMaxTokens
    | TurnBlocked
    | TurnInterrupted
    | TurnLimit
    | TurnPaused
)
"""Why a turn ended, discriminated by `kind`."""


class TurnEnd(msgspec.Struct, frozen=True):
    """`turn/end`: the turn number and why it ended."""

    turn: int
    reason: TurnEndReason


class StepStart(msgspec.Struct, frozen=True):
    """`step/start`: one model request (with its retries) inside a turn; steps restart at 1."""

    turn: int
    step: int


class StepEnd(msgspec.Struct, frozen=True):
    """`step/end`: always written, also on failure or cancellation."""

    turn: int
    step: int


# ---- surface and request facts ---------------------------------------------------------------


class UserMessage(msgspec.Struct, frozen=True):
    """`user/message`: a user-role message entered into the conversation."""

    message: Message


class EpochHeader(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """The request header: call config, adapter-supplied default markers, system prompt, tools."""

    config: CallConfig
    adapter_defaults: AdapterDefaults | None = None
    system: str | None = None
    tools: tuple[ToolSchema, ...] | None = None


class RequestHeader(msgspec.Struct, frozen=True):
    """`request/header`: logged on a loop's first request and whenever the header changes."""

    header: EpochHeader
    reason: Literal["initial", "resume", "change"]


class RequestContext(msgspec.Struct, frozen=True, omit_defaults=True):
    """`request/context`: route capacity and list prices (`pricing`, None: unknown), logged when
    provider, model, window or prices change, so cost is derivable from the log alone."""

    provider: str
    model: str
    context_window: int | None = None
    pricing: ModelPricing | None = None


# ---- model output ----------------------------------------------------------------------------


class AssistantChunk(msgspec.Struct, frozen=True, gc=False):  # as the chunk: never a cycle
    """`assistant/chunk`: one raw stream chunk of attempt `attempt` (from 1) of a step."""

    turn: int
    step: int
    attempt: int
    chunk: StreamChunk


class AssistantMessage(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """`assistant/message`: one per successful (or interrupted) attempt, citing its own chunk seqs."""

    turn: int
    step: int
    attempt: int
    message: Message
    usage: TokenUsage | None = None
    interrupted: bool | None = None
    source_event_seqs: tuple[int, ...]


class ToolCallRecord(msgspec.Struct, frozen=True, omit_defaults=True):
    """`tool/call`: the loop is about to run tool `name` for call `call_id` with raw JSON arguments;
    `server` names the MCP server of the tool (omitted for the agent's own tools);
    `needs_approval`: the call waits for a `tool/decision` (the turn pauses) instead."""

    turn: int
    step: int
    call_id: str
    name: str
    arguments: str
    server: str | None = None
    needs_approval: bool = False


class ToolResultRecord(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """`tool/result`: the tool-result message (model input of the next step); errors carry a code."""

    turn: int
    step: int
    call_id: str
    name: str
    message: Message
    is_error: bool = False
    error_code: str | None = None
    error_class: str | None = None  # the class name of the exception a tool raised
    server: str | None = None  # the MCP server of the tool (omitted for the agent's own tools)


class OutputCorrection(msgspec.Struct, frozen=True):
    """`output/correction`: the answer of step `step` did not validate against the turn's output
    type; `problem` is what the model is told (correction `correction`, from 1)."""

    turn: int
    step: int
    correction: int
    problem: str


# ---- registry and codec ----------------------------------------------------------------------

_TYPES: dict[str, type[msgspec.Struct]] = {}
_NAMES: dict[type[msgspec.Struct], str] = {}
_DECODERS: dict[str, msgspec.json.Decoder[msgspec.Struct]] = {}
_ENCODER = msgspec.json.Encoder()


def register_event_type(name: str, struct_type: type[msgspec.Struct]) -> None:
    """Register `struct_type` (a frozen msgspec struct) as the payload of event type `name`.

    Re-registering the same pair is a no-op; a name or struct already bound differently raises
    `HarnessError` `INVALID_EVENT`.
    """
    if not isinstance(name, str) or not name or name.strip() != name:
        raise HarnessError(
            f"event type name must be a non-empty string without surrounding spaces: {name!r}",
            ErrorCode.INVALID_EVENT,
        )
    if not (isinstance(struct_type, type) and issubclass(struct_type, msgspec.Struct)):
        raise HarnessError(
            f"event type {name!r}: payload must be a msgspec.Struct class", ErrorCode.INVALID_EVENT
        )
    if not struct_type.__struct_config__.frozen:
        raise HarnessError(
            f"event type {name!r}: payload struct {struct_type.__name__} must be frozen",
            ErrorCode.INVALID_EVENT,
        )
    bound = _TYPES.get(name)
    if bound is struct_type:
        return
    if bound is not None:
        raise HarnessError(
            f"event type {name!r} is already registered with {bound.__name__}",
            ErrorCode.INVALID_EVENT,
        )
    if struct_type in _NAMES:
        raise HarnessError(
            f"{struct_type.__name__} is already registered as event type {_NAMES[struct_type]!r}",
            ErrorCode.INVALID_EVENT,
        )
    _TYPES[name] = struct_type
    _NAMES[struct_type] = name
    _DECODERS[name] = msgspec.json.Decoder(struct_type)


def event_types() -> dict[str, type[msgspec.Struct]]:
    """A snapshot of the registry: event type name → payload struct."""
    return dict(_TYPES)


def event_type_of(data: object, *, session_id: str | None = None) -> str:
    """The registered event type name of payload `data`, or `INVALID_EVENT` if it has none."""
    name = _NAMES.get(type(data))  # type: ignore[arg-type]
    if name is None:
        where = f" in session {session_id!r}" if session_id is not None else ""
        raise HarnessError(
            f"cannot append event{where}: {type(data).__name__} is not a registered event payload",
            ErrorCode.INVALID_EVENT,
        )
    return name


def _invalid(session_id: str, where: str, name: str, exc: Exception) -> HarnessError:
    return HarnessError(
        f"invalid event in session {session_id!r} ({where}, type {name!r}): {exc}",
        ErrorCode.INVALID_EVENT,
        cause=exc,
    )


def encode_event_data(
    session_id: str, data: msgspec.Struct, *, where: str = "append"
) -> tuple[str, bytes]:
    """Encode `data` once and validate it against its registered type; returns `(type, json)`.

    The bytes are decoded back with the type's decoder, so a field holding the wrong type (e.g.
    `turn="1"`) is refused here with `INVALID_EVENT` naming the session, the type and the field.
    """
    name = event_type_of(data, session_id=session_id)
    try:
        raw = _ENCODER.encode(data)
        _DECODERS[name].decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError, TypeError, ValueError) as exc:
        raise _invalid(session_id, where, name, exc) from exc
    return name, raw


def decode_event_data(session_id: str, seq: int, name: str, raw: bytes) -> msgspec.Struct:
    """Decode a stored payload of event type `name`; unknown type or mismatch → `INVALID_EVENT`."""
    decoder = _DECODERS.get(name)
    if decoder is None:
        raise HarnessError(
            f"invalid event in session {session_id!r} (seq {seq}): unknown event type {name!r}",
            ErrorCode.INVALID_EVENT,
        )
    try:
        return decoder.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise _invalid(session_id, f"seq {seq}", name, exc) from exc


for _name, _struct in (
    ("turn/start", TurnStart),
    ("turn/end", TurnEnd),
    ("step/start", StepStart),
    ("step/end", StepEnd),
    ("user/message", UserMessage),
    ("request/header", RequestHeader),
    ("request/context", RequestContext),
    ("assistant/chunk", AssistantChunk),
    ("assistant/message", AssistantMessage),
    ("tool/call", ToolCallRecord),
    ("tool/result", ToolResultRecord),
    ("tool/decision", ToolDecision),
    ("llm/retry", LlmRetry),
    ("llm/retry-started", LlmRetryStarted),
    ("llm/fallback", LlmFallback),
    ("llm/rate-limit-wait", LlmRateLimitWait),
    ("output/correction", OutputCorrection),
    ("batch/planned", BatchPlanned),
    ("batch/uploaded", BatchUploaded),
    ("batch/create-started", BatchCreateStarted),
    ("batch/created", BatchCreated),
    ("batch/ended", BatchEnded),
):
    register_event_type(_name, _struct)
