"""Streaming and the terminal failure boundary: spec §11.12 SVC-09..23 (R-SVC-STREAM, R-BND)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
from runtime_helpers import SCRIPT, ScriptedAdapter, ThrowingAdapter, collect, opts

from modelwire.errors import LlmError
from modelwire.policy import AlwaysRetryPolicy, NormalRetryPolicy, RetryPolicy
from modelwire.runtime import CallNext, LlmAdapter, LlmRuntime
from modelwire.vocab import (
    BlockStart,
    CallConfig,
    Error,
    Finish,
    GenerateOptions,
    LlmFailure,
    StreamChunk,
    TextDelta,
    user_message,
)


async def test_svc_09_stream_yields_exactly_the_adapter_script(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter())
    chunks = await collect(rt.stream(opts()))
    assert chunks == list(SCRIPT)
    assert all(a is b for a, b in zip(chunks, SCRIPT, strict=True))


async def test_svc_10_direct_call_passes_the_same_request_and_message_objects(
    rt: LlmRuntime,
) -> None:
    adapter = ScriptedAdapter()
    rt.register_adapter(["p"], adapter)
    message = user_message("hello")
    options = opts(messages=[message])
    await collect(rt.stream(options))
    assert adapter.received is options
    assert adapter.received.messages[0] is message


async def test_svc_11_provider_retry_policy_is_the_registered_object(rt: LlmRuntime) -> None:
    always = AlwaysRetryPolicy()

    class PerRoute(ScriptedAdapter):
        def provider_retry_policy(self, provider: str) -> RetryPolicy | None:
            return always if provider == "configured" else None

    rt.register_adapter(["configured", "defaulted"], PerRoute())
    assert rt.provider_retry_policy("configured") is always
    defaulted = rt.provider_retry_policy("defaulted")
    # DESIGN §7: the seeds decide 2 default retries (upstream: 5).
    assert isinstance(defaulted, NormalRetryPolicy) and defaulted.max_retries == 2
    with pytest.raises(LlmError) as caught:
        rt.provider_retry_policy("missing")
    assert caught.value.code == "NO_ADAPTER"


async def test_svc_12_prepared_call_keeps_the_old_adapter_and_policy(rt: LlmRuntime) -> None:
    old_policy = AlwaysRetryPolicy()
    new_policy = NormalRetryPolicy(max_retries=0)
    reg = rt.register_adapter(
        ["route"], ThrowingAdapter(LlmError("old route failed", "AUTH"), policy=old_policy)
    )
    prepared = await rt.prepare_call(CallConfig(provider="route", model="m"))
    reg()
    rt.register_adapter(["route"], ScriptedAdapter(policy=new_policy))
    chunks = await collect(prepared.stream(opts("route")))
    assert chunks == [Finish(Error(LlmFailure("old route failed", "AUTH")))]
    assert prepared.retry_policy is old_policy
    assert rt.provider_retry_policy("route") is new_policy


async def test_svc_13_unregistered_provider_ends_in_no_adapter_finish(rt: LlmRuntime) -> None:
    chunks = await collect(rt.stream(opts("nowhere")))
    assert len(chunks) == 1
    finish = chunks[0]
    assert isinstance(finish, Finish) and isinstance(finish.reason, Error)
    assert finish.reason.failure.code == "NO_ADAPTER"
    assert "no adapter registered" in finish.reason.failure.message
    assert finish.replay_state is None


class _FailingIterator:
    """An adapter iterator whose `__anext__` raises; records any look-up of `aclose`."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.aclose_looked_up = 0

    def __aiter__(self) -> _FailingIterator:
        return self

    async def __anext__(self) -> StreamChunk:
        raise self.error

    def __getattr__(self, name: str) -> Any:
        if name == "aclose":
            self.aclose_looked_up += 1
        raise AttributeError(name)


class _IteratorAdapter(LlmAdapter):
    def __init__(self, iterator: Any) -> None:
        self.iterator = iterator

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        return self.iterator  # type: ignore[no-any-return]


@pytest.mark.parametrize("field", ["done", "value"])
async def test_svc_14_15_iteration_failure_is_terminal_and_close_is_not_consulted(
    rt: LlmRuntime, field: str
) -> None:
    """JS `IteratorResult` getters have no Python twin: their failure is `__anext__` raising."""
    iterator = _FailingIterator(LlmError(f"{field} getter failed", "RESULT_GETTER_FAILED"))
    rt.register_adapter(["p"], _IteratorAdapter(iterator))
    chunks = await collect(rt.stream(opts()))
    assert chunks == [Finish(Error(LlmFailure(f"{field} getter failed", "RESULT_GETTER_FAILED")))]
    assert iterator.aclose_looked_up == 0


class _AiterRaises:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __aiter__(self) -> AsyncIterator[StreamChunk]:
        raise self.error


@pytest.mark.parametrize("site", ["dispatch", "iterator"])
async def test_svc_16_17_dispatch_and_iterator_construction_failures_are_terminal(
    rt: LlmRuntime, site: str
) -> None:
    error = LlmError(f"{site} failed", "BOUNDARY_FAILED")
    adapter = (
        ThrowingAdapter(error) if site == "dispatch" else _IteratorAdapter(_AiterRaises(error))
    )
    rt.register_adapter(["p"], adapter)
    assert await collect(rt.stream(opts())) == [
        Finish(Error(LlmFailure(f"{site} failed", "BOUNDARY_FAILED")))
    ]


async def test_svc_18_thrown_llm_error_keeps_all_five_facts(rt: LlmRuntime) -> None:
    error = LlmError(
        "provider busy", "RATE_LIMIT", status=429, provider_retry_after_ms=1500, request_id="req-7"
    )
    rt.register_adapter(["p"], ThrowingAdapter(error))
    assert await collect(rt.stream(opts())) == [
        Finish(
            Error(
                LlmFailure(
                    "provider busy",
                    "RATE_LIMIT",
                    status=429,
                    provider_retry_after_ms=1500,
                    request_id="req-7",
                )
            )
        )
    ]


async def test_svc_19_plain_exception_from_next_is_unknown(rt: LlmRuntime) -> None:
    """Python can only raise exceptions: the JS bare-string rejection maps to a plain Exception."""
    rt.register_adapter(
        ["p"], _IteratorAdapter(_FailingIterator(Exception("plain provider failure")))
    )
    assert await collect(rt.stream(opts())) == [
        Finish(Error(LlmFailure("plain provider failure", "UNKNOWN")))
    ]


class _StoppingAdapter(LlmAdapter):
    """Yields one chunk, then waits; on cancellation it raises `Exception('stopped')`."""

    def __init__(self) -> None:
        self.waiting = asyncio.Event()

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        yield BlockStart(0, "text")
        self.waiting.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise Exception("stopped") from None
        yield TextDelta(0, "never")


async def test_svc_20_cancelled_consumer_gets_cancellation_not_a_chunk(rt: LlmRuntime) -> None:
    """AbortSignal → task cancellation: when the consuming task is being cancelled, the runtime
    re-raises `CancelledError` (chained from the adapter's error) instead of the aborted finish,
    so the caller's cancellation is never swallowed (see the `boundary` module docstring)."""
    adapter = _StoppingAdapter()
    rt.register_adapter(["p"], adapter)
    seen: list[StreamChunk] = []
    causes: list[BaseException | None] = []

    async def consume() -> None:
        try:
            async with rt.stream(opts()) as s:
                async for chunk in s:
                    seen.append(chunk)
        except asyncio.CancelledError as exc:
            causes.append(exc.__cause__)
            raise

    task = asyncio.create_task(consume())
    await adapter.waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [BlockStart(0, "text")]
    assert len(causes) == 1 and str(causes[0]) == "stopped"


async def test_svc_21_middleware_and_consumer_errors_stay_raised(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter())
    boom = RuntimeError("middleware failed")

    async def broken(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        raise boom
        yield  # pragma: no cover - makes this an async generator

    remove = rt.use(broken)
    with pytest.raises(RuntimeError) as caught:
        await collect(rt.stream(opts()))
    assert caught.value is boom
    remove()
    consumer_error = ValueError("consumer failed")
    with pytest.raises(ValueError) as caught_consumer:
        async with rt.stream(opts()) as s:
            async for _chunk in s:
                raise consumer_error
    assert caught_consumer.value is consumer_error


class _ForeverIterator:
    def __init__(self, close_error: BaseException | None) -> None:
        self.close_error = close_error
        self.closed = 0

    def __aiter__(self) -> _ForeverIterator:
        return self

    async def __anext__(self) -> StreamChunk:
        return TextDelta(0, "x")


class _ClosingForever(_ForeverIterator):
    async def aclose(self) -> None:
        self.closed += 1
        if self.close_error is not None:
            raise self.close_error


async def test_svc_22_cleanup_failure_on_early_exit_reaches_the_consumer(rt: LlmRuntime) -> None:
    cleanup = RuntimeError("cleanup failed")
    iterator = _ClosingForever(cleanup)
    rt.register_adapter(["p"], _IteratorAdapter(iterator))
    with pytest.raises(RuntimeError) as caught:
        async with rt.stream(opts()) as s:
            async for _chunk in s:
                break
    assert caught.value is cleanup
    assert iterator.closed == 1


async def test_svc_23_early_exit_without_close_hook_is_silent(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], _IteratorAdapter(_ForeverIterator(None)))
    async with rt.stream(opts()) as s:
        async for _chunk in s:
            break


# ---- not upstream: the Python cancellation and closing design (boundary docstring) ------------


async def test_bnd_05_aborted_code_selects_the_aborted_kind(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ThrowingAdapter(LlmError("caller went away", "ABORTED")))
    (finish,) = await collect(rt.stream(opts()))
    assert isinstance(finish, Finish) and finish.reason.kind == "aborted"
    assert msgspec.to_builtins(finish) == {
        "type": "finish",
        "reason": {
            "kind": "aborted",
            "failure": {"message": "caller went away", "code": "ABORTED"},
        },
    }


async def test_bnd_05_adapter_internal_cancellation_becomes_aborted_finish(rt: LlmRuntime) -> None:
    """A CancelledError the adapter raises while the consumer is not cancelled is normalized."""

    class InnerCancelled(LlmAdapter):
        async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
            inner = asyncio.get_running_loop().create_future()
            inner.cancel()
            await inner
            yield BlockStart(0, "text")  # pragma: no cover

    rt.register_adapter(["p"], InnerCancelled())
    (finish,) = await collect(rt.stream(opts()))
    assert isinstance(finish, Finish) and finish.reason.kind == "aborted"
    assert finish.reason.failure.code == "ABORTED"


async def test_bnd_05_cancelled_consumer_sees_the_original_cancelled_error(rt: LlmRuntime) -> None:
    class Waits(LlmAdapter):
        def __init__(self) -> None:
            self.started = asyncio.Event()
            self.finalized = False

        async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
            self.started.set()
            try:
                await asyncio.Event().wait()
            finally:
                self.finalized = True
            yield BlockStart(0, "text")  # pragma: no cover

    adapter = Waits()
    rt.register_adapter(["p"], adapter)
    task = asyncio.create_task(collect(rt.stream(opts())))
    await adapter.started.wait()
    task.cancel("user pressed stop")
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled() and adapter.finalized


async def test_bnd_timeout_around_a_stream_still_raises_timeout_error(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], _StoppingAdapter())
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await collect(rt.stream(opts()))


async def test_svc_stream_09_consumer_error_wins_over_cleanup_error(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], _IteratorAdapter(_ClosingForever(RuntimeError("cleanup failed"))))
    with pytest.raises(ValueError, match="consumer"):
        async with rt.stream(opts()) as s:
            async for _chunk in s:
                raise ValueError("consumer")


async def test_svc_stream_09_close_reaches_adapter_through_non_forwarding_middleware(
    rt: LlmRuntime,
) -> None:
    iterator = _ClosingForever(None)
    rt.register_adapter(["p"], _IteratorAdapter(iterator))

    async def passthrough(
        options: GenerateOptions, call_next: CallNext
    ) -> AsyncIterator[StreamChunk]:
        async for chunk in call_next():  # never forwards aclose itself
            yield chunk

    rt.use(passthrough)
    stream = rt.stream(opts())
    async for _chunk in stream:
        break
    await stream.aclose()
    assert iterator.closed == 1


async def test_svc_stream_09_close_is_not_called_after_exhaustion(rt: LlmRuntime) -> None:
    class Finite(_ClosingForever):
        def __init__(self) -> None:
            super().__init__(None)
            self.left = 1

        async def __anext__(self) -> StreamChunk:
            if not self.left:
                raise StopAsyncIteration
            self.left -= 1
            return TextDelta(0, "x")

    iterator = Finite()
    rt.register_adapter(["p"], _IteratorAdapter(iterator))
    assert await collect(rt.stream(opts())) == [TextDelta(0, "x")]
    assert iterator.closed == 0


async def test_svc_stream_02_short_circuit_never_looks_up_a_route(rt: LlmRuntime) -> None:
    async def own(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        for chunk in SCRIPT:
            yield chunk

    rt.use(own)
    assert await collect(rt.stream(opts("unregistered"))) == list(SCRIPT)
