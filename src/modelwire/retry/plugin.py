"""`RetryPlugin`: the request-retry executor on the agent's `on_request_error` waterfall.

It decides from the retry policy of the registration that served the failed attempt
(`RequestErrorContext.retry_policy`, captured by the prepared call; None → it hands on):

- normal mode retries the policy's `retryable_codes`, at most `max_retries` times per chain;
- always mode retries every failure without a limit, *downstream first*: it awaits the later
  listeners and only schedules its own retry when none of them returned `Retry()`.

An attempt whose next attempt an `llm/fallback` already decided (offered again on resume) is
handed on. The retry number is derived from the durable log (`counting.py`), never from memory.
Before the cancellable wait (`modelwire.agent.wait`), `llm/retry` is appended and flushed; after
it, `llm/retry-started` is appended right before `Retry()` is returned. What it hands on returns the
later listeners' answer (`call_next()`); a turn cancelled or a plugin disposed — before, during or
after the wait — returns `GiveUp()`, so no later listener is entered.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random as _random
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import ClassVar, Final, TypeAlias

from ..agent.hooks import AgentLike, GiveUp, NextDecision, RequestErrorContext, Retry
from ..agent.wait import Sleep, wait_cancellably
from ..errors import ErrorCode, HarnessError
from ..never import assert_never
from ..policy import (
    AlwaysRetryPolicy,
    NormalRetryPolicy,
    RetryPolicy,
    backoff_delay_ms,
    policy_key,
)
from ..session.events import LlmRetry, LlmRetryStarted
from .counting import ChainKey, fallback_decided, read_retry_chain

__all__ = ["PLUGIN_NAME", "RetryPlugin", "provider_delay_ms"]

PLUGIN_NAME: Final = "llm-retry"
"""The plugin's name, used as the prefix of its configuration errors."""

_LOGGER: Final = logging.getLogger("modelwire.retry")

Decision: TypeAlias = Retry | GiveUp | None
"""A listener's answer: retry, give up (stop the chain), or None (the later listeners decide)."""


def provider_delay_ms(failure_delay: object) -> float | None:
    """A provider Retry-After worth trusting: a finite number > 0 (ms), else None (ignored)."""
    if isinstance(failure_delay, bool) or not isinstance(failure_delay, (int, float)):
        return None
    if not math.isfinite(failure_delay) or failure_delay <= 0:
        return None
    return float(failure_delay)


def _config_error(key: str) -> HarnessError:
    if key == "retry_policy":
        return HarnessError(
            f"{PLUGIN_NAME}: retry_policy belongs under each provider configuration "
            "(e.g. DeepSeekAdapter(retry_policy=...)), not under the retry plugin",
            ErrorCode.INVALID_CONFIG,
        )
    return HarnessError(f'{PLUGIN_NAME}: unknown key "{key}"', ErrorCode.INVALID_CONFIG)


class RetryPlugin:
    """Retries failed model attempts inside the same Step, per the serving route's policy.

    `random` is the jitter source (uniform in [0, 1), default `random.random`); `sleep` waits a
    number of seconds (default `asyncio.sleep`). The plugin takes no other configuration: retry
    policies belong to each provider configuration, and any other key is refused with
    `INVALID_CONFIG`. Install with `Agent(plugins=[RetryPlugin()])` or `agent.use(...)`.
    """

    name: ClassVar[str] = PLUGIN_NAME

    def __init__(
        self,
        *,
        random: Callable[[], float] | None = None,
        sleep: Sleep | None = None,
        **config: object,
    ) -> None:
        for key in config:
            raise _config_error(key)
        self._random: Callable[[], float] = random or _random.random
        self._sleep: Sleep = sleep or asyncio.sleep
        self._installations: list[_Installation] = []

    @classmethod
    def from_config(cls, config: Mapping[str, object] | None) -> RetryPlugin:
        """Build from a configuration-file section; the plugin accepts no keys at all."""
        for key in config or {}:
            raise _config_error(str(key))
        return cls()

    def install(self, agent: AgentLike) -> Callable[[], Awaitable[None]]:
        """Add the listener to `agent.hooks.on_request_error`; returns the async disposer.

        Disposal unregisters the listener, aborts active waits and then waits for every active
        invocation (including delegated downstream recovery) to settle.
        """
        installation = _Installation(self)
        installation.unregister = agent.hooks.on_request_error.add(installation.listener)
        self._installations.append(installation)

        async def dispose() -> None:
            if installation in self._installations:
                self._installations.remove(installation)
            await installation.dispose()

        return dispose

    async def aclose(self) -> None:
        """Dispose every installation of this plugin (see `install`)."""
        while self._installations:
            await self._installations.pop().dispose()

    def delay_ms(self, policy: RetryPolicy, retry: int, provider_delay: float | None) -> float:
        """The wait before retry `retry`: a usable provider delay within the cap exactly, else
        the jittered local backoff."""
        if provider_delay is not None and provider_delay <= policy.max_delay_ms:
            return provider_delay
        return backoff_delay_ms(policy, retry, sample=self._random)


class _Installation:
    """One installation: its lifetime token and the set of active listener invocations."""

    def __init__(self, plugin: RetryPlugin) -> None:
        self.plugin = plugin
        self.lifetime = asyncio.Event()
        self.disposed = False
        self.active: dict[asyncio.Future[None], asyncio.Task[object] | None] = {}
        self.unregister: Callable[[], None] = lambda: None

    def aborted(self, ctx: RequestErrorContext) -> bool:
        return ctx.signal.cancelled or self.lifetime.is_set()

    async def dispose(self) -> None:
        if not self.disposed:
            self.disposed = True
            self.unregister()
            self.lifetime.set()
        # An invocation of the task that disposes (a listener disposing the plugin) cannot be
        # awaited from inside itself; every other one is.
        current = asyncio.current_task()
        pending = [f for f, task in self.active.items() if not f.done() and task is not current]
        if pending:
            await asyncio.wait(pending)

    async def listener(self, ctx: RequestErrorContext, call_next: NextDecision) -> Decision:
        if self.disposed:
            return GiveUp()  # captured before disposal: do not enter downstream listeners (C20)
        settled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.active[settled] = asyncio.current_task()
        try:
            return await self._decide(ctx, call_next)
        finally:
            del self.active[settled]
            settled.set_result(None)

    async def _decide(  # noqa: RET503 - the policy union is closed (assert_never)
        self, ctx: RequestErrorContext, call_next: NextDecision
    ) -> Decision:
        policy = ctx.retry_policy
        if policy is None:
            return await call_next()  # no registration served the attempt (C11)
        if await fallback_decided(ctx.log, ctx.session_id, ctx.turn, ctx.step, ctx.attempt):
            return await call_next()  # a fallback already decided this attempt's next one
        provider_delay = provider_delay_ms(ctx.failure.provider_retry_after_ms)
        if isinstance(policy, NormalRetryPolicy):
            if ctx.failure.code not in policy.retryable_codes:
                return await call_next()
            if provider_delay is not None and provider_delay > policy.max_delay_ms:
                return await call_next()  # the provider asks for more than we wait (C14)
            key = ChainKey(ctx.turn, ctx.step, ctx.provider, policy_key(policy))
            previous, next_seq = await read_retry_chain(ctx.log, ctx.session_id, key, ctx.attempt)
            if previous is not None and previous.retry >= policy.max_retries:
                return await call_next()  # budget exhausted (C12)
            return await self._schedule(ctx, policy, key, previous, next_seq, provider_delay)
        if isinstance(policy, AlwaysRetryPolicy):
            return await self._always(ctx, policy, call_next, provider_delay)
        assert_never(policy, "retry policy")

    async def _always(
        self,
        ctx: RequestErrorContext,
        policy: AlwaysRetryPolicy,
        call_next: NextDecision,
        provider_delay: float | None,
    ) -> Decision:
        """Downstream first (C13): other recovery decides, then the unbounded fallback."""
        if self.aborted(ctx):
            return GiveUp()
        downstream: Retry | None = None
        try:
            downstream = await call_next()
        except Exception as exc:
            _LOGGER.warning(
                "%s: a downstream request-error listener failed (%s: %s); "
                "falling back to the always-mode retry",
                PLUGIN_NAME,
                type(exc).__name__,
                exc,
            )
        if self.aborted(ctx):
            return GiveUp()
        if isinstance(downstream, Retry):
            return downstream
        if provider_delay is not None and provider_delay > policy.max_delay_ms:
            provider_delay = None  # always mode ignores an over-cap Retry-After
        key = ChainKey(ctx.turn, ctx.step, ctx.provider, policy_key(policy))
        previous, next_seq = await read_retry_chain(ctx.log, ctx.session_id, key, ctx.attempt)
        return await self._schedule(ctx, policy, key, previous, next_seq, provider_delay)

    async def _schedule(
        self,
        ctx: RequestErrorContext,
        policy: RetryPolicy,
        key: ChainKey,
        previous: LlmRetry | None,
        next_seq: int,
        provider_delay: float | None,
    ) -> Retry | GiveUp:
        """Record `llm/retry` durably, wait cancellably, record `llm/retry-started` (C16).

        The record is appended only if the log still ends where the count was read (`next_seq`):
        two writers deciding from the same state cannot both spend one retry (`STALE_WRITE`)."""
        if self.aborted(ctx):
            return GiveUp()
        retry = 1 if previous is None else previous.retry + 1
        retry_id = str(uuid.uuid4()) if previous is None else previous.retry_id
        delay = self.plugin.delay_ms(policy, retry, provider_delay)
        record = LlmRetry(
            retry_id=retry_id,
            turn=ctx.turn,
            step=ctx.step,
            provider=ctx.provider,
            policy_key=key.policy_key,
            mode=policy.mode,
            failure=ctx.failure,
            retry=retry,
            max_retries=policy.max_retries if isinstance(policy, NormalRetryPolicy) else None,
            delay_ms=delay,
        )
        await ctx.log.append(ctx.session_id, record, barrier=True, expect_seq=next_seq)
        if self.aborted(ctx):
            return GiveUp()  # cancelled while the record was being written: no timer at all
        waited = await wait_cancellably(delay, ctx.signal, self.lifetime, sleep=self.plugin._sleep)
        if not waited or self.aborted(ctx):
            return GiveUp()
        await ctx.log.append(
            ctx.session_id,
            LlmRetryStarted(retry_id=retry_id, turn=ctx.turn, step=ctx.step, retry=retry),
        )
        return Retry()
