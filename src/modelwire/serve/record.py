"""Every gateway request is one turn of a session in the log.

The turn holds `turn/start`, `gateway/request` (the endpoint, the key's name — never the key —,
the model the client named and the whole conversation it sent), the new user input as
`user/message`, `request/header` and `request/context` (route, model, window and list prices:
what the meter prices the call at), then one step: its attempts' `assistant/chunk` events, the
`llm/retry` / `llm/fallback` decisions between them, `assistant/message` (with usage; marked
`interrupted` when the client went away), `step/end` and `turn/end`. So `modelwire ui`,
`sessions usage` and `TokenMeter` read gateway traffic as they read the agent's.

A session is the client's `x-modelwire-session` (its next turn), else a new one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Literal

import msgspec

from ..events import register_event_type
from ..session.events import (
    AbortCause,
    AssistantMessage,
    EpochHeader,
    LlmFallback,
    LlmRetry,
    LlmRetryStarted,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
    TurnAborted,
    TurnCompleted,
    TurnEnd,
    TurnEndReason,
    TurnErrored,
    TurnMaxTokens,
    TurnStart,
    UserMessage,
)
from ..session.log import ChunkWriter, SessionLog
from ..vocab import (
    Error,
    FinishReason,
    GenerateOptions,
    LlmFailure,
    Message,
    ModelSource,
    ResolvedModelInfo,
    StreamChunk,
    TokenUsage,
    call_config_of,
)
from .ids import next_id

__all__ = ["GatewayRequestRecord", "SessionRecorder", "new_session_id"]


class GatewayRequestRecord(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """`gateway/request`: what the gateway was asked (see the module docstring)."""

    turn: int
    endpoint: str
    model: str
    stream: bool
    key: str | None = None
    messages: tuple[Message, ...] = ()
    inputs: int | None = None
    """How many texts an embeddings request carried (None: a model call)."""


register_event_type("gateway/request", GatewayRequestRecord)


def new_session_id() -> str:
    """A fresh session id for a request that names none."""
    return next_id("gw_")


def _new_input(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The messages after the conversation's last assistant message: this turn's input."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            return messages[i + 1 :]
    return messages


def _end_reason(reason: FinishReason | None, cancelled: bool) -> TurnEndReason:
    if cancelled or reason is None:
        return TurnAborted(AbortCause("user", "the client disconnected"))
    match reason.kind:
        case "stop" | "tool-calls":
            return TurnCompleted()
        case "max-tokens":
            return TurnMaxTokens()
        case _:
            failure = (
                reason.failure if isinstance(reason, Error) else LlmFailure("aborted", "ABORTED")
            )
            return TurnErrored(failure)


class SessionRecorder:
    """Writes one request's turn (module docstring); one instance per request."""

    def __init__(self, log: SessionLog, session_id: str) -> None:
        self.log = log
        self.session_id = session_id
        self.turn = 1
        self.attempt = 0
        self._seqs: list[int] = []
        self._writer: ChunkWriter | None = None
        self._pending: asyncio.Task[None] | None = None

    def defer(self, work: Coroutine[object, object, None]) -> None:
        """Run `work` (`begin`, `attempt_on`) in the background, after the writes deferred
        before it: the log's round trips overlap the upstream call's connect and first byte.
        Every other write waits for them first, so the log's order is the call's."""
        previous = self._pending

        async def run() -> None:
            if previous is not None:
                try:
                    await previous
                except BaseException:
                    work.close()
                    raise
            await work

        self._pending = asyncio.ensure_future(run())

    async def settled(self) -> None:
        """Wait for the deferred writes (their failure raises here)."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            await pending

    async def begin(
        self,
        endpoint: str,
        model: str,
        stream: bool,
        key: str | None,
        options: GenerateOptions,
        *,
        continued: bool,
    ) -> None:
        """Open the turn: its request facts and the new user input."""
        if continued:  # a session the client named: this request is its next turn
            latest = await self.log.latest(self.session_id, "turn/start")
            if latest is not None and isinstance(latest.data, TurnStart):
                self.turn = latest.data.turn + 1
        record = GatewayRequestRecord(
            turn=self.turn,
            endpoint=endpoint,
            model=model,
            stream=stream,
            key=key,
            messages=options.messages,
        )
        inputs = [UserMessage(m) for m in _new_input(options.messages) if m.role == "user"]
        await self.log.append_many(
            self.session_id, (TurnStart(self.turn), record, *inputs, StepStart(self.turn, 1))
        )

    async def attempt_on(self, options: GenerateOptions, info: ResolvedModelInfo | None) -> None:
        """Start the next attempt, on `options`' route and model."""
        self.attempt += 1
        self._seqs = []
        header = EpochHeader(
            config=call_config_of(options), system=options.system, tools=options.tools
        )
        window = None if info is None or info.context is None else info.context.context_window
        context = RequestContext(
            options.provider, options.model, window, None if info is None else info.pricing
        )
        reason: Literal["initial", "change"] = "initial" if self.attempt == 1 else "change"
        await self.log.append_many(self.session_id, (RequestHeader(header, reason), context))
        self._writer = self.log.chunk_writer(self.session_id, self.turn, 1, self.attempt)

    async def chunk(self, chunk: StreamChunk) -> None:
        """Log one chunk of the current attempt."""
        if self._pending is not None:
            await self.settled()
        writer = self._writer
        assert writer is not None
        seq = writer.push(chunk)
        if seq < 0:
            seq = (await writer.append(chunk)).seq
        self._seqs.append(seq)

    async def retry(self, event: LlmRetry) -> None:
        await self.settled()
        await self.log.append(self.session_id, event, barrier=True)

    async def retry_started(self, retry_id: str, retry: int) -> None:
        await self.settled()
        await self.log.append(
            self.session_id, LlmRetryStarted(retry_id=retry_id, turn=self.turn, step=1, retry=retry)
        )

    async def fallback(self, event: LlmFallback) -> None:
        await self.settled()
        await self.log.append(self.session_id, event, barrier=True)

    async def end(
        self,
        message: Message | None,
        usage: TokenUsage | None,
        reason: FinishReason | None,
        *,
        cancelled: bool,
    ) -> None:
        """Close the turn: the answer (when there is one), `step/end`, `turn/end`, durably."""
        await self.settled()
        events: list[msgspec.Struct] = []
        if message is not None and (message.content or usage is not None):
            events.append(
                AssistantMessage(
                    turn=self.turn,
                    step=1,
                    attempt=max(self.attempt, 1),
                    message=message,
                    usage=usage,
                    interrupted=True if cancelled else None,
                    source_event_seqs=tuple(self._seqs),
                )
            )
        events += [StepEnd(self.turn, 1), TurnEnd(self.turn, _end_reason(reason, cancelled))]
        await self.log.append_many(self.session_id, events)


def answer_source(options: GenerateOptions) -> ModelSource:
    """The source of the answer message of a call on `options`' route (replay state is added by
    the assembler)."""
    return ModelSource(options.provider, options.model)
