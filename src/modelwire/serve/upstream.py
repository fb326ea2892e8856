"""One gateway request's upstream call: attempts, retries and fallbacks until it commits.

The call goes to the first target of its chain (the model the client named, then
`[gateway.fallbacks]`). An attempt *commits* with its first chunk the client could see (a token,
a finished block, usage or a finish other than an error); until then nothing was sent, so a
failed attempt is retried on its route per the route's retry policy (`llm/retry`, backoff from
`modelwire.policy`) and, once the policy gives up, falls back to the next target when the failure
code is one of the fallback codes (`llm/fallback`, as `FallbackPlugin`). Every decision is in the
log before the next attempt starts. The last failure reaches the client as its error reply.

After the commit the chunks are streamed to the client as they come (`chunks()`), each logged;
`close()` ends the turn: the upstream call is cancelled when still running (a client that went
away), the answer and its usage are logged and the key's reservation is settled.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from decimal import Decimal
from typing import Final

from ..assembler import BlockAssembler
from ..codes import DEFAULT_RETRYABLE_CODES
from ..errors import LlmError
from ..policy import AlwaysRetryPolicy, NormalRetryPolicy, RetryPolicy, backoff_delay_ms, policy_key
from ..retry.fallback_chain import FallbackTarget
from ..runtime import LlmRuntime
from ..session.events import LlmFallback, LlmRetry
from ..vocab import (
    BlockStart,
    Error,
    Finish,
    GenerateOptions,
    LlmFailure,
    ModelSource,
    ResolvedModelInfo,
    StreamChunk,
    TokenUsage,
)
from .problems import GatewayError, failure_error
from .record import SessionRecorder
from .request import GatewayRequest

__all__ = ["FALLBACK_CODES", "Attempted", "UpstreamCall"]

FALLBACK_CODES: Final = frozenset(DEFAULT_RETRYABLE_CODES) | {"CONTEXT_WINDOW_EXCEEDED", "QUOTA"}
"""Failures that move a request to its next target (after the route's retries, for the
retryable ones): the route is down or cannot take it; a bad request would fail anywhere."""

Sleep = Callable[[float], Awaitable[None]]


class Attempted:
    """The outcome of the call so far: the committed attempt's target, info and options."""

    def __init__(
        self, target: FallbackTarget, options: GenerateOptions, info: ResolvedModelInfo | None
    ) -> None:
        self.target, self.options, self.info = target, options, info


class UpstreamCall:
    """Runs one request against its chain (module docstring)."""

    def __init__(
        self,
        runtime: LlmRuntime,
        recorder: SessionRecorder,
        request: GatewayRequest,
        targets: Sequence[FallbackTarget],
        infos: Callable[[FallbackTarget], Awaitable[ResolvedModelInfo | None]],
        *,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._runtime = runtime
        self._recorder = recorder
        self._request = request
        self._targets = tuple(targets)
        self._infos = infos
        self._sleep = sleep
        self._stream: AsyncIterator[StreamChunk] | None = None
        self._buffered: list[StreamChunk] = []
        self.assembler = BlockAssembler()
        self.attempted: Attempted | None = None
        self.failure: LlmFailure | None = None
        self.finished = False

    async def _try(self, target: FallbackTarget) -> LlmFailure | None:
        info = await self._infos(target)
        options = self._request.for_target(target.route, target.model, self._recorder.session_id)
        self._recorder.defer(self._recorder.attempt_on(options, info))
        self.attempted = Attempted(target, options, info)
        stream = self._runtime.stream(options).__aiter__()
        buffered: list[StreamChunk] = []
        try:
            while True:
                chunk = await stream.__anext__()
                await self._recorder.chunk(chunk)
                if isinstance(chunk, Finish) and isinstance(chunk.reason, Error):
                    await _close(stream)
                    return chunk.reason.failure
                buffered.append(chunk)
                if not isinstance(chunk, BlockStart):
                    break
        except StopAsyncIteration:
            await self._recorder.settled()
            return LlmFailure("the stream ended without a finish", "MALFORMED_RESPONSE")
        except BaseException:
            await _close(stream)
            raise
        self._stream, self._buffered = stream, buffered
        return None

    async def open(self) -> None:
        """Run attempts until one commits; the last failure raises as the client's error."""
        position, retries = 0, 0
        while True:
            target = self._targets[position]
            failure = await self._try(target)
            if failure is None:
                return
            self.failure = failure
            policy = _policy(self._runtime, target.route)
            if policy is not None and _retryable(policy, failure, retries):
                retries += 1
                delay = _delay_ms(policy, failure, retries)
                retry_id = uuid.uuid4().hex
                await self._recorder.retry(
                    LlmRetry(
                        retry_id=retry_id,
                        turn=self._recorder.turn,
                        step=1,
                        provider=target.route,
                        policy_key=policy_key(policy),
                        mode=policy.mode,
                        failure=failure,
                        retry=retries,
                        max_retries=policy.max_retries
                        if isinstance(policy, NormalRetryPolicy)
                        else None,
                        delay_ms=delay,
                    )
                )
                await self._sleep(delay / 1000)
                await self._recorder.retry_started(retry_id, retries)
                continue
            if position + 1 < len(self._targets) and failure.code in FALLBACK_CODES:
                position, retries = position + 1, 0
                to = self._targets[position]
                await self._recorder.fallback(
                    LlmFallback(
                        turn=self._recorder.turn,
                        step=1,
                        attempt=self._recorder.attempt,
                        from_route=target.route,
                        from_model=target.model,
                        to_route=to.route,
                        to_model=to.model,
                        failure=failure,
                        position=position,
                    )
                )
                continue
            raise failure_error(failure, str(target))

    async def chunks(self) -> AsyncIterator[StreamChunk]:
        """The committed attempt's chunks, each logged and assembled."""
        stream = self._stream
        assert stream is not None, "open() committed no attempt"
        for chunk in self._buffered:
            self.assembler.push(chunk)
            yield chunk
        self._buffered = []
        async for chunk in stream:
            await self._recorder.chunk(chunk)
            self.assembler.push(chunk)
            yield chunk
        self.finished = True

    async def close(self, *, cancelled: bool) -> TokenUsage | None:
        """End the turn in the log (module docstring); returns the measured usage."""
        if self._stream is not None:
            await _close(self._stream)
        asm = self.assembler
        attempted = self.attempted
        committed = self._stream is not None
        usage = asm.usage if committed else None
        message = None
        if committed and attempted is not None:
            blocks = asm.interrupted_blocks() if cancelled or not self.finished else asm.blocks()
            source = ModelSource(attempted.target.route, attempted.target.model, asm.replay_state)
            message = asm.message(source)
            if blocks != list(message.content):
                import msgspec

                message = msgspec.structs.replace(message, content=tuple(blocks))
        reason = asm.finish if committed and self.finished else None
        if not committed and self.failure is not None:
            reason = Error(self.failure)
        await self._recorder.end(message, usage, reason, cancelled=cancelled and reason is None)
        return usage

    def cost(self, usage: TokenUsage | None) -> Decimal | None:
        """What the committed attempt cost at its route's list prices (None: unknown)."""
        attempted = self.attempted
        if attempted is None or attempted.info is None or attempted.info.pricing is None:
            return None
        return Decimal(0) if usage is None else attempted.info.pricing.cost(usage)


async def _close(stream: AsyncIterator[StreamChunk]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


def _policy(runtime: LlmRuntime, route: str) -> RetryPolicy | None:
    try:
        return runtime.provider_retry_policy(route)
    except LlmError:
        return None


def _retryable(policy: RetryPolicy, failure: LlmFailure, retries: int) -> bool:
    if isinstance(policy, AlwaysRetryPolicy):
        return True
    return failure.code in policy.retryable_codes and retries < policy.max_retries


def _delay_ms(policy: RetryPolicy, failure: LlmFailure, retry: int) -> float:
    provider = failure.provider_retry_after_ms
    if provider is not None and provider > 0:
        return min(float(provider), 60_000.0)
    return backoff_delay_ms(policy, retry)


def gateway_failure(error: LlmError, where: str) -> GatewayError:
    """The client-facing error of a lookup that raised (an unknown model, a bad route)."""
    return failure_error(error.failure, where)
