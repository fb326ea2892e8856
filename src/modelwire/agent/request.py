"""Request building as a pure function of the log: message derivation, headers, the seed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from ..session.events import (
    AssistantMessage,
    EpochHeader,
    Event,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnPaused,
    TurnStart,
    UserMessage,
)
from ..session.log import SessionLog
from ..vocab import AdapterDefaults, CallConfig, Message, ToolCallBlock, ToolSchema, ToolSource

__all__ = [
    "LogView",
    "RequestSeed",
    "canonical_header",
    "derive_messages",
    "headers_equal",
    "place_result",
]

_HEADER_ENCODER = msgspec.json.Encoder()
_HEADER_DECODER = msgspec.json.Decoder(EpochHeader)


def _call_order(message: Message) -> dict[str, int]:
    return {b.id: i for i, b in enumerate(message.content) if isinstance(b, ToolCallBlock)}


def place_result(messages: list[Message], message: Message, order: Mapping[str, int]) -> None:
    """Append tool-result `message`, placed among the results right before it by the call order
    of their assistant message (`order`: call id → index), so the model reads results in call
    order even when a decided call's result was logged after later calls' (O(1) when in order)."""
    index = order.get(message.source.call_id) if isinstance(message.source, ToolSource) else None
    at = len(messages)
    if index is not None:
        while at > 0:
            source = messages[at - 1].source
            if not isinstance(source, ToolSource) or order.get(source.call_id, -1) < index:
                break
            at -= 1
    messages.insert(at, message)


def derive_messages(events: Iterable[Event]) -> tuple[Message, ...]:
    """The model-visible conversation: user messages, non-empty assistant messages, tool results
    (in the call order of their assistant message, `place_result`).

    Chunks, retry records, request facts and boundaries contribute nothing, so every attempt of a
    Step derives exactly what the previous one did plus anything legitimately appended meanwhile.
    """
    out: list[Message] = []
    order: dict[str, int] = {}
    for event in events:
        data = event.data
        if isinstance(data, UserMessage):
            out.append(data.message)
        elif isinstance(data, AssistantMessage):
            if data.message.content:
                out.append(data.message)
                order = _call_order(data.message)
        elif isinstance(data, ToolResultRecord):
            place_result(out, data.message, order)
    return tuple(out)


def canonical_header(
    config: CallConfig,
    adapter_defaults: AdapterDefaults | None,
    system: str | None,
    tools: Sequence[ToolSchema],
) -> EpochHeader:
    """The canonical header: empty system/tools dropped; defaults kept only if a flag is set.

    The result is normalised through its JSON form, so it equals what the log reads back.
    """
    keep = adapter_defaults is not None and (
        adapter_defaults.reasoning_effort or adapter_defaults.max_tokens
    )
    header = EpochHeader(
        config=config,
        adapter_defaults=adapter_defaults if keep else None,
        system=system or None,
        tools=tuple(tools) or None,
    )
    return _HEADER_DECODER.decode(_HEADER_ENCODER.encode(header))


def headers_equal(a: EpochHeader, b: EpochHeader) -> bool:
    """Header equality by canonical JSON text (call config, default flags, system, tools in order)."""
    return _HEADER_ENCODER.encode(a) == _HEADER_ENCODER.encode(b)


class LogView:
    """Facts the loop derives from one session's events, folded incrementally.

    `refresh` reads only the events appended since the last refresh (the log is append-only with
    contiguous seqs), so each attempt costs O(new events) while staying a function of the log.
    """

    __slots__ = (
        "last_time",
        "last_turn",
        "latest_context",
        "latest_header",
        "messages",
        "next_seq",
        "open_step",
        "open_turn",
        "order",
        "paused",
        "unanswered",
        "waiting",
    )

    def __init__(self) -> None:
        self.next_seq = 0
        self.last_time = 0  # epoch-ms time of the newest event folded in
        self.last_turn = 0
        self.latest_header: EpochHeader | None = None
        self.latest_context: tuple[str, str, int | None] | None = None
        self.messages: list[Message] = []
        self.open_turn: int | None = None
        self.open_step: tuple[int, int] | None = None
        self.paused: int | None = None  # the last turn, when it ended paused (`approval.py`)
        self.order: dict[str, int] = {}  # call order of the latest assistant message's calls
        self.waiting: set[str] = set()  # calls logged `needs_approval`, still without a result
        self.unanswered: dict[str, tuple[int, int, str]] = {}
        """Tool calls of committed assistant messages without a `tool/result`: id → (turn, step,
        name). Non-empty only after a turn was cut off between a commit and its tool results."""

    async def refresh(self, log: SessionLog, session_id: str) -> LogView:
        """Fold in the events appended since the last refresh (none for an unknown session)."""
        if self.next_seq == 0 and not await log.exists(session_id):
            return self
        self.feed(await log.read(session_id, self.next_seq))
        return self

    def feed(self, events: Iterable[Event]) -> None:
        """Fold events (in seq order, starting at `next_seq`) into the view."""
        messages = self.messages
        for event in events:
            data = event.data
            if isinstance(data, UserMessage):
                messages.append(data.message)
            elif isinstance(data, AssistantMessage):
                if data.message.content:
                    messages.append(data.message)
                    self.order = _call_order(data.message)
                    for block in data.message.content:
                        if isinstance(block, ToolCallBlock):
                            self.unanswered[block.id] = (data.turn, data.step, block.name)
            elif isinstance(data, ToolResultRecord):
                place_result(messages, data.message, self.order)
                self.unanswered.pop(data.call_id, None)
                self.waiting.discard(data.call_id)
            elif isinstance(data, ToolCallRecord):
                if data.needs_approval:
                    self.waiting.add(data.call_id)
            elif isinstance(data, TurnStart):
                self.last_turn = data.turn
                self.open_turn, self.open_step, self.paused = data.turn, None, None
            elif isinstance(data, TurnEnd):
                self.open_turn = None
                self.paused = data.turn if isinstance(data.reason, TurnPaused) else None
            elif isinstance(data, StepStart):
                self.open_step = (data.turn, data.step)
            elif isinstance(data, StepEnd):
                self.open_step = None
            elif isinstance(data, RequestHeader):
                self.latest_header = data.header
            elif isinstance(data, RequestContext):
                self.latest_context = (data.provider, data.model, data.context_window)
            self.next_seq = event.seq + 1
            self.last_time = event.time


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestSeed:
    """The agent's own contribution to every request of a turn, frozen when the turn starts.

    `provider`, `model`, `max_tokens`, `reasoning_effort` and `temperature` seed the call config
    (`config`, spec F8); `system` goes with every request of the turn, retries included (F4), and
    so do the tools, which the Step reads from its `ToolBox` for each request (an MCP server's
    list may change meanwhile), and each model call's `timeout_ms` (None: the route's, 0: none).
    """

    provider: str
    model: str
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    temperature: float | None = None
    system: str | None = None
    timeout_ms: int | None = None

    def config(self, latest: EpochHeader | None, *, first_request: bool) -> CallConfig:
        """The seed call config of a request, given the latest logged header (spec F8).

        First request of this agent instance: the agent's options, restoring the persisted
        effort only for the same provider and model when it was not adapter-defaulted (and none
        was given). Later requests: the latest header's config minus the adapter-defaulted fields
        and the answer's shape (`output`, `tool_choice`: the step decides them per turn).
        """
        if first_request or latest is None:
            effort = self.reasoning_effort
            if (
                effort is None
                and latest is not None
                and latest.config.provider == self.provider
                and latest.config.model == self.model
                and not (latest.adapter_defaults and latest.adapter_defaults.reasoning_effort)
            ):
                effort = latest.config.reasoning_effort
            return CallConfig(
                provider=self.provider,
                model=self.model,
                max_tokens=self.max_tokens,
                reasoning_effort=effort,
                temperature=self.temperature,
            )
        config = latest.config
        if config.output is not None or config.tool_choice is not None:
            # the answer's shape is the turn's own: decided again for every request
            config = msgspec.structs.replace(config, output=None, tool_choice=None)
        flags = latest.adapter_defaults
        if flags is not None and (flags.reasoning_effort or flags.max_tokens):
            config = msgspec.structs.replace(
                config,
                reasoning_effort=None if flags.reasoning_effort else config.reasoning_effort,
                max_tokens=None if flags.max_tokens else config.max_tokens,
            )
        return config
